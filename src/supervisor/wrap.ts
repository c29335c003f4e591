// Wrap mode: drainguard runs the operator as its child.
//
//   running    the operator works; signals other than SIGTERM/SIGINT are passed on
//   draining   first SIGTERM/SIGINT: the clients are told to drain (drain.ts)
//   stopping   the stop signal, SIGKILL at the kill time
//   releasing  the operator has exited: Events, then the guard, by the release deadline
//   exited     socket closed and removed; drainguard exits with the operator's status

import { tmpdir } from 'node:os';
import { dirname } from 'node:path';
import type { SupervisorConfig } from './config.ts';
import { ConfigError } from '../config/errors.ts';
import { type Logger, silentLogger } from '../log/logger.ts';
import { DrainServer } from '../protocol/server.ts';
import { claimSocketPath, privateSocketPath } from '../protocol/socket-path.ts';
import { type Child, type ChildExit, SpawnError, startChild } from './child.ts';
import { Drain, type DrainOptions } from './drain.ts';
import type { GuardHandle, Phase, SupervisorObserver } from './observer.ts';
import { Deadlines, Termination } from './shutdown.ts';
import { warnIfNoReaper } from './reaper.ts';
import { FORWARDED, JOB_CONTROL, TERMINATING, catchSignals } from './signals.ts';
import { keepWarm } from './warm.ts';

export interface WrapOptions {
  readonly env: NodeJS.ProcessEnv;
  readonly logger?: Logger;
  readonly now?: () => number;
  readonly guard?: GuardHandle;
  readonly observer?: SupervisorObserver;
  /** Called with the moment (epoch ms) by which Events still on their way must be written. */
  readonly flush?: (deadline: number) => Promise<void>;
  /** DRAINGUARD_IDLE_METRICS: the drain's wait when no client said hello. */
  readonly untilIdle?: DrainOptions['untilIdle'];
  /** Called once the drain server listens, with the server (for the HTTP listener). */
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

/** The default socket: in a fresh private directory under TMPDIR. */
function privateSocket(): { path: string; cleanup: () => void } {
  try {
    return privateSocketPath();
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    throw new ConfigError(
      'DG_SOCKET_LISTEN',
      `cannot make a private directory for the drain socket in ${tmpdir()}: ${e.code ?? e.message}; set TMPDIR to a writable directory, or DRAINGUARD_SOCKET to a socket path`,
      { cause: err },
    );
  }
}

export class WrapSupervisor {
  readonly #config: SupervisorConfig;
  readonly #options: WrapOptions;
  readonly #log: Logger;
  readonly #now: () => number;
  readonly #deadlines: Deadlines;
  readonly #termination: Termination;
  #phase: Phase = 'starting';
  #child?: Child;
  /** Made when the operator is started, so that the termination signal starts it in its own turn. */
  #drain?: Drain;
  /** The stop signal, once sent: when, and whether anything was there to receive it. */
  #stopSent?: { readonly at: number; readonly delivered: boolean };

  constructor(config: SupervisorConfig, options: WrapOptions) {
    this.#config = config;
    this.#options = options;
    this.#log = options.logger ?? silentLogger;
    this.#now = options.now ?? Date.now;
    this.#deadlines = new Deadlines(config, this.#log);
    this.#termination = new Termination(this.#now);
  }

  /** The Pod's terminationGracePeriodSeconds, once the API told it. */
  adoptPodGracePeriod(ms: number): void {
    this.#deadlines.adoptPodGracePeriod(ms);
  }

  /** Runs `command` under supervision; resolves with the status drainguard should exit with. */
  async run([file, ...args]: readonly string[]): Promise<number> {
    if (file === undefined) throw new ConfigError('DG_CONFIG_ARGUMENTS', "'drainguard run' needs a command: drainguard run [OPTIONS] -- COMMAND [ARGS...]");
    warnIfNoReaper(this.#log);
    // Signals first: a SIGTERM between making the private directory and catching it would leave the directory.
    const uncatch = catchSignals((sig) => this.#onSignal(sig));
    let ownPath: ReturnType<typeof privateSocket> | undefined;
    try {
      ownPath = this.#config.socket === undefined ? privateSocket() : undefined;
    } catch (err) {
      uncatch();
      throw err;
    }
    const path = ownPath?.path ?? this.#config.socket!;
    const server = new DrainServer({ path, logger: this.#log, now: this.#now, onLastDrained: this.#lastDrained });
    try {
      if (!ownPath) await claimSocketPath(path, this.#config.socketSource ?? 'DRAINGUARD_SOCKET');
      await this.#listen(server);
      this.#options.onServer?.(server);
      await signalsHandled();
      if (this.#termination.count > 0) {
        this.#log.info('terminated before the operator was started; not starting it');
        return 128 + 15;
      }
      const child = await this.#start(file, args, path);
      this.#drain = this.#drainOf(child, server);
      this.#options.guard?.start();
      const cool = keepWarm(() => this.#phase === 'running' && this.#rehearse());
      const exit = await this.#superviseUntilExit(child, this.#drain).finally(cool);
      await this.#release();
      return exit.status;
    } finally {
      await server.close();
      ownPath?.cleanup();
      // Only now: a late SIGTERM must not end drainguard before its socket and directory are gone.
      uncatch();
      this.#setPhase('exited');
    }
  }

  async #listen(server: DrainServer): Promise<void> {
    try {
      await server.listen();
    } catch (err) {
      const e = err as NodeJS.ErrnoException;
      const fix = e.code === 'EACCES' ? `this user may not create files in ${dirname(server.path)}; choose a writable directory (an emptyDir volume in a pod) or make it writable` : 'choose another path';
      throw new ConfigError('DG_SOCKET_LISTEN', `${this.#config.socketSource ?? 'DRAINGUARD_SOCKET'}: cannot listen on ${server.path}: ${e.code ?? e.message}; ${fix}`, { cause: err });
    }
  }

  /** running */
  async #start(file: string, args: readonly string[], socket: string): Promise<Child> {
    try {
      this.#child = await startChild(file, args, {
        env: { ...this.#options.env, DRAINGUARD_SOCKET: socket },
        signalTarget: this.#config.signalTarget,
        onSignalRefused: this.#signalRefused,
      });
    } catch (err) {
      if (err instanceof SpawnError) throw new ConfigError('DG_CHILD_SPAWN', err.message, { cause: err });
      throw err;
    }
    this.#setPhase('running');
    this.#log.info('operator started', { pid: this.#child.pid, command: file, socket });
    return this.#child;
  }

  /**
   * The way from the termination signal to the stop signal, on throwaway
   * objects: a server that never listened, an operator already gone, nothing
   * logged (warm.ts says why and when). Then the real operator's signal path,
   * with signal 0, which only checks that it is there.
   */
  #rehearse(): void {
    const dry = new WrapSupervisor(this.#config, { env: {} });
    const gone: Child = { pid: 0, exited: Promise.resolve({ status: 0 }), gone: true, signal: () => false };
    dry.#drain = dry.#drainOf(gone, new DrainServer({ path: '' }));
    dry.#phase = 'running';
    dry.#onSignal('SIGTERM');
    dry.#lastDrained();
    // Not ours to signal (EPERM) is told only when a real signal is refused.
    this.#child?.signal(0);
  }

  /** Signals the system would not let drainguard send, each told once (a storm of SIGHUP must not flood the log). */
  readonly #refused = new Set<NodeJS.Signals | 0>();
  readonly #signalRefused = (sig: NodeJS.Signals | 0, err: NodeJS.ErrnoException): void => {
    if (sig === 0 || this.#refused.has(sig)) return;
    this.#refused.add(sig);
    this.#log.error(`cannot send ${sig} to the operator: ${err.code ?? err.message}; it runs as a user drainguard may not signal (a setuid program?), so drainguard cannot stop it, only wait for it`, {
      signal: sig,
      pid: this.#child?.pid,
      target: this.#config.signalTarget,
    });
  };

  /** The drain of this operator; its end passes the stop signal on (unless the operator is gone already). */
  #drainOf(child: Child, server: DrainServer): Drain {
    const drain = new Drain({
      server,
      timeoutMs: () => this.#deadlines.drainTimeoutMs(),
      logger: this.#log,
      now: this.#now,
      childExited: child.exited,
      untilIdle: this.#options.untilIdle,
      onStart: (source) => {
        this.#options.observer?.drainRequested?.(source);
        this.#setPhase('draining');
      },
      onEnd: (r) => {
        if (r.outcome !== 'child-exited') this.#stop(child);
        this.#options.observer?.drainEnded?.(r.outcome, r.durationMs);
      },
    });
    void this.#termination.cutShort.then(() => drain.cutShort());
    return drain;
  }

  /** draining, then stopping: resolves once the operator has exited. */
  async #superviseUntilExit(child: Child, drain: Drain): Promise<ChildExit> {
    const early = await Promise.race([child.exited, this.#termination.requested.then(() => undefined)]);
    if (early) {
      this.#logExit(early, 'operator exited by itself');
      return early;
    }
    // Started by the signal handler already, unless the signal came while the operator was being started.
    const ticket = drain.started ?? drain.request('signal');
    await ticket.ended;
    const exit = await child.exited;
    this.#logExit(exit, 'operator exited', this.#now() - ticket.startedAt);
    return exit;
  }

  /** The server's call at the last client's `drained`: the stop signal goes out before that is even counted. */
  readonly #lastDrained = (): void => {
    if (this.#child && this.#phase === 'draining') this.#sendStop(this.#child);
  };

  /** The stop signal, once, whichever way the drain ended. */
  #sendStop(child: Child): { readonly at: number; readonly delivered: boolean } {
    return (this.#stopSent ??= { at: this.#now(), delivered: child.signal(this.#config.stopSignal) });
  }

  #stop(child: Child): void {
    // The signal first (unless the last `drained` sent it already): the observers and the log line are not the operator's to wait for.
    const { at, delivered } = this.#sendStop(child);
    this.#setPhase('stopping');
    if (delivered) this.#log.info('stop signal sent', { signal: this.#config.stopSignal, target: this.#config.signalTarget, pid: child.pid });
    const killer = setTimeout(() => {
      if (child.signal('SIGKILL')) this.#log.warn('stop timeout passed, operator killed', { signal: 'SIGKILL', timeoutMs: this.#deadlines.stopTimeoutMs });
    }, this.#deadlines.killTime(at) - this.#now());
    void child.exited.then(() => clearTimeout(killer));
  }

  /** releasing: Events first, while the guard still keeps the RBAC (and the token) that writes them. */
  async #release(): Promise<void> {
    this.#setPhase('releasing');
    const terminatedAt = this.#termination.at ?? this.#now();
    const deadline = this.#deadlines.releaseDeadline(terminatedAt);
    await this.#options.flush?.(this.#deadlines.eventFlushDeadline(this.#now(), terminatedAt));
    if (!this.#options.guard) return;
    this.#log.info('releasing the guard', { deadline: new Date(deadline).toISOString() });
    await this.#options.guard.release(deadline);
    // A GuardReleaseFailed Event, within what is left of the deadline.
    await this.#options.flush?.(this.#deadlines.eventFlushDeadline(this.#now(), terminatedAt));
  }

  #onSignal(sig: NodeJS.Signals): void {
    if (TERMINATING.includes(sig)) {
      this.#log.hold(() => this.#onTermination(sig));
      return;
    }
    const child = this.#child;
    if (JOB_CONTROL.includes(sig)) {
      child?.signal('SIGSTOP');
      this.#log.info('stopped by job control', { signal: sig });
      process.kill(process.pid, 'SIGSTOP');
      return;
    }
    if (FORWARDED.includes(sig)) {
      const delivered = child?.signal(sig) ?? false;
      this.#log.debug(delivered ? 'signal forwarded' : 'signal not forwarded: no operator running', { signal: sig });
    }
  }

  /** In the signal's own turn: the clients hear `drain` before anything is logged. */
  #onTermination(sig: NodeJS.Signals): void {
    const step = this.#termination.signal();
    if (step === 'drain') {
      // Only while the operator runs: before, #superviseUntilExit starts the drain; after it exited, there is none.
      if (this.#phase === 'running' && this.#drain) this.#drain.request('signal', () => this.#logTermination(sig));
      else this.#logTermination(sig);
    } else if (step === 'cut-short' && this.#phase === 'draining') {
      this.#log.info('second termination signal: cutting the drain short', { signal: sig });
    } else {
      this.#log.debug('termination signal ignored, the stop is under way', { signal: sig });
    }
  }

  #logTermination(sig: NodeJS.Signals): void {
    const grace = this.#deadlines.gracePeriod;
    this.#log.info('termination requested', { signal: sig, gracePeriodMs: grace.ms, gracePeriodFrom: grace.from });
  }

  #logExit(exit: ChildExit, msg: string, afterMs?: number): void {
    this.#log.info(msg, { status: exit.status, code: exit.code, signal: exit.signal, afterDrainStartMs: afterMs });
  }

  #setPhase(phase: Phase): void {
    this.#phase = phase;
    this.#options.observer?.phase?.(phase);
  }
}

/** Runs `command` under supervision and resolves with the status drainguard should exit with. */
export function runWrapped(config: SupervisorConfig, command: readonly string[], options: WrapOptions): Promise<number> {
  return new WrapSupervisor(config, options).run(command);
}
