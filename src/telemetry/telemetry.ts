// The HTTP listener with its routes: /healthz, /readyz, /metrics, and in
// sidecar mode the token-guarded /prestop. Loaded only when the listener is on.

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { PrestopToken } from '../config/prestop-token.ts';
import type { Logger } from '../log/logger.ts';
import { createMetrics } from './metrics.ts';
import { type SupervisorObserver, combineObservers } from '../supervisor/observer.ts';
import type { GuardReport } from '../guard/guard.ts';
import type { ClientInfo, DrainServer } from '../protocol/server.ts';
import type { DrainTicket } from '../supervisor/drain.ts';
import { Health } from './health.ts';
import { type HttpAddr, listenHttp } from './listener.ts';
import { PRESTOP_PATH, prestopRoute } from './prestop-route.ts';

export interface TelemetryOptions {
  readonly addr: HttpAddr;
  readonly logger: Logger;
  readonly guard?: () => GuardReport;
  /** Sidecar mode with a token: the httpGet preStop route. */
  readonly prestop?: { readonly token: PrestopToken; readonly startDrain: () => DrainTicket };
}

export interface Telemetry {
  readonly address: string;
  /** Report phases and drains here (readiness and metrics follow them). */
  readonly observer: SupervisorObserver;
  /** The drain server whose clients /metrics counts. */
  attach(server: DrainServer): void;
  close(): Promise<void>;
}

export async function startTelemetry({ addr, logger, guard, prestop }: TelemetryOptions): Promise<Telemetry> {
  let server: DrainServer | undefined;
  const clients = (): readonly ClientInfo[] => server?.clients() ?? [];
  const health = new Health(guard);
  const metrics = createMetrics({ clients, guard });
  const prestopHandler = prestop && prestopRoute({ ...prestop, logger, refused: metrics.prestopRefused });

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = (req.url ?? '/').split('?')[0];
    const read = req.method === 'GET' || req.method === 'HEAD';
    if (path === PRESTOP_PATH && prestopHandler) {
      if (req.method !== 'GET' && req.method !== 'POST') return text(res, 405, 'method not allowed\n', { Allow: 'GET, POST' });
      req.resume();
      return prestopHandler(req, res);
    }
    if (path !== '/healthz' && path !== '/readyz' && path !== '/metrics') return text(res, 404, 'not found\n');
    if (!read) return text(res, 405, 'method not allowed\n', { Allow: 'GET, HEAD' });
    if (path === '/healthz') return text(res, 200, 'ok\n');
    if (path === '/readyz') {
      const { ready, reason } = health.readiness();
      return text(res, ready ? 200 : 503, `${reason}\n`);
    }
    return text(res, 200, await metrics.text(), { 'Content-Type': metrics.contentType });
  };

  const listener = await listenHttp(addr, (req, res) => {
    handle(req, res).catch((err: unknown) => {
      logger.error('HTTP request failed', { path: req.url, error: err });
      if (!res.headersSent) text(res, 500, 'internal error\n');
      else res.destroy();
    });
  });
  logger.info('http listener started', { address: listener.address, prestopRoute: prestopHandler !== undefined });

  return {
    address: listener.address,
    observer: combineObservers(health, metrics.observer),
    attach: (s) => {
      server = s;
    },
    close: () => listener.close(),
  };
}

function text(res: ServerResponse, status: number, body: string, headers: Record<string, string> = {}): void {
  if (res.writableEnded || res.destroyed) return;
  res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', 'Cache-Control': 'no-store', ...headers });
  res.end(body);
}
