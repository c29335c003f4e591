// The stop, the same in both modes and in one fixed order, as
// controller-runtime's engageStopProcedure has it. A mode (wrap-mode.ts,
// sidecar-mode.ts) is start(context), which hands back the operator with its
// own stop(context), and a few facts as data. #supervise sets every phase up
// to releasing; run() sets exited once the socket is gone:
//
//   starting   the drain socket listens; the mode starts its operator
//   running    the operator works; the guard is held
//   draining   the first drain signal (SIGTERM, SIGINT, the container's stop signal) or a preStop request: the clients are told
//   stopping   the drain is over and the signal came: the mode stops the operator and waits until it is gone
//   releasing  Events, then the guard, by the release deadline
//   exited     the socket closed and removed
//
// Every drain request (the signal, the socket, HTTP) goes through
// #requestDrain. A second drain signal cuts the drain (and a sidecar's wait)
// short; later ones change nothing. Which signals drain is drain-signals.ts's.

import { EventEmitter } from 'node:events';
import { tmpdir } from 'node:os';
import { dirname } from 'node:path';
import { ConfigError } from '../errors.ts';
import { type Clock, systemClock, within } from '../clock.ts';
import type { ContainerStopSignal, PodDeletion } from '../kube/pod.ts';
import { type Logger, silentLogger } from '../log/logger.ts';
import { type ControlChannel, answerDrainRequest } from '../protocol/control.ts';
import { DrainServer } from '../protocol/server.ts';
import { claimSocketPath, privateSocketPath } from '../protocol/socket-path.ts';
import type { ChildExit } from './child.ts';
import type { SupervisorConfig } from '../config/supervisor.ts';
import { Drain, type DrainOptions, type DrainResult, type DrainTicket } from './drain.ts';
import type { DrainSource, GuardHandle, Phase, SupervisorObserver } from './observer.ts';
import { DeletionReader } from './deletion-reading.ts';
import { DELETION_READ_MS, Deadlines, Termination } from './shutdown.ts';
import { DrainSignals } from './drain-signals.ts';

/** The operator clients on the drain socket, as a mode sees them. */
export interface OperatorClients {
  /** How many have said hello and are still connected. */
  count(): number;
  /** Calls `onChange` at each hello, inflight, drained, disconnect and rejection of a client, until `signal` aborts. */
  watch(onChange: () => void, signal: AbortSignal): void;
}

/** What a mode's start is handed. */
export interface StartContext {
  readonly config: SupervisorConfig;
  readonly log: Logger;
  readonly clock: Clock;
  /** The drain socket's path: it listens by now. */
  readonly socketPath: string;
  /** The drain timeout in force at the start. */
  readonly drainTimeoutMs: number;
  readonly clients: OperatorClients;
}

/** What an operator's stop is handed: how the drain ended, and the moments the stop goes by (Deadlines'). */
export interface StopContext {
  readonly drain: DrainTicket;
  readonly result: DrainResult;
  /** When the first termination signal came (epoch ms). */
  readonly signalledAt: number;
  /** Resolves at a second termination signal. */
  readonly cutShort: Promise<void>;
  /** drainguard's SIGKILL of its operator, once the stop signal went out at `stopAt`. */
  killTime(stopAt: number): number;
  /** By when a sidecar stops waiting for its operator, leaving time for the release. */
  operatorWaitDeadline(): number;
}

/** A mode's operator, once started. */
export interface StartedOperator {
  /** Resolves once the operator has exited, with its status; never, where it is not drainguard's child. */
  readonly exited: Promise<ChildExit>;
  /** The drain is over: stops the operator and resolves with the exit status once it is gone, or no longer waited for. */
  stop(context: StopContext): Promise<number>;
}

/**
 * How a mode's operator is started and stopped: start takes what it needs, as
 * controller-runtime starts a runnable with a context, and hands back the
 * operator with its own stop; the rest is what the mode is, as plain data.
 */
export interface Mode {
  /** Signals besides the drain signals that the mode catches. */
  readonly otherSignals: readonly NodeJS.Signals[];
  /** Whether the other signals go to the operator (wrap mode), or are ignored: what a stop signal that is no drain signal does. */
  readonly passesSignalsOn: boolean;
  /** Whether the socket takes drain requests (`drainguard prestop`); elsewhere they are refused. */
  readonly takesDrainRequests: boolean;
  /**
   * The exit status when a termination signal came before the start: the
   * operator is then not started. Undefined: drain and stop as usual, only
   * without the guard.
   */
  readonly statusIfCalledOff?: number;
  /** Whether the first termination signal's line says how many operator clients are connected. */
  readonly countsClientsAtTermination: boolean;
  /** The line that ends the log once the guard is released, with the time since the termination signal. */
  readonly lastLine?: string;
  /** What it does with one of its other signals, at any moment from run() to the exit. */
  onOtherSignal(signal: NodeJS.Signals, log: Logger): void;
  /** Starts the operator (or, in sidecar mode, is ready for it): the socket listens by now. */
  start(context: StartContext): Promise<StartedOperator>;
}

export interface StopProcedureOptions {
  readonly logger?: Logger;
  readonly clock?: Clock;
  readonly guard?: GuardHandle;
  /** Waits for the Events still on their way, until the moment given (epoch ms). */
  readonly flushEvents?: (deadline: number) => Promise<void>;
  /** Asked once the operator runs: the Pod's terminationGracePeriodSeconds, in ms, when the API tells it. */
  readonly podGracePeriod?: () => Promise<number | undefined>;
  /** Asked once the operator runs: drainguard's container's stop signal as the Pod tells it (undefined: no API); aborted with the run. */
  readonly podStopSignal?: (signal: AbortSignal) => Promise<ContainerStopSignal | undefined>;
  /** Asked at the termination (signal, drain request, second signal): the Pod's deletion, within `timeoutMs`. */
  readonly podDeletion?: (timeoutMs: number) => Promise<PodDeletion>;
  /** DRAINGUARD_IDLE_METRICS: the drain's wait when no client said hello. */
  readonly untilIdle?: DrainOptions['untilIdle'];
  /** Gives up the operator's leader Lease once it has exited, by the deadline given (epoch ms); never throws. */
  readonly releaseLeader?: (deadline: number) => Promise<unknown>;
  /**
   * At the first termination signal, before the drain, the operator still running and the guard
   * held: runs by the deadline given (epoch ms; the drain keeps the rest of its time), and a second
   * signal aborts it. Never throws. (namespace/open.ts: a namespace being deleted.)
   */
  readonly beforeDrain?: (deadline: number, signal: AbortSignal) => Promise<unknown>;
}

/** What watches a run: handed to run(), so that it may be built on the procedure (the HTTP listener's preStop route). */
export interface RunWatchers {
  readonly observer?: SupervisorObserver;
  /** Called once the socket listens, with its server (the HTTP listener counts its clients). */
  readonly onServer?: (server: DrainServer) => void;
}

/**
 * Signals reach JavaScript through the event loop, not at once: a SIGTERM the
 * kernel has already delivered is handled only after a turn of the loop.
 * Two turns make sure one that came before the operator is started is seen.
 */
function signalsHandled(): Promise<void> {
  return new Promise((resolve) => setImmediate(() => setImmediate(resolve)));
}

export class StopProcedure {
  readonly #config: SupervisorConfig;
  readonly #mode: Mode;
  readonly #options: StopProcedureOptions;
  readonly #log: Logger;
  readonly #clock: Clock;
  readonly #deadlines: Deadlines;
  readonly #termination = new Termination();
  readonly #drainSignals: DrainSignals;
  /** Ends the read of the container's stop signal with the run. */
  readonly #runEnded = new AbortController();
  /** Adds a signal to those the run catches (the container's stop signal, read late); set by run(). */
  #catch = (_sig: NodeJS.Signals): void => {};
  readonly #deletion: DeletionReader;
  /** Fires at every event of a client on the socket (StartContext.clients.watch). */
  readonly #clientEvents = new EventEmitter().setMaxListeners(0);
  /** The operator's exit, once the mode has started it: it ends a drain (wrap mode). */
  readonly #operatorExit = deferred<ChildExit>();
  /** The first drain request's ticket, whoever asked. */
  readonly #drainBegun = deferred<DrainTicket>();
  #watchers: RunWatchers = {};
  #phase?: Phase;
  #server?: DrainServer;
  #drain?: Drain;
  /** The first termination signal's line, once it came. */
  #announce?: () => void;

  constructor(config: SupervisorConfig, mode: Mode, options: StopProcedureOptions = {}) {
    this.#config = config;
    this.#mode = mode;
    this.#options = options;
    this.#log = options.logger ?? silentLogger;
    this.#clock = options.clock ?? systemClock;
    this.#deadlines = new Deadlines(config, this.#log, this.#clock);
    this.#drainSignals = new DrainSignals(config.drainSignals, mode.passesSignalsOn ? 'wrap' : 'sidecar');
    this.#deletion = new DeletionReader({
      read: options.podDeletion,
      clock: this.#clock,
      adopt: (reading) => {
        const moved = this.#deadlines.adoptDeletion(reading);
        const cause = this.#deadlines.takeStopCause();
        if (cause) this.#watchers.observer?.stopCause?.(cause);
        return moved;
      },
      onMoved: () => this.#drain?.reschedule(),
    });
  }

  /**
   * A preStop request over HTTP: starts the drain, or joins the one under way,
   * at once, with the deadlines known; the Pod's deletion is read meanwhile and
   * ends the drain sooner if it says so.
   */
  startDrain(source: DrainSource): DrainTicket {
    const ticket = this.#requestDrain(source);
    void this.#deletion.read();
    return ticket;
  }

  /** Runs the mode's operator from start to exit; resolves with the status drainguard exits with. */
  async run(watchers: RunWatchers = {}): Promise<number> {
    this.#watchers = watchers;
    const mode = this.#mode;
    // Signals first: a SIGTERM between making the socket's private directory and catching it would leave the directory.
    const drainSignals = this.#drainSignals;
    const onSignal = (sig: NodeJS.Signals) => (drainSignals.has(sig) ? this.#onTermination(sig) : mode.onOtherSignal(sig, this.#log));
    const caught = [...new Set([...drainSignals.list, ...mode.otherSignals])];
    for (const sig of caught) process.on(sig, onSignal);
    this.#catch = (sig) => {
      if (caught.includes(sig)) return;
      caught.push(sig);
      process.on(sig, onSignal);
    };
    let ownDirectory: (() => void) | undefined;
    try {
      if (!this.#server && this.#config.socket === undefined) {
        const own = privateSocket();
        ownDirectory = own.cleanup;
        this.#serve(own.path);
      }
      const { server, drain } = this.#onSocket();
      try {
        return await this.#supervise(server, drain);
      } finally {
        // Whoever asked for the drain hears how it ended before the socket closes.
        const started = drain.started;
        if (started) {
          drain.cutShort();
          await started.ended;
          await new Promise(setImmediate);
        }
        await server.close();
      }
    } finally {
      this.#runEnded.abort();
      ownDirectory?.();
      // Only now: a late SIGTERM must not end drainguard before its socket (and directory) is gone.
      for (const sig of caught) process.off(sig, onSignal);
      this.#setPhase('exited');
    }
  }

  /**
   * The drain socket's server and the drain on it, built once at the first need: run(), or a
   * preStop request over HTTP that comes before it (the listener starts first), on the
   * configured socket (a sidecar always has one); run() builds them on its own private socket
   * when none is configured. Built, not listening: run() listens.
   */
  #onSocket(): { server: DrainServer; drain: Drain } {
    if (this.#server && this.#drain) return { server: this.#server, drain: this.#drain };
    if (this.#config.socket === undefined) throw new TypeError('a drain request before run() needs a configured socket');
    return this.#serve(this.#config.socket);
  }

  /** The drain socket's server at `path` (it listens once run), and the drain on it. */
  #serve(path: string): { server: DrainServer; drain: Drain } {
    const server = new DrainServer({
      path,
      logger: this.#log,
      clock: this.#clock,
      onEvent: () => this.#clientEvents.emit('change'),
      onDrainRequest: this.#mode.takesDrainRequests ? (request, channel) => this.#answerDrainRequest(request.source, channel) : undefined,
    });
    const drain = new Drain({
      server,
      deadline: () => this.#deadlines.drainDeadline(),
      countedFrom: () => this.#deadlines.terminatedAt(),
      logger: this.#log,
      clock: this.#clock,
      operatorGone: this.#operatorExit.promise,
      untilIdle: this.#options.untilIdle,
    });
    void this.#termination.cutShort.then(() => drain.cutShort());
    this.#server = server;
    this.#drain = drain;
    return { server, drain };
  }

  /** The phases in their order; each one is set here. */
  async #supervise(server: DrainServer, drain: Drain): Promise<number> {
    const mode = this.#mode;
    this.#setPhase('starting');
    if (this.#config.socket !== undefined) await claimSocketPath(server.path, this.#config.socketSource);
    await this.#listen(server);
    this.#watchers.onServer?.(server);
    await signalsHandled();
    const calledOff = this.#termination.count > 0;
    if (calledOff && mode.statusIfCalledOff !== undefined) {
      this.#announce!();
      this.#log.info('terminated before the operator was started; not starting it');
      return mode.statusIfCalledOff;
    }
    // running
    let operator: StartedOperator | undefined;
    if (!calledOff) {
      operator = await mode.start(this.#startContext(server));
      void operator.exited.then(this.#operatorExit.resolve);
      this.#setPhase('running');
      this.#options.guard?.start();
      void this.#options.podGracePeriod?.().then((ms) => ms !== undefined && this.#deadlines.adoptPodGracePeriod(ms));
      void this.#readStopSignal();
    }
    // Until the operator exits, a termination signal comes, or a preStop request asks for the drain.
    const byItself = await Promise.race([
      operator?.exited ?? new Promise<never>(() => {}),
      this.#termination.requested.then(() => undefined),
      this.#drainBegun.promise.then(() => undefined),
    ]);
    if (byItself !== undefined) {
      this.#log.info('operator exited by itself', { status: byItself.status, code: byItself.code, signal: byItself.signal });
      // Nothing to drain: a termination signal from now on is only told.
      void this.#termination.requested.then(() => this.#announce?.());
      this.#setPhase('releasing');
      await this.#release();
      return byItself.status;
    }
    // draining: the drain a preStop request began, else the signal's
    const ticket = drain.started ?? (await this.#signalDrain(!calledOff));
    this.#setPhase('draining');
    const stopPolling = this.#deletion.poll();
    const result = await ticket.ended;
    stopPolling();
    this.#watchers.observer?.drainEnded?.(result.outcome, result.durationMs);
    // stopping: a drain the preStop hook asked for may be over before the signal, which the stop waits for
    const signalledAt = await this.#termination.requested;
    this.#setPhase('stopping');
    const deadlines = this.#deadlines;
    const status = operator
      ? await operator.stop({
          drain: ticket,
          result,
          signalledAt,
          cutShort: this.#termination.cutShort,
          killTime: (stopAt) => deadlines.killTime(stopAt),
          operatorWaitDeadline: () => deadlines.operatorWaitDeadline(),
        })
      : 0;
    this.#setPhase('releasing');
    // With the operator never started, nothing was held: only the Events are flushed.
    if (calledOff) await this.#flushEvents();
    else await this.#release();
    if (mode.lastLine) this.#log.info(mode.lastLine, { afterSignalMs: this.#clock.now() - signalledAt });
    return status;
  }

  /** What the mode's start works with. */
  #startContext(server: DrainServer): StartContext {
    const events = this.#clientEvents;
    return {
      config: this.#config,
      log: this.#log,
      clock: this.#clock,
      socketPath: server.path,
      drainTimeoutMs: this.#deadlines.drainTimeoutMs(),
      clients: {
        count: () => server.greetedCount(),
        watch: (onChange, signal) => {
          events.on('change', onChange);
          signal.addEventListener('abort', () => events.off('change', onChange), { once: true });
        },
      },
    };
  }

  /**
   * The first termination signal's drain, once the Pod's deletion is read (the
   * deadline told to the clients is then the one that holds). Where the
   * operator runs, the step before the drain (a namespace being deleted) comes
   * first, inside the drain's time, from the same deadline.
   */
  async #signalDrain(operatorRuns: boolean): Promise<DrainTicket> {
    await this.#deletion.read();
    const step = this.#options.beforeDrain;
    if (!step || !operatorRuns) return this.#requestDrain('signal', this.#announce);
    this.#announce!();
    await this.#runBeforeDrain(step);
    return this.#requestDrain('signal');
  }

  /**
   * The one way to a drain, whoever asks (the signal, the socket, HTTP): starts
   * it or joins the one under way. `announce` logs what asked: once the
   * clients are told, before the drain's own lines.
   */
  #requestDrain(source: DrainSource, announce?: () => void): DrainTicket {
    this.#deadlines.drainRequested(this.#clock.now());
    const ticket = this.#onSocket().drain.request(source, announce);
    this.#watchers.observer?.drainRequested?.(source);
    if (!ticket.joined) this.#drainBegun.resolve(ticket);
    return ticket;
  }

  /** releasing: Events first, while the guard still keeps the RBAC (and the token) that writes them. */
  async #release(): Promise<void> {
    const guard = this.#options.guard;
    // The operator has exited: its leader Lease is given up beside the release, by the release deadline (leader/open.ts).
    const leader = this.#options.releaseLeader?.(this.#deadlines.releaseDeadline());
    // Once more beside the Events: a second, shorter delete may have come with no signal of its own.
    const reread = guard && (this.#termination.count > 0 || this.#drain?.started) ? this.#deletion.read() : undefined;
    await this.#flushEvents();
    if (guard) {
      if (reread)
        await within(this.#clock, reread, Math.min(DELETION_READ_MS, (this.#deadlines.releaseDeadline() - this.#clock.now()) / 4));
      const deadline = this.#deadlines.releaseDeadline();
      this.#log.info('releasing the guard', { deadline: new Date(deadline).toISOString() });
      await guard.release(deadline);
      // A GuardReleaseFailed Event, within what is left of the deadline.
      await this.#flushEvents();
    }
    await leader;
  }

  #flushEvents(): Promise<void> {
    return this.#options.flushEvents?.(this.#deadlines.eventFlushDeadline()) ?? Promise.resolve();
  }

  async #listen(server: DrainServer): Promise<void> {
    try {
      await server.listen();
    } catch (err) {
      const e = err as NodeJS.ErrnoException;
      const fix =
        e.code === 'EACCES'
          ? `this user may not create files in ${dirname(server.path)}; ` +
            'choose a writable directory (an emptyDir volume in a pod) or make it writable'
          : 'choose another path';
      throw new ConfigError(
        'DG_SOCKET_LISTEN',
        `${this.#config.socketSource}: cannot listen on ${server.path}: ${e.code ?? e.message}; ${fix}`,
        { cause: err },
      );
    }
  }

  /** A preStop request: answered once the Pod's deletion is read, so that the deadline it is told is the one that holds. */
  #answerDrainRequest(by: string | undefined, channel: ControlChannel): void {
    void this.#deletion.read().then(() => {
      const ticket = this.#requestDrain('socket', () => this.#log.info('drain requested', { via: 'socket', by }));
      answerDrainRequest(channel, ticket, this.#clock.now());
    });
  }

  #onTermination(sig: NodeJS.Signals): void {
    const at = this.#clock.now();
    const step = this.#termination.signal(at);
    if (step === 'drain') {
      this.#deadlines.signalled(at);
      const grace = this.#deadlines.gracePeriod;
      const clients = () => (this.#mode.countsClientsAtTermination ? { clients: this.#server?.greetedCount() ?? 0 } : {});
      const announce = () =>
        this.#log.info('termination requested', { signal: sig, ...clients(), gracePeriodMs: grace.ms, gracePeriodFrom: grace.from });
      this.#announce = announce;
      // A drain under way (a preStop request's) has told its deadline: the signal joins it at once;
      // the Pod's deletion, read meanwhile, may end it sooner.
      if (this.#drain?.started) {
        this.#requestDrain('signal', announce);
        void this.#deletion.read();
      }
      // Otherwise #supervise drains (#signalDrain) once the operator runs, calls its start off,
      // or (the operator exited by itself) only tells it.
    } else if (step === 'cut-short') {
      if (this.#drain?.running) this.#log.info('second termination signal: cutting the drain short', { signal: sig });
      // A second delete with a shorter grace period moves the kubelet's SIGKILL: the stop and the release go by it.
      void this.#deletion.read();
    } else {
      this.#log.debug('termination signal ignored, the stop is under way', { signal: sig });
    }
  }

  /** The container's stop signal from the Pod, made a drain signal (and caught) when it is not one yet. */
  async #readStopSignal(): Promise<void> {
    const read = this.#options.podStopSignal;
    if (!read) return;
    try {
      const reading = await read(this.#runEnded.signal);
      const added = reading && this.#drainSignals.adopt(reading, this.#log);
      if (added) this.#catch(added);
    } catch (err) {
      if (this.#runEnded.signal.aborted) return;
      this.#log.warn(
        "could not read the container's stop signal from the Pod: " +
          `draining on ${this.#drainSignals.list.join(', ')} (DRAINGUARD_DRAIN_SIGNALS names more)`,
        { error: err },
      );
    }
  }

  /** The step before the drain, by its deadline (Deadlines.beforeDrainDeadline); a second signal aborts it. */
  async #runBeforeDrain(step: NonNullable<StopProcedureOptions['beforeDrain']>): Promise<void> {
    const stop = new AbortController();
    void this.#termination.cutShort.then(() => stop.abort());
    await step(this.#deadlines.beforeDrainDeadline(), stop.signal).catch(() => {});
  }

  #setPhase(phase: Phase): void {
    if (this.#phase === phase) return;
    this.#phase = phase;
    this.#watchers.observer?.phase?.(phase);
  }
}

/** A promise with its resolve at hand. */
function deferred<T>(): { readonly promise: Promise<T>; readonly resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/** The default socket: in a fresh private directory under TMPDIR. */
function privateSocket(): { path: string; cleanup: () => void } {
  try {
    return privateSocketPath();
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    throw new ConfigError(
      'DG_SOCKET_LISTEN',
      `cannot make a private directory for the drain socket in ${tmpdir()}: ${e.code ?? e.message}; ` +
        'set TMPDIR to a writable directory, or DRAINGUARD_SOCKET to a socket path',
      { cause: err },
    );
  }
}
