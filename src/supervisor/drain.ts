// The drain, the same in both modes. It starts at the first request (the
// termination signal, or in sidecar mode a prestop over the socket or HTTP);
// later requests join it, and all wait for the same end. It ends when every
// client that said hello has said drained (or disconnected), at the deadline
// announced to them, when cut short by a second signal, or (wrap mode) when the
// operator exits. A drain is for good: the operator stops taking work. The
// socket's server tells the clients and hands back their answers; what they
// add up to is decided here.

import type { Clock } from '../clock.ts';
import { formatDuration } from '../config/duration.ts';
import { GRACE_MARGIN_MS } from '../config/grace-rule.ts';
import type { Logger } from '../log/logger.ts';
import type { IdleWait } from '../idle/until-idle.ts';
import type { DrainServer } from '../protocol/server.ts';
import type { DrainOutcome, DrainSource } from './observer.ts';

/** Told when a drain with clients starts with no time at all. */
const NO_TIME_TO_DRAIN =
  "the drain timeout is 0: the time left before the kubelet's SIGKILL leaves none to drain " +
  `after the stop timeout and a ${formatDuration(GRACE_MARGIN_MS)} margin; ` +
  'raise terminationGracePeriodSeconds or DRAINGUARD_GRACE_PERIOD, or delete the pod with a longer grace period';

export interface DrainResult {
  readonly outcome: DrainOutcome;
  readonly durationMs: number;
}

export interface DrainTicket {
  readonly startedAt: number;
  /** Epoch ms, as announced to the clients; the drain ends by then whatever the clients do (earlier, when the Pod's deletion moves). */
  readonly deadline: number;
  /** Operator clients connected when the drain started. */
  readonly clients: number;
  /** True when the drain was already under way (or over) when this request came. */
  readonly joined: boolean;
  readonly ended: Promise<DrainResult>;
}

export interface DrainOptions {
  readonly server: DrainServer;
  /** The moment the drain ends whatever the clients do (Deadlines'): read when it starts, and again at reschedule(). */
  readonly deadline: () => number;
  /**
   * Where the drain timeout is counted from (the termination's start, which the read of the Pod may precede
   * by a moment); the drain's start by default.
   */
  readonly countedFrom?: () => number;
  readonly logger: Logger;
  readonly clock: Clock;
  /** Ends the drain early (wrap mode: the operator exited). */
  readonly operatorGone?: Promise<unknown>;
  /** For an operator that speaks no protocol (no client said hello). */
  readonly untilIdle?: IdleWait;
}

export class Drain {
  readonly #options: DrainOptions;
  #ticket?: DrainTicket;
  #end = (_outcome: DrainOutcome): void => {};
  #reschedule = (): void => {};
  /** Cut short before it started (a second signal while the Pod's deletion was read): it ends as it starts. */
  #cut = false;
  #over = false;

  constructor(options: DrainOptions) {
    this.#options = options;
  }

  get started(): DrainTicket | undefined {
    return this.#ticket;
  }

  /** Started and not ended yet. */
  get running(): boolean {
    return this.#ticket !== undefined && !this.#over;
  }

  /**
   * Starts the drain, or joins the one under way. `announce` logs what asked
   * for the drain: once the clients are told, before the drain's own lines.
   */
  request(source: DrainSource, announce?: () => void): DrainTicket {
    if (this.#ticket) {
      announce?.();
      return { ...this.#ticket, joined: true };
    }
    return this.#start(source, announce);
  }

  /** Ends a drain under way at once (a second termination signal). */
  cutShort(): void {
    this.#cut = true;
    this.#end('cut-short');
  }

  /** Reads the deadline again: a drain under way ends sooner when it moved earlier (never later: the clients were told). */
  reschedule(): void {
    this.#reschedule();
  }

  #start(source: DrainSource, announce: (() => void) | undefined): DrainTicket {
    const { server, logger, clock, operatorGone } = this.#options;
    const now = () => clock.now();
    const startedAt = now();
    let deadline = Math.max(startedAt, this.#options.deadline());
    const timeoutMs = deadline - Math.min(startedAt, this.#options.countedFrom?.() ?? startedAt);
    // The clients first (a client that greets later is told the deadline as it is then); each answer is counted here.
    let acknowledged = 0;
    let gone = 0;
    let answered = (_undrained: number): void => {};
    const clients = server.tellDrain({
      deadline: () => deadline,
      onAnswer: (answer, client, undrained) => {
        if (answer === 'gone') gone++;
        else {
          acknowledged++;
          logger.info('client drained', { client: client.id, name: client.name, afterMs: now() - startedAt });
        }
        answered(undrained);
      },
    });
    announce?.();
    // An acknowledgement that comes at or after the deadline is an operator that gave up there.
    const outcome = (): DrainOutcome =>
      now() >= deadline && clients > 0
        ? 'deadline'
        : clients === 0 && acknowledged === 0
          ? 'no-client'
          : gone > 0
            ? 'disconnected'
            : 'drained';
    // No client to tell: where the operator's metrics are known, wait until no reconcile runs.
    const idle = clients === 0 ? this.#options.untilIdle : undefined;
    let stopIdle: AbortController | undefined;
    let resolve!: (result: DrainResult) => void;
    const ended = new Promise<DrainResult>((r) => (resolve = r));
    this.#end = (outcome) => {
      if (this.#over) return;
      this.#over = true;
      cancelDeadline();
      stopIdle?.abort();
      const result = { outcome, durationMs: now() - startedAt };
      (outcome === 'deadline' ? logger.warn : logger.info)('drain ended', {
        ...result,
        ...(outcome === 'deadline' && {
          waitingFor: server
            .clients()
            .filter((c) => c.greeted && !c.drained)
            .map((c) => c.name ?? c.id),
        }),
        ...idle?.summary(),
      });
      resolve(result);
    };
    let cancelDeadline = clock.after(deadline - now(), () => this.#end('deadline'));
    this.#reschedule = () => {
      const moved = Math.max(now(), this.#options.deadline());
      if (this.#over || moved >= deadline) return;
      logger.warn('drain deadline moved earlier', { deadline: new Date(moved).toISOString(), was: new Date(deadline).toISOString() });
      deadline = moved;
      cancelDeadline();
      cancelDeadline = clock.after(deadline - now(), () => this.#end('deadline'));
    };
    logger.info('drain started', { source, clients, timeoutMs, deadline: new Date(deadline).toISOString() });
    if (timeoutMs === 0 && clients > 0) {
      logger.warn(NO_TIME_TO_DRAIN);
    }
    if (idle) {
      stopIdle = new AbortController();
      void idle.wait(deadline, stopIdle.signal).then(
        (r) => r === 'idle' && this.#end('idle'),
        () => {},
      );
    }
    void operatorGone?.then(() => this.#end('child-exited'));
    this.#ticket = { startedAt, deadline, clients, joined: false, ended };
    if (this.#cut) this.#end('cut-short');
    // Last: the drain ends in the same turn as the last answer (with idle metrics, the wait decides), here and now with none to wait for.
    if (!idle) {
      answered = (undrained) => undrained === 0 && this.#end(outcome());
      answered(server.undrained());
    }
    return this.#ticket;
  }
}
