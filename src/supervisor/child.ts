// The supervised child: started in a session of its own, so that a terminal's
// Ctrl-C reaches drainguard (which drains first) and not the child directly.

import { spawn } from 'node:child_process';
import { signalNumber } from '../config/signals.ts';
import type { SignalTarget } from '../config/supervisor.ts';

export interface ChildExit {
  /** The status drainguard exits with: the child's code, or 128+N for signal N. */
  readonly status: number;
  readonly code?: number;
  readonly signal?: NodeJS.Signals;
}

export interface Child {
  readonly pid: number;
  readonly exited: Promise<ChildExit>;
  /**
   * Sends a signal to the child's group or the child alone, as DRAINGUARD_SIGNAL_TARGET says (0: only
   * checks it is there); false when it was not delivered: nothing was there to receive it, or the
   * system refused (`onSignalRefused`).
   */
  signal(signal: NodeJS.Signals | 0): boolean;
}

/** The child could not be started at all (missing command, not executable). */
export class SpawnError extends Error {
  override name = 'SpawnError';
  /** The errno code (ENOENT, EACCES), when the system gave one. */
  readonly errno: string | undefined;
  constructor(message: string, errno: string | undefined) {
    super(message);
    this.errno = errno;
  }
}

export interface StartChildOptions {
  readonly env: NodeJS.ProcessEnv;
  readonly signalTarget: SignalTarget;
  readonly kill?: (pid: number, signal: NodeJS.Signals | 0) => void;
  /**
   * A signal the system refused (EPERM: the child became another user, through a setuid program).
   * It must not end drainguard, which would leave the operator running unsupervised.
   */
  readonly onSignalRefused?: (signal: NodeJS.Signals | 0, err: NodeJS.ErrnoException) => void;
}

export async function startChild(file: string, args: readonly string[], options: StartChildOptions): Promise<Child> {
  const kill = options.kill ?? ((pid, sig) => process.kill(pid, sig));
  // node:child_process rather than execa: nothing is captured, and execa's
  // evaluation alone would be most of drainguard's start time.
  const subprocess = spawn(file, args, {
    env: options.env,
    // Inherited, not piped: a pipe would make us wait for grandchildren holding it open.
    stdio: 'inherit',
    detached: true,
  });
  if (subprocess.pid === undefined) {
    const { code, message } = await new Promise<NodeJS.ErrnoException>((resolve) => subprocess.once('error', resolve));
    const why = code === 'ENOENT' ? 'not found' : code === 'EACCES' ? 'permission denied (not executable?)' : message;
    throw new SpawnError(`cannot start ${JSON.stringify(file)}: ${why}`, code);
  }
  // Errors after the start (a failed kill) are reported where the signal is sent.
  subprocess.on('error', () => {});
  const pid = subprocess.pid;
  let gone = false;
  // Whatever ends drainguard's JavaScript (process.exit, a crash), the child must not outlive it
  // unsupervised. Not signal-exit: it listens on the aliases SIGIOT and SIGPOLL too, where
  // drainguard has no listener of its own, takes a SIGABRT or SIGIO for unhandled, kills the
  // child and re-raises the signal. drainguard catches every signal it can, so 'exit' is enough.
  const killOnExit = (): void => {
    try {
      kill(-pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  };
  process.once('exit', killOnExit);
  const exited = new Promise<ChildExit>((resolve) => {
    subprocess.once('exit', (code, signal) => {
      gone = true;
      process.off('exit', killOnExit);
      if (signal) resolve({ status: 128 + signalNumber(signal), signal });
      else resolve({ status: code ?? 1, code: code ?? undefined });
    });
  });
  return {
    pid,
    exited,
    signal(sig) {
      if (gone) return false;
      try {
        kill(options.signalTarget === 'group' ? -pid : pid, sig);
        return true;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ESRCH') options.onSignalRefused?.(sig, err as NodeJS.ErrnoException);
        return false;
      }
    },
  };
}
