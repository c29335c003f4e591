// The sidecar's one drain. It starts at the first request (a prestop over the
// socket or HTTP, or the termination signal); later requests join it, and all
// wait for the same end. A drain is for good: the operator stops taking work.

import type { Logger } from '../log/logger.ts';
import type { DrainServer } from '../protocol/server.ts';
import type { DrainOutcome } from './observer.ts';
import type { DrainSource } from './observers.ts';

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
  /** Read when the drain starts: the Pod's grace period may change it until then. */
  readonly timeoutMs: () => number;
  readonly logger: Logger;
  readonly now: () => number;
  /** Called when the drain starts, before any client is told. */
  readonly onStart: (source: DrainSource) => void;
  readonly onEnd: (result: DrainResult) => void;
}

export class SidecarDrain {
  readonly #server: DrainServer;
  readonly #options: DrainOptions;
  #ticket?: DrainTicket;
  #cutShort = (): void => {};

  constructor(server: DrainServer, options: DrainOptions) {
    this.#server = server;
    this.#options = options;
  }

  get started(): DrainTicket | undefined {
    return this.#ticket;
  }

  request(source: DrainSource): DrainTicket {
    if (this.#ticket) return { ...this.#ticket, joined: true };
    const { logger, now, onStart, onEnd } = this.#options;
    const timeoutMs = this.#options.timeoutMs();
    const startedAt = now();
    const deadline = startedAt + timeoutMs;
    const clients = this.#server.clients().filter((c) => c.greeted).length;
    onStart(source);
    // The deadline is timed from the moment announced to the clients, before anything is logged.
    const told = this.#server.drain(deadline);
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<'deadline'>((r) => (timer = setTimeout(() => r('deadline'), deadline - now())));
    logger.info('drain started', { source, clients, timeoutMs, deadline: new Date(deadline).toISOString() });
    const ended = Promise.race<DrainOutcome>([
      // An acknowledgement that comes at or after the deadline is an operator that gave up there.
      told.then((t) => (now() >= deadline && clients > 0 ? 'deadline' : clients === 0 && t.acknowledged === 0 ? 'no-client' : t.disconnected > 0 ? 'disconnected' : 'drained')),
      expired,
      new Promise<'cut-short'>((r) => (this.#cutShort = () => r('cut-short'))),
    ]).then((outcome) => {
      clearTimeout(timer);
      const result = { outcome, durationMs: now() - startedAt };
      (outcome === 'deadline' ? logger.warn : logger.info)('drain ended', {
        ...result,
        ...(outcome === 'deadline' && { waitingFor: this.#server.clients().filter((c) => c.greeted && !c.drained).map((c) => c.name ?? c.id) }),
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
