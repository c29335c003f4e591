// A warning that a peer can cause at will (a refused connection, a refused
// preStop request) is logged at a bounded rate: a flood of refusals must not
// become a flood of log lines. The first is logged at once; later ones at most
// one line per interval, which counts the ones left out since the last line.

import { type Clock, systemClock } from '../clock.ts';
import type { LogFields, Logger } from '../log/logger.ts';

export const BOUNDED_LOG_INTERVAL_MS = 10_000;

export interface BoundedLogOptions {
  readonly intervalMs?: number;
  /** What the interval goes by; the wall clock by default. */
  readonly clock?: Pick<Clock, 'now'>;
}

/** A `logger.warn(msg, fields)` that writes at most one line per interval; `notLogged` on a line counts the ones left out before it. */
export function boundedWarn(
  logger: Logger,
  msg: string,
  { intervalMs = BOUNDED_LOG_INTERVAL_MS, clock = systemClock }: BoundedLogOptions = {},
): (fields: LogFields) => void {
  let last = -Infinity;
  let notLogged = 0;
  return (fields) => {
    const at = clock.now();
    if (at - last < intervalMs) {
      notLogged++;
      return;
    }
    last = at;
    logger.warn(msg, notLogged > 0 ? { ...fields, notLogged } : fields);
    notLogged = 0;
  };
}
