// Sidecar mode: drainguard runs beside the operator container and serves the
// drain socket on a volume both containers mount. The kubelet runs the
// operator's preStop hook (drainguard prestop) before it sends SIGTERM to the
// operator; that hook starts the drain here. The guard is released only once
// the operator has stopped.
//
//   running    serving the socket, holding the guard
//   draining   a prestop request or the termination signal: the clients are told (drain.ts)
//   stopping   waiting until the operator has stopped (its connections closed, and where
//              configured the API reports its container terminated), by the wait deadline
//   releasing  Events, then the guard, by the release deadline
//   exited     socket closed; exit 0
//
// Which termination order applies needs no setting: at SIGTERM, operator
// clients still connected mean a plain sidecar stopped together with the
// operator, and drainguard waits until they have all disconnected; none
// connected means a native sidecar (stopped after the main containers) or an
// operator already gone, and the release starts at once.

import { EventEmitter } from 'node:events';
import { ConfigError } from '../config/errors.ts';
import type { SupervisorConfig } from './config.ts';
import { type Logger, silentLogger } from '../log/logger.ts';
import { type ControlChannel, answerDrainRequest } from '../protocol/control.ts';
import { DrainServer } from '../protocol/server.ts';
import { claimSocketPath } from '../protocol/socket-path.ts';
import { Drain, type DrainOptions, type DrainTicket } from './drain.ts';
import type { DrainSource, GuardHandle, Phase, SupervisorObserver } from './observer.ts';
import { Deadlines, Termination } from './shutdown.ts';
import { FORWARDED, TERMINATING } from './signals.ts';
import { keepWarm } from './warm.ts';

export interface SidecarOptions {
  readonly logger?: Logger;
  readonly now?: () => number;
  readonly guard?: GuardHandle;
  readonly observer?: SupervisorObserver;
  /** Called once the drain server listens (for the HTTP listener's metrics). */
  readonly onServer?: (server: DrainServer) => void;
  /**
   * Resolves once the Kubernetes API reports the operator container terminated.
   * When given, the release waits for it as well as for the operator's
   * connections to close (an operator that never connected is then waited for too).
   */
  readonly operatorStopped?: (signal: AbortSignal) => Promise<void>;
  /** Called with the moment (epoch ms) by which Events still on their way must be written. */
  readonly flush?: (deadline: number) => Promise<void>;
  /** DRAINGUARD_IDLE_METRICS: the drain's wait when no client said hello. */
  readonly untilIdle?: DrainOptions['untilIdle'];
}

export class SidecarSupervisor {
  readonly #config: SupervisorConfig;
  readonly #options: SidecarOptions;
  readonly #log: Logger;
  readonly #now: () => number;
  readonly #server: DrainServer;
  readonly #drain: Drain;
  readonly #deadlines: Deadlines;
  readonly #termination: Termination;
  /** Fires whenever an operator client comes or goes. */
  readonly #clientsChanged = new EventEmitter();
  #phase: Phase = 'starting';

  constructor(config: SupervisorConfig, options: SidecarOptions = {}) {
    this.#config = config;
    this.#options = options;
    this.#log = options.logger ?? silentLogger;
    this.#now = options.now ?? Date.now;
    this.#deadlines = new Deadlines(config, this.#log);
    this.#termination = new Termination(this.#now);
    this.#server = new DrainServer({
      // Always set for sidecar: the options table's default is /run/drainguard/drain.sock.
      path: config.socket!,
      logger: this.#log,
      now: this.#now,
      onEvent: () => this.#clientsChanged.emit('change'),
      onDrainRequest: (request, channel) => this.#answerDrainRequest(request.source, channel),
    });
    this.#clientsChanged.setMaxListeners(0);
    this.#drain = new Drain({
      server: this.#server,
      timeoutMs: () => this.#deadlines.drainTimeoutMs(),
      logger: this.#log,
      now: this.#now,
      untilIdle: options.untilIdle,
      onStart: (source) => {
        this.#options.observer?.drainRequested?.(source);
        this.#setPhase('draining');
      },
      onEnd: (r) => this.#options.observer?.drainEnded?.(r.outcome, r.durationMs),
    });
    void this.#termination.cutShort.then(() => this.#drain.cutShort());
  }

  /** The way from the termination signal to `drain`, on a throwaway supervisor (its server never listens, nothing is logged; warm.ts says why and when). */
  #rehearse(): void {
    new SidecarSupervisor(this.#config).#onSignal('SIGTERM');
  }

  /** Starts the drain, or joins the one under way; for the prestop routes. `announce` as in Drain.request. */
  requestDrain(source: DrainSource, announce?: () => void): DrainTicket {
    // The clients are told first (the first request is reported from onStart, after them): the
    // observers (metrics, Events) are not theirs to wait for.
    const ticket = this.#drain.request(source, announce);
    if (ticket.joined) this.#options.observer?.drainRequested?.(source);
    return ticket;
  }

  /** The Pod's terminationGracePeriodSeconds, once the API told it. */
  adoptPodGracePeriod(ms: number): void {
    this.#deadlines.adoptPodGracePeriod(ms);
  }

  /** Serves until terminated, then releases the guard once the operator has stopped; resolves with the exit status. */
  async run(): Promise<number> {
    const onSignal = (sig: NodeJS.Signals) => this.#onSignal(sig);
    // No child to pass them to; caught all the same, so that a stray SIGHUP or SIGUSR1 (a closed
    // terminal, a shared process namespace) cannot end the sidecar before it released the guard.
    const onOther = (sig: NodeJS.Signals) => this.#log.debug('signal ignored: a sidecar has no child to pass it to', { signal: sig });
    for (const sig of TERMINATING) process.on(sig, onSignal);
    for (const sig of FORWARDED) process.on(sig, onOther);
    let guarding = false;
    try {
      await claimSocketPath(this.#server.path, 'DRAINGUARD_SOCKET');
      await this.#listen();
      this.#options.onServer?.(this.#server);
      if (this.#termination.count === 0) {
        if (this.#phase === 'starting') this.#setPhase('running');
        this.#log.info('sidecar ready', { socket: this.#server.path, drainTimeoutMs: this.#deadlines.drainTimeoutMs() });
        this.#options.guard?.start();
        guarding = true;
        const cool = keepWarm(() => this.#phase === 'running' && this.#rehearse());
        await this.#termination.requested.finally(cool);
      }
      const signalAt = this.#termination.at!;
      const terminatedAt = this.#deadlines.terminationStart(signalAt, this.#drain.started?.startedAt);
      // Started by the signal handler already.
      const ticket = this.#drain.started!;
      await this.#waitForOperator(ticket, this.#deadlines.operatorWaitDeadline(terminatedAt, this.#now()));
      if (guarding) await this.#release(terminatedAt);
      else await this.#options.flush?.(this.#deadlines.eventFlushDeadline(this.#now(), terminatedAt));
      this.#log.info('sidecar stopped', { afterSignalMs: this.#now() - signalAt });
      return 0;
    } finally {
      // Whoever asked for the drain hears how it ended before the socket closes.
      const drain = this.#drain.started;
      if (drain) {
        this.#drain.cutShort();
        await drain.ended;
        await new Promise(setImmediate);
      }
      await this.#server.close();
      // Only now: a late SIGTERM must not end the sidecar before its socket is gone.
      for (const sig of TERMINATING) process.off(sig, onSignal);
      for (const sig of FORWARDED) process.off(sig, onOther);
      this.#setPhase('exited');
    }
  }

  async #listen(): Promise<void> {
    try {
      await this.#server.listen();
    } catch (err) {
      const e = err as NodeJS.ErrnoException;
      throw new ConfigError('DG_SOCKET_LISTEN', `DRAINGUARD_SOCKET: cannot listen on ${this.#server.path}: ${e.code ?? e.message}${e.code === 'EACCES' ? ' (directory not writable)' : ''}`, { cause: err });
    }
  }

  #answerDrainRequest(source: string | undefined, channel: ControlChannel): void {
    this.#log.hold(() => {
      const ticket = this.requestDrain('socket', () => this.#log.info('drain requested', { via: 'socket', by: source }));
      answerDrainRequest(channel, ticket, this.#now());
    });
  }

  /** stopping: waits until the operator has stopped, the wait deadline, or a second signal says stop waiting. */
  async #waitForOperator(ticket: DrainTicket, waitDeadline: number): Promise<void> {
    const stop = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<'deadline'>((r) => (timer = setTimeout(() => r('deadline'), waitDeadline - this.#now())));
    const cutShort = this.#termination.cutShort.then(() => 'cut-short' as const);
    const gone = this.#operatorGone(stop.signal).then(() => 'stopped' as const);
    try {
      // While the drain runs, the operator is still at work: phase draining.
      await Promise.race([ticket.ended, gone, deadline, cutShort]);
      this.#setPhase('stopping');
      const connected = this.#operators();
      const waiting = connected > 0 || this.#options.operatorStopped !== undefined;
      if (waiting) this.#log.info('waiting for the operator to stop', { clients: connected, timeoutMs: Math.max(0, waitDeadline - this.#now()) });
      else this.#log.info('no operator client connected: releasing at once');
      const how = await Promise.race([gone, deadline, cutShort]);
      if (how === 'stopped' && waiting) this.#log.info('operator stopped', { afterSignalMs: this.#now() - this.#termination.at! });
      else if (how === 'deadline') this.#log.warn('the operator has not stopped and the grace period is running out: releasing anyway', { clients: this.#operators() });
      else this.#log.info('second termination signal: releasing now', { clients: this.#operators() });
    } finally {
      clearTimeout(timer);
      stop.abort();
    }
  }

  /** releasing: Events first, while the guard still keeps the RBAC (and the token) that writes them. */
  async #release(terminatedAt: number): Promise<void> {
    const deadline = this.#deadlines.releaseDeadline(terminatedAt);
    await this.#options.flush?.(this.#deadlines.eventFlushDeadline(this.#now(), terminatedAt));
    this.#setPhase('releasing');
    if (!this.#options.guard) return;
    this.#log.info('releasing the guard', { deadline: new Date(deadline).toISOString() });
    await this.#options.guard.release(deadline);
    // A GuardReleaseFailed Event, within what is left of the deadline.
    await this.#options.flush?.(this.#deadlines.eventFlushDeadline(this.#now(), terminatedAt));
  }

  /** Resolves once no operator client is connected and, where the API hook is given, the operator container has terminated. */
  #operatorGone(signal: AbortSignal): Promise<unknown> {
    const disconnected = new Promise<void>((resolve) => {
      const check = () => {
        if (this.#operators() > 0) return;
        this.#clientsChanged.off('change', check);
        resolve();
      };
      this.#clientsChanged.on('change', check);
      signal.addEventListener('abort', () => this.#clientsChanged.off('change', check), { once: true });
      check();
    });
    const api = this.#options.operatorStopped?.(signal).catch((err: unknown) => {
      if (!signal.aborted) this.#log.warn('cannot tell from the Kubernetes API whether the operator stopped; going by its connections', { error: err });
    });
    return Promise.all([disconnected, api]);
  }

  #operators(): number {
    return this.#server.greetedCount();
  }

  #onSignal(sig: NodeJS.Signals): void {
    this.#log.hold(() => this.#onTermination(sig));
  }

  /** In the signal's own turn: the clients hear `drain` before anything is logged. */
  #onTermination(sig: NodeJS.Signals): void {
    const step = this.#termination.signal();
    if (step === 'drain') {
      this.requestDrain('signal', () => {
        const grace = this.#deadlines.gracePeriod;
        this.#log.info('termination requested', { signal: sig, clients: this.#operators(), gracePeriodMs: grace.ms, gracePeriodFrom: grace.from });
      });
    } else if (step === 'cut-short') {
      this.#log.info('second termination signal: cutting the drain and the wait short', { signal: sig });
    } else {
      this.#log.debug('termination signal ignored, the release is under way', { signal: sig });
    }
  }

  #setPhase(phase: Phase): void {
    if (this.#phase === phase) return;
    this.#phase = phase;
    this.#options.observer?.phase?.(phase);
  }
}
