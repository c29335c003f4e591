// POST or GET /prestop, for an httpGet preStop hook: with the right token it
// starts the drain (or joins the one under way) and answers once it has
// ended. Without the token nothing happens: 401 when none was sent, 403 when
// it was wrong.

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '../log/logger.ts';
import type { PrestopRefusal } from './metrics.ts';
import type { DrainTicket } from '../supervisor/drain.ts';
import { TOKEN_HEADER, tokenCheck } from './prestop-token.ts';

export const PRESTOP_PATH = '/prestop';

export interface PrestopRouteOptions {
  readonly token: string;
  readonly startDrain: () => DrainTicket;
  readonly logger: Logger;
  readonly refused?: (reason: PrestopRefusal) => void;
}

export function prestopRoute({ token, startDrain, logger, refused }: PrestopRouteOptions) {
  const check = tokenCheck(token);
  const header = TOKEN_HEADER.toLowerCase();
  return async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const presented = req.headers[header];
    const peer = req.socket.remoteAddress;
    if (presented === undefined || presented === '') {
      refused?.('missing-token');
      logger.warn('preStop request without a token refused', { peer });
      return reply(res, 401, { error: `missing ${TOKEN_HEADER} header` }, { 'WWW-Authenticate': `${TOKEN_HEADER}` });
    }
    // A repeated header arrives joined with ", ": it is not the token either.
    if (!check(Array.isArray(presented) ? presented.join(', ') : presented)) {
      refused?.('wrong-token');
      logger.warn('preStop request with a wrong token refused', { peer });
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
