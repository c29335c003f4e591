// Wrap mode: drainguard runs the operator as its child.
// running → draining → stopping → releasing → exited, one step each.

import { tmpdir } from 'node:os';
import { dirname } from 'node:path';
import { type SupervisorConfig, defaultDrainTimeout } from '../config/supervisor.ts';
import { ConfigError } from '../config/errors.ts';
import { type Logger, silentLogger } from '../log/logger.ts';
import { DrainServer } from '../protocol/server.ts';
import { claimSocketPath, privateSocketPath } from '../protocol/socket-path.ts';
import { type Child, type ChildExit, SpawnError, startChild } from './child.ts';
import type { DrainOutcome, GuardHandle, Phase, SupervisorObserver } from './observer.ts';
import { FORWARDED, JOB_CONTROL, TERMINATING, catchSignals } from './signals.ts';

export interface WrapOptions {
  readonly env: NodeJS.ProcessEnv;
  readonly logger?: Logger;
  readonly now?: () => number;
  readonly guard?: GuardHandle;
  readonly observer?: SupervisorObserver & { drainRequested?(source: 'signal'): void };
  /** The Pod's terminationGracePeriodSeconds in ms once the API told it; it wins over the configured default. */
  readonly podGracePeriodMs?: () => number | undefined;
  /** Called before the release, with the moment (epoch ms) by which drainguard must be gone: for Events still on their way. */
  readonly flush?: (deadline: number) => Promise<void>;
  /** Called once the drain server listens, with the server (for the HTTP listener). */
  readonly onServer?: (server: DrainServer) => void;
}

/** Runs `command` under supervision and resolves with the status drainguard should exit with. */
export async function runWrapped(config: SupervisorConfig, command: readonly string[], options: WrapOptions): Promise<number> {
  return new WrapSupervisor(config, options).run(command);
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
      `cannot make a private directory for the drain socket in ${tmpdir()}: ${e.code ?? e.message}; set TMPDIR to a writable directory, or DRAINGUARD_SOCKET to a socket path`,
    );
  }
}

/** Kept between the end of the release and the kubelet's SIGKILL. */
const RELEASE_MARGIN_MS = 1000;

class WrapSupervisor {
  readonly #config: SupervisorConfig;
  readonly #options: WrapOptions;
  readonly #log: Logger;
  readonly #now: () => number;
  #phase: Phase = 'starting';
  #child?: Child;
  #terminations = 0;
  #terminatedAt?: number;
  #onTerminate = (): void => {};
  #onCutShort = (): void => {};
  readonly #terminated = new Promise<void>((r) => (this.#onTerminate = r));
  readonly #cutShort = new Promise<void>((r) => (this.#onCutShort = r));

  constructor(config: SupervisorConfig, options: WrapOptions) {
    this.#config = config;
    this.#options = options;
    this.#log = options.logger ?? silentLogger;
    this.#now = options.now ?? Date.now;
  }

  async run([file, ...args]: readonly string[]): Promise<number> {
    if (file === undefined) throw new ConfigError("'drainguard run' needs a command: drainguard run [OPTIONS] -- COMMAND [ARGS...]");
    const ownPath = this.#config.socket === undefined ? privateSocket() : undefined;
    const uncatch = catchSignals((sig) => this.#onSignal(sig));
    const path = ownPath?.path ?? this.#config.socket!;
    const server = new DrainServer({ path, logger: this.#log, now: this.#now });
    try {
      if (!ownPath) await claimSocketPath(path, this.#config.socketSource ?? 'DRAINGUARD_SOCKET');
      await this.#listen(server);
      this.#options.onServer?.(server);
      await signalsHandled();
      if (this.#terminations > 0) {
        this.#log.info('terminated before the operator was started; not starting it');
        return 128 + 15;
      }
      const child = await this.#start(file, args, path);
      this.#options.guard?.start();
      const exit = await this.#supervise(child, server);
      this.#setPhase('releasing');
      if (this.#options.guard) this.#log.info('releasing the guard', { deadline: new Date(this.#releaseDeadline()).toISOString() });
      // Events first, while the guard still keeps the RBAC (and the token) that writes them.
      await this.#options.flush?.(this.#releaseDeadline());
      await this.#options.guard?.release(this.#releaseDeadline());
      // A GuardReleaseFailed Event, within what is left of the deadline.
      await this.#options.flush?.(this.#releaseDeadline());
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
      throw new ConfigError(`${this.#config.socketSource ?? 'DRAINGUARD_SOCKET'}: cannot listen on ${server.path}: ${e.code ?? e.message}; ${fix}`);
    }
  }

  async #start(file: string, args: readonly string[], socket: string): Promise<Child> {
    try {
      this.#child = await startChild(file, args, {
        env: { ...this.#options.env, DRAINGUARD_SOCKET: socket },
        signalTarget: this.#config.signalTarget,
      });
    } catch (err) {
      if (err instanceof SpawnError) throw new ConfigError(err.message);
      throw err;
    }
    this.#setPhase('running');
    this.#log.info('operator started', { pid: this.#child.pid, command: file, socket });
    return this.#child;
  }

  async #supervise(child: Child, server: DrainServer): Promise<ChildExit> {
    const early = await Promise.race([child.exited, this.#terminated.then(() => undefined)]);
    if (early) {
      this.#logExit(early, 'operator exited by itself');
      return early;
    }

    const started = this.#now();
    const drainTimeoutMs = this.#drainTimeoutMs();
    const deadline = started + drainTimeoutMs;
    const greeted = server.clients().filter((c) => c.greeted).length;
    // The clients are told first, and the deadline is timed from the moment announced to them;
    // reporting and logging come after.
    const drained = server.drain(deadline);
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<'deadline'>((r) => (timer = setTimeout(() => r('deadline'), deadline - this.#now())));
    this.#options.observer?.drainRequested?.('signal');
    this.#setPhase('draining');
    this.#log.info('drain started', { clients: greeted, timeoutMs: drainTimeoutMs, deadline: new Date(deadline).toISOString() });
    if (drainTimeoutMs === 0 && greeted > 0) {
      this.#log.warn('the drain timeout is 0: the grace period leaves no time to drain after the stop timeout and a 2s margin; raise terminationGracePeriodSeconds or DRAINGUARD_GRACE_PERIOD');
    }
    const outcome = await Promise.race<DrainOutcome>([
      // An acknowledgement that comes at or after the deadline is an operator that gave up there.
      drained.then((t) => (this.#now() >= deadline && greeted > 0 ? 'deadline' : greeted === 0 && t.acknowledged === 0 ? 'no-client' : t.disconnected > 0 ? 'disconnected' : 'drained')),
      child.exited.then(() => 'child-exited' as const),
      expired,
      this.#cutShort.then(() => 'cut-short' as const),
    ]);
    clearTimeout(timer);
    const durationMs = this.#now() - started;
    this.#options.observer?.drainEnded?.(outcome, durationMs);
    (outcome === 'deadline' ? this.#log.warn : this.#log.info)('drain ended', {
      outcome,
      durationMs,
      ...(outcome === 'deadline' && { waitingFor: server.clients().filter((c) => c.greeted && !c.drained).map((c) => c.name ?? c.id) }),
    });

    if (outcome !== 'child-exited') this.#stop(child);
    const exit = await child.exited;
    this.#logExit(exit, 'operator exited', this.#now() - started);
    return exit;
  }

  #stop(child: Child): void {
    this.#setPhase('stopping');
    const { stopSignal, stopTimeoutMs, signalTarget } = this.#config;
    if (child.signal(stopSignal)) this.#log.info('stop signal sent', { signal: stopSignal, target: signalTarget, pid: child.pid });
    const killer = setTimeout(() => {
      if (child.signal('SIGKILL')) this.#log.warn('stop timeout passed, operator killed', { signal: 'SIGKILL', timeoutMs: stopTimeoutMs });
    }, stopTimeoutMs);
    void child.exited.then(() => clearTimeout(killer));
  }

  #onSignal(sig: NodeJS.Signals): void {
    if (TERMINATING.includes(sig)) {
      this.#terminations++;
      if (this.#terminations === 1) {
        this.#terminatedAt = this.#now();
        const pod = this.#options.podGracePeriodMs?.();
        this.#log.info('termination requested', { signal: sig, gracePeriodMs: this.#gracePeriodMs(), gracePeriodFrom: pod === undefined ? this.#config.gracePeriodSource : 'pod' });
        this.#onTerminate();
      } else if (this.#terminations === 2 && this.#phase === 'draining') {
        this.#log.info('second termination signal: cutting the drain short', { signal: sig });
        this.#onCutShort();
      } else {
        // The stop signal goes out once: operators such as controller-runtime exit hard on a second one.
        this.#log.debug('termination signal ignored, the stop is under way', { signal: sig });
      }
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

  #gracePeriodMs(): number {
    return this.#options.podGracePeriodMs?.() ?? this.#config.gracePeriodMs;
  }

  /** Configured, or derived from the grace period (the Pod's own, once known). */
  #drainTimeoutMs(): number {
    const { drainTimeoutExplicit, drainTimeoutMs, stopTimeoutMs } = this.#config;
    return drainTimeoutExplicit ? drainTimeoutMs : defaultDrainTimeout(this.#gracePeriodMs(), stopTimeoutMs);
  }

  /** The kubelet's clock started at SIGTERM: release must end within the grace period from then. */
  #releaseDeadline(): number {
    return (this.#terminatedAt ?? this.#now()) + Math.max(0, this.#gracePeriodMs() - RELEASE_MARGIN_MS);
  }

  #logExit(exit: ChildExit, msg: string, afterMs?: number): void {
    this.#log.info(msg, { status: exit.status, code: exit.code, signal: exit.signal, afterDrainStartMs: afterMs });
  }

  #setPhase(phase: Phase): void {
    this.#phase = phase;
    this.#options.observer?.phase?.(phase);
  }
}
