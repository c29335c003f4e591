// The drain, the same in both modes. It starts at the first request (the
// termination signal, or in sidecar mode a prestop over the socket or HTTP);
// later requests join it, and all wait for the same end. It ends when every
// client that said hello has said drained (or disconnected), at the deadline
// announced to them, when cut short by a second signal, or (wrap mode) when the
// operator exits. A drain is for good: the operator stops taking work.

import type { Logger } from '../log/logger.ts';
import type { DrainServer } from '../protocol/server.ts';
import type { DrainOutcome, DrainSource } from './observer.ts';

export interface DrainResult {
  readonly outcome: DrainOutcome;
  readonly durationMs: number;
}

export interface DrainTicket {
  readonly startedAt: number;
  /** Epoch ms; the drain ends by then whatever the clients do. */
  readonly deadline: number;
  /** Operator clients connected when the drain started. */
  readonly clients: number;
  /** True when the drain was already under way (or over) when this request came. */
  readonly joined: boolean;
  readonly ended: Promise<DrainResult>;
}

export interface DrainOptions {
  readonly server: DrainServer;
  /** Read when the drain starts: the Pod's grace period may change it until then. */
  readonly timeoutMs: () => number;
  readonly logger: Logger;
  readonly now: () => number;
  /** Called right after the clients were told, before anything is logged. */
  readonly onStart: (source: DrainSource) => void;
  readonly onEnd: (result: DrainResult) => void;
  /** Ends the drain early (wrap mode: the operator exited by itself). */
  readonly childExited?: Promise<unknown>;
  /**
   * For an operator that speaks no protocol (no client said hello): resolves
   * once its metrics say no reconcile runs, or with 'deadline' at `deadline`.
   */
  readonly untilIdle?: (deadline: number, signal: AbortSignal) => Promise<'idle' | 'deadline' | 'aborted'>;
}

export class Drain {
  readonly #options: DrainOptions;
  #ticket?: DrainTicket;
  #cutShort = (): void => {};

  constructor(options: DrainOptions) {
    this.#options = options;
  }

  get started(): DrainTicket | undefined {
    return this.#ticket;
  }

  /** Starts the drain, or joins the one under way. */
  request(source: DrainSource): DrainTicket {
    if (this.#ticket) return { ...this.#ticket, joined: true };
    const { server, logger, now, onStart, onEnd, childExited } = this.#options;
    const timeoutMs = this.#options.timeoutMs();
    const startedAt = now();
    const deadline = startedAt + timeoutMs;
    const clients = server.clients().filter((c) => c.greeted).length;
    // The clients are told first, and the deadline is timed from the moment announced to them.
    const told = server.drain(deadline);
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<'deadline'>((r) => (timer = setTimeout(() => r('deadline'), deadline - now())));
    onStart(source);
    logger.info('drain started', { source, clients, timeoutMs, deadline: new Date(deadline).toISOString() });
    if (timeoutMs === 0 && clients > 0) {
      logger.warn('the drain timeout is 0: the grace period leaves no time to drain after the stop timeout and a 2s margin; raise terminationGracePeriodSeconds or DRAINGUARD_GRACE_PERIOD');
    }
    // No client to tell: where the operator's metrics are known, wait until no reconcile runs.
    const idle = clients === 0 ? this.#options.untilIdle : undefined;
    const stopIdle = new AbortController();
    const ended = Promise.race<DrainOutcome>([
      idle
        ? idle(deadline, stopIdle.signal).then(
            (r) => (r === 'idle' ? 'idle' : new Promise<never>(() => {})),
            () => new Promise<never>(() => {}),
          )
        : // An acknowledgement that comes at or after the deadline is an operator that gave up there.
          told.then((t) => (now() >= deadline && clients > 0 ? 'deadline' : clients === 0 && t.acknowledged === 0 ? 'no-client' : t.disconnected > 0 ? 'disconnected' : 'drained')),
      expired,
      new Promise<'cut-short'>((r) => (this.#cutShort = () => r('cut-short'))),
      ...(childExited ? [childExited.then(() => 'child-exited' as const)] : []),
    ]).then((outcome) => {
      clearTimeout(timer);
      stopIdle.abort();
      const result = { outcome, durationMs: now() - startedAt };
      (outcome === 'deadline' ? logger.warn : logger.info)('drain ended', {
        ...result,
        ...(outcome === 'deadline' && { waitingFor: server.clients().filter((c) => c.greeted && !c.drained).map((c) => c.name ?? c.id) }),
      });
      onEnd(result);
      return result;
    });
    this.#ticket = { startedAt, deadline, clients, joined: false, ended };
    return this.#ticket;
  }

  /** Ends a drain under way at once (a second termination signal). */
  cutShort(): void {
    this.#cutShort();
  }
}
