// POST or GET /prestop, for an httpGet preStop hook: with the right token it
// starts the drain (or joins the one under way) and answers once it has
// ended. Without the token nothing happens: 401 when none was sent, 403 when
// it was wrong. Anyone who reaches the pod IP can cause a refusal: they are
// logged at a bounded rate.

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { PrestopToken } from '../config/prestop-token.ts';
import type { Logger } from '../log/logger.ts';
import { boundedWarn } from '../protocol/bounded-log.ts';
import type { PrestopRefusal } from './metrics.ts';
import type { DrainTicket } from '../supervisor/drain.ts';
import { TOKEN_HEADER, tokenCheck } from './prestop-token.ts';

export const PRESTOP_PATH = '/prestop';

export interface PrestopRouteOptions {
  readonly token: PrestopToken;
  readonly startDrain: () => DrainTicket;
  readonly logger: Logger;
  readonly refused?: (reason: PrestopRefusal) => void;
}

export function prestopRoute({ token, startDrain, logger, refused }: PrestopRouteOptions) {
  if (token.deprecation) logger.warn(token.deprecation);
  const warnToken = boundedWarn(logger, 'preStop token file not taken');
  const check = tokenCheck(() => {
    const { token: current, problem } = token.current();
    if (problem) warnToken({ problem });
    return current;
  });
  const header = TOKEN_HEADER.toLowerCase();
  const warnMissing = boundedWarn(logger, 'preStop request without a token refused');
  const warnWrong = boundedWarn(logger, 'preStop request with a wrong token refused');
  return async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const presented = req.headers[header];
    const peer = req.socket.remoteAddress;
    if (presented === undefined || presented === '') {
      refused?.('missing-token');
      warnMissing({ peer });
      return reply(res, 401, { error: `missing ${TOKEN_HEADER} header` }, { 'WWW-Authenticate': `${TOKEN_HEADER}` });
    }
    // A repeated header arrives joined with ", ": it is not the token either.
    if (!check(Array.isArray(presented) ? presented.join(', ') : presented)) {
      refused?.('wrong-token');
      warnWrong({ peer });
      return reply(res, 403, { error: 'wrong token' });
    }
    const ticket = startDrain();
    const ended = await ticket.ended;
    reply(res, 200, { outcome: ended.outcome, durationMs: ended.durationMs, joined: ticket.joined });
  };
}

function reply(res: ServerResponse, status: number, body: object, headers: Record<string, string> = {}): void {
  if (res.writableEnded || res.destroyed) return;
  res.writeHead(status, { 'Content-Type': 'application/json', 'Cache-Control': 'no-store', ...headers });
  res.end(`${JSON.stringify(body)}\n`);
}
