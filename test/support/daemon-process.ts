// A binary the tests supervise (etcd, kube-apiserver, containerd, the kubelet):
// its output appended to a log file, run under `setpriv --pdeathsig SIGKILL` in
// a process group of its own, so that whatever happens to the process that
// started it, it dies with it; stopped by its group.

import { type ChildProcess, spawn } from 'node:child_process';
import { accessSync, closeSync, constants, openSync, readFileSync } from 'node:fs';

/** Whether PATH is a file this process may execute. */
export function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** One supervised binary: its output in a log file, stopped by process group. */
export class Daemon {
  #child?: ChildProcess;
  #exited?: Promise<void>;
  readonly name: string;
  readonly #file: string;
  readonly #args: readonly string[];
  readonly #log: string;
  readonly #onUnexpectedExit: (d: Daemon) => void;

  constructor(name: string, file: string, args: readonly string[], log: string, onUnexpectedExit: (d: Daemon) => void = () => {}) {
    this.name = name;
    this.#file = file;
    this.#args = args;
    this.#log = log;
    this.#onUnexpectedExit = onUnexpectedExit;
  }

  get pid(): number | undefined {
    return this.#child?.pid;
  }

  /** Started, and not exited since. */
  get running(): boolean {
    return this.#child !== undefined;
  }

  start(): void {
    const out = openSync(this.#log, 'a');
    const child = spawn('setpriv', ['--pdeathsig', 'SIGKILL', '--', this.#file, ...this.#args], {
      stdio: ['ignore', out, out],
      detached: true,
    });
    closeSync(out);
    this.#child = child;
    this.#exited = new Promise((resolve) => child.once('exit', () => resolve()));
    child.once('exit', () => {
      if (this.#child === child) {
        this.#child = undefined;
        this.#onUnexpectedExit(this);
      }
    });
  }

  /** SIGTERM to its group, SIGKILL after 10 s. */
  async stop(): Promise<void> {
    const child = this.#child;
    if (!child?.pid) return;
    this.#child = undefined;
    const kill = (signal: NodeJS.Signals) => {
      try {
        process.kill(-child.pid!, signal);
      } catch {
        // Already gone.
      }
    };
    kill('SIGTERM');
    const timer = setTimeout(() => kill('SIGKILL'), 10_000);
    await this.#exited;
    clearTimeout(timer);
  }

  /** Synchronous SIGKILL, for an exit handler. */
  killNow(): void {
    if (this.#child?.pid) {
      try {
        process.kill(-this.#child.pid, 'SIGKILL');
      } catch {}
    }
    this.#child = undefined;
  }

  tail(): string {
    try {
      return readFileSync(this.#log, 'utf8').split('\n').slice(-25).join('\n');
    } catch {
      return '';
    }
  }
}
