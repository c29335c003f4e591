// Sidecar mode: drainguard runs beside the operator container and serves the
// drain socket on a volume both containers mount. The kubelet runs the
// operator's preStop hook (drainguard prestop) before it sends SIGTERM to the
// operator; that hook starts the drain here. The guard is released only once
// the operator has stopped.
//
// running → draining → stopping (waiting for the operator) → releasing → exited
//
// Which termination order applies needs no setting: at SIGTERM, operator
// clients still connected mean a plain sidecar stopped together with the
// operator, and drainguard waits until they have all disconnected; none
// connected means a native sidecar (stopped after the main containers) or an
// operator already gone, and the release starts at once.

import { EventEmitter } from 'node:events';
import { ConfigError } from '../config/errors.ts';
import { type SupervisorConfig, defaultDrainTimeout } from '../config/supervisor.ts';
import { type Logger, silentLogger } from '../log/logger.ts';
import type { DrainSource, DrainguardObserver } from './observers.ts';
import { type ControlChannel, DrainServer } from '../protocol/server.ts';
import { claimSocketPath } from '../protocol/socket-path.ts';
import type { GuardHandle, Phase } from './observer.ts';
import { FORWARDED, TERMINATING } from './signals.ts';
import { type DrainTicket, SidecarDrain } from './drain.ts';

export const DEFAULT_SIDECAR_SOCKET = '/run/drainguard/drain.sock';

export interface SidecarOptions {
  readonly logger?: Logger;
  readonly now?: () => number;
  readonly guard?: GuardHandle;
  readonly observer?: DrainguardObserver;
  /** Called once the drain server listens (for the HTTP listener's metrics). */
  readonly onServer?: (server: DrainServer) => void;
  /**
   * Resolves once the Kubernetes API reports the operator container terminated.
   * When given, the release waits for it as well as for the operator's
   * connections to close (an operator that never connected is then waited for too).
   */
  readonly operatorStopped?: (signal: AbortSignal) => Promise<void>;
  /** Called before the release, with the release deadline (epoch ms): for Events still on their way. */
  readonly flush?: (deadline: number) => Promise<void>;
}

/** Kept between the end of the release and the kubelet's SIGKILL. */
const RELEASE_MARGIN_MS = 1000;
/** Kept for the release itself out of the time spent waiting for the operator. */
const RELEASE_BUDGET_MS = 2000;

export class SidecarSupervisor {
  readonly #config: SupervisorConfig;
  readonly #options: SidecarOptions;
  readonly #log: Logger;
  readonly #now: () => number;
  readonly #server: DrainServer;
  readonly #drain: SidecarDrain;
  /** Fires whenever an operator client comes or goes. */
  readonly #clientsChanged = new EventEmitter();
  #phase: Phase = 'starting';
  #gracePeriodMs: number;
  #gracePeriodFrom: string;
  #drainTimeoutMs: number;
  #terminations = 0;
  #terminatedAt?: number;
  #onTerminate = (): void => {};
  #onCutShort = (): void => {};
  readonly #terminated = new Promise<void>((r) => (this.#onTerminate = r));
  readonly #cutShort = new Promise<void>((r) => (this.#onCutShort = r));

  constructor(config: SupervisorConfig, options: SidecarOptions = {}) {
    this.#config = config;
    this.#options = options;
    this.#log = options.logger ?? silentLogger;
    this.#now = options.now ?? Date.now;
    this.#gracePeriodMs = config.gracePeriodMs;
    this.#gracePeriodFrom = config.gracePeriodSource;
    this.#drainTimeoutMs = config.drainTimeoutMs;
    this.#server = new DrainServer({
      path: config.socket ?? DEFAULT_SIDECAR_SOCKET,
      logger: this.#log,
      now: this.#now,
      onEvent: () => this.#clientsChanged.emit('change'),
      onDrainRequest: (request, channel) => this.#answerDrainRequest(request.source, channel),
    });
    this.#clientsChanged.setMaxListeners(0);
    this.#drain = new SidecarDrain(this.#server, {
      timeoutMs: () => this.#drainTimeoutMs,
      logger: this.#log,
      now: this.#now,
      onStart: () => this.#setPhase('draining'),
      onEnd: (r) => this.#options.observer?.drainEnded?.(r.outcome, r.durationMs),
    });
  }

  /** Starts the drain, or joins the one under way; for the prestop routes. */
  requestDrain(source: DrainSource): DrainTicket {
    this.#options.observer?.drainRequested?.(source);
    return this.#drain.request(source);
  }

  /**
   * Takes the Pod's terminationGracePeriodSeconds (read from the API) in place of
   * DRAINGUARD_GRACE_PERIOD, with the drain timeout derived from it unless one
   * was given. A drain already under way keeps its deadline.
   */
  adoptGracePeriod(gracePeriodMs: number): void {
    const { stopTimeoutMs, drainTimeoutExplicit } = this.#config;
    this.#gracePeriodFrom = 'pod';
    this.#gracePeriodMs = gracePeriodMs;
    if (!drainTimeoutExplicit) this.#drainTimeoutMs = defaultDrainTimeout(gracePeriodMs, stopTimeoutMs);
    this.#log.info('grace period read from the Pod', { gracePeriodMs, drainTimeoutMs: this.#drainTimeoutMs, drainUnderWay: this.#drain.started !== undefined });
    if (this.#drainTimeoutMs + stopTimeoutMs > gracePeriodMs) {
      this.#log.warn("the drain timeout plus the stop timeout exceed the Pod's grace period: the kubelet may kill the operator before it stopped", {
        gracePeriodMs,
        drainTimeoutMs: this.#drainTimeoutMs,
        stopTimeoutMs,
      });
    }
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
      if (this.#terminations === 0) {
        if (this.#phase === 'starting') this.#setPhase('running');
        this.#log.info('sidecar ready', { socket: this.#server.path, drainTimeoutMs: this.#drainTimeoutMs });
        this.#options.guard?.start();
        guarding = true;
        await this.#terminated;
      }
      const { releaseDeadline, waitDeadline } = this.#deadlines();
      const ticket = this.requestDrain('signal');
      await this.#waitForOperator(ticket, waitDeadline);
      // Events first, while the guard still keeps the RBAC (and the token) that writes them.
      await this.#options.flush?.(releaseDeadline);
      if (guarding) {
        this.#setPhase('releasing');
        if (this.#options.guard) this.#log.info('releasing the guard', { deadline: new Date(releaseDeadline).toISOString() });
        await this.#options.guard?.release(releaseDeadline);
        // A GuardReleaseFailed Event, within what is left of the deadline.
        await this.#options.flush?.(releaseDeadline);
      }
      this.#log.info('sidecar stopped', { afterSignalMs: this.#now() - this.#terminatedAt! });
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
      throw new ConfigError(`DRAINGUARD_SOCKET: cannot listen on ${this.#server.path}: ${e.code ?? e.message}${e.code === 'EACCES' ? ' (directory not writable)' : ''}`);
    }
  }

  #answerDrainRequest(source: string | undefined, channel: ControlChannel): void {
    this.#log.info('drain requested', { via: 'socket', by: source });
    const ticket = this.requestDrain('socket');
    channel.send({
      type: 'drain-started',
      deadline: new Date(ticket.deadline).toISOString(),
      remainingMs: Math.max(0, Math.round(ticket.deadline - this.#now())),
      clients: ticket.clients,
      joined: ticket.joined,
    });
    void ticket.ended.then((r) => channel.end({ type: 'drain-ended', outcome: r.outcome, durationMs: r.durationMs }));
  }

  /**
   * The pod's grace period runs from the start of its termination: the prestop
   * request when one came shortly before the signal (a native sidecar gets its
   * SIGTERM only after the operator has stopped), the signal otherwise.
   */
  #deadlines(): { releaseDeadline: number; waitDeadline: number } {
    const signalAt = this.#terminatedAt!;
    const grace = this.#gracePeriodMs;
    const drainAt = this.#drain.started?.startedAt;
    const begin = drainAt !== undefined && drainAt <= signalAt && signalAt - drainAt < grace ? drainAt : signalAt;
    const releaseDeadline = begin + Math.max(0, grace - RELEASE_MARGIN_MS);
    const waitDeadline = Math.max(this.#now(), releaseDeadline - Math.min(RELEASE_BUDGET_MS, grace / 4));
    return { releaseDeadline, waitDeadline };
  }

  /** Waits until the operator has stopped, the release deadline is near, or a second signal says stop waiting. */
  async #waitForOperator(ticket: DrainTicket, waitDeadline: number): Promise<void> {
    const stop = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<'deadline'>((r) => (timer = setTimeout(() => r('deadline'), waitDeadline - this.#now())));
    const cutShort = this.#cutShort.then(() => 'cut-short' as const);
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
      if (how === 'stopped' && waiting) this.#log.info('operator stopped', { afterSignalMs: this.#now() - this.#terminatedAt! });
      else if (how === 'deadline') this.#log.warn('the operator has not stopped and the grace period is running out: releasing anyway', { clients: this.#operators() });
      else this.#log.info('second termination signal: releasing now', { clients: this.#operators() });
    } finally {
      clearTimeout(timer);
      stop.abort();
    }
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
    return this.#server.clients().filter((c) => c.greeted).length;
  }

  #onSignal(sig: NodeJS.Signals): void {
    this.#terminations++;
    if (this.#terminations === 1) {
      this.#terminatedAt = this.#now();
      this.#log.info('termination requested', { signal: sig, clients: this.#operators(), gracePeriodMs: this.#gracePeriodMs, gracePeriodFrom: this.#gracePeriodFrom });
      this.#onTerminate();
    } else if (this.#terminations === 2) {
      this.#log.info('second termination signal: cutting the drain and the wait short', { signal: sig });
      this.#drain.cutShort();
      this.#onCutShort();
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
