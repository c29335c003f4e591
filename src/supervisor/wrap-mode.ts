// Wrap mode: drainguard runs the operator as its child. It passes every
// signal it can on to it, stops it with the stop signal once the drain is
// over (SIGKILL after the stop timeout), and exits with its status. The stop
// itself is stop-procedure.ts's.

import { ConfigError } from '../errors.ts';
import type { Logger } from '../log/logger.ts';
import type { SupervisorConfig } from '../config/supervisor.ts';
import { type Child, SpawnError, startChild } from './child.ts';
import { warnIfNoReaper } from './reaper.ts';
import { FORWARDED, JOB_CONTROL } from '../config/signals.ts';
import type { Mode, StartContext, StartedOperator, StopContext } from './stop-procedure.ts';

export class WrapMode implements Mode {
  readonly otherSignals = [...JOB_CONTROL, ...FORWARDED];
  readonly passesSignalsOn = true;
  readonly takesDrainRequests = false;
  /** A SIGTERM before the start: the operator is not started, and drainguard exits as SIGTERM would have ended it. */
  readonly statusIfCalledOff = 128 + 15;
  readonly countsClientsAtTermination = false;
  readonly #command: readonly string[];
  readonly #env: NodeJS.ProcessEnv;
  /** The operator once started: the other signals are passed on to it. */
  #child?: Child;
  /** Signals the system would not let drainguard send, each told once (a storm of SIGHUP must not flood the log). */
  readonly #refused = new Set<NodeJS.Signals | 0>();

  constructor(command: readonly string[], env: NodeJS.ProcessEnv) {
    if (command[0] === undefined)
      throw new ConfigError('DG_CONFIG_ARGUMENTS', "'drainguard run' needs a command: drainguard run [OPTIONS] -- COMMAND [ARGS...]");
    this.#command = command;
    this.#env = env;
  }

  async start(context: StartContext): Promise<StartedOperator> {
    const { config, log, socketPath } = context;
    warnIfNoReaper(log);
    const [file, ...args] = this.#command as [string, ...string[]];
    let child: Child;
    try {
      child = await startChild(file, args, {
        env: { ...this.#env, DRAINGUARD_SOCKET: socketPath },
        signalTarget: config.signalTarget,
        onSignalRefused: (sig, err) => this.#signalRefused(sig, err, config, log),
      });
    } catch (err) {
      if (err instanceof SpawnError) throw new ConfigError('DG_CHILD_SPAWN', err.message, { cause: err });
      throw err;
    }
    this.#child = child;
    log.info('operator started', { pid: child.pid, command: file, socket: socketPath });
    return { exited: child.exited, stop: (stop) => stopChild(child, context, stop) };
  }

  onOtherSignal(sig: NodeJS.Signals, log: Logger): void {
    const child = this.#child;
    if (JOB_CONTROL.includes(sig)) {
      child?.signal('SIGSTOP');
      log.info('stopped by job control', { signal: sig });
      process.kill(process.pid, 'SIGSTOP');
      return;
    }
    const delivered = child?.signal(sig) ?? false;
    log.debug(delivered ? 'signal forwarded' : 'signal not forwarded: no operator running', { signal: sig });
  }

  #signalRefused(sig: NodeJS.Signals | 0, err: NodeJS.ErrnoException, config: SupervisorConfig, log: Logger): void {
    if (sig === 0 || this.#refused.has(sig)) return;
    this.#refused.add(sig);
    log.error(
      `cannot send ${sig} to the operator: ${err.code ?? err.message}; ` +
        'it runs as a user drainguard may not signal (a setuid program?), so drainguard cannot stop it, only wait for it',
      {
        signal: sig,
        pid: this.#child?.pid,
        target: config.signalTarget,
      },
    );
  }
}

/** The stop signal, unless the operator is gone already; SIGKILL at the kill time. Resolves with its status once it exited. */
async function stopChild(child: Child, { config, log, clock }: StartContext, { drain, result, killTime }: StopContext): Promise<number> {
  if (result.outcome !== 'child-exited') {
    const stopAt = clock.now();
    const killAt = killTime(stopAt);
    if (child.signal(config.stopSignal))
      log.info('stop signal sent', { signal: config.stopSignal, target: config.signalTarget, pid: child.pid, timeoutMs: killAt - stopAt });
    const cancelKill = clock.after(killAt - clock.now(), () => {
      if (child.signal('SIGKILL')) log.warn('stop timeout passed, operator killed', { signal: 'SIGKILL', timeoutMs: killAt - stopAt });
    });
    void child.exited.then(cancelKill);
  }
  const exit = await child.exited;
  log.info('operator exited', {
    status: exit.status,
    code: exit.code,
    signal: exit.signal,
    afterDrainStartMs: clock.now() - drain.startedAt,
  });
  return exit.status;
}
