// Real processes for tests and benchmarks: the built executable and fixtures,
// with their output read line by line so that a test or a benchmark waits on
// what they print, never on time. Whatever a test file or a benchmark started
// and did not end (a failed test, an interrupted benchmark) is killed when its
// process exits, and its temporary directories are removed, failing or not.

import { type ChildProcess, spawn } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { nowMs } from './clock.ts';
import { until, within } from './wait.ts';

export const EXE = resolve('dist/drainguard');
export const NODE = process.execPath;
export const fixture = (name: string): string => resolve('test/fixtures', name);

/** What this test file started and made: ended and removed when it exits (see `leftBehind`). */
const running = new Set<Proc>();
const tempDirs: string[] = [];
process.once('exit', leftBehind);

export function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'drainguard-test-'));
  tempDirs.push(dir);
  return dir;
}

/**
 * At the exit of the test file: kills what is still running (drainguard and the
 * operator's process group), reports it on stderr as a `leftover:` line for the
 * runner, and removes the temporary directories.
 */
function leftBehind(): void {
  for (const p of running) {
    process.stderr.write(
      `leftover: ${[p.child.spawnfile, ...p.child.spawnargs.slice(1)].join(' ').slice(0, 200)} (pid ${p.pid}) still running at exit, killed\n`,
    );
    p.killAll();
  }
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
}

export interface Exit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

export interface LogLine {
  readonly msg: string;
  readonly level: string;
  readonly [key: string]: unknown;
}

export class Proc {
  readonly child: ChildProcess;
  readonly stdout: string[] = [];
  readonly stderr: string[] = [];
  readonly exited: Promise<Exit>;
  #exit?: Exit;
  #exitedAt?: number;
  readonly #events = new EventEmitter();
  readonly #lineListeners: ((line: string) => void)[] = [];
  readonly #detached: boolean;
  /** Runs as unshare --pid --fork: the pids drainguard logs are those of the PID namespace of its child. */
  readonly #ownPidNamespace: boolean;

  constructor(
    file: string,
    args: readonly string[],
    env: NodeJS.ProcessEnv = {},
    options: { cwd?: string; detached?: boolean; ownPidNamespace?: boolean } = {},
  ) {
    // Checked here, not at import: a benchmark's --help and the unit tier load this file unbuilt.
    if ((file === EXE || args.includes(EXE)) && !existsSync(EXE)) throw new Error(`${EXE} is missing: run 'npm run build' first`);
    this.#ownPidNamespace = options.ownPidNamespace ?? false;
    this.#detached = options.detached ?? false;
    this.child = spawn(file, args, {
      // TMPDIR: the runner gives each test file a temporary directory of its own, and removes it.
      env: { PATH: process.env.PATH, HOME: process.env.HOME, ...(process.env.TMPDIR && { TMPDIR: process.env.TMPDIR }), ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
      cwd: options.cwd,
      detached: options.detached,
    });
    this.#events.setMaxListeners(0);
    for (const [stream, lines] of [
      [this.child.stdout!, this.stdout],
      [this.child.stderr!, this.stderr],
    ] as const) {
      let partial = '';
      stream.setEncoding('utf8');
      stream.on('data', (chunk: string) => {
        const parts = (partial + chunk).split('\n');
        partial = parts.pop()!;
        lines.push(...parts);
        if (lines === this.stdout) for (const line of parts) for (const listener of this.#lineListeners) listener(line);
        this.#events.emit('change');
      });
    }
    running.add(this);
    // 'exit' comes before 'close' (which waits for the output to end): the moment a benchmark measures.
    this.child.once('exit', () => (this.#exitedAt = nowMs()));
    this.exited = new Promise((resolve) => {
      this.child.on('close', (code, signal) => {
        running.delete(this);
        this.#exit = { code, signal };
        this.#events.emit('change');
        resolve(this.#exit);
      });
    });
  }

  get pid(): number {
    return this.child.pid!;
  }

  /** nowMs() (test/support/clock.ts) when the process was seen to exit; undefined while it runs. */
  get exitedAt(): number | undefined {
    return this.#exitedAt;
  }

  /** Calls `listener` with every stdout line from now on, as it arrives. */
  onLine(listener: (line: string) => void): void {
    this.#lineListeners.push(listener);
  }

  /** The JSON log lines drainguard wrote on stderr. */
  logs(): LogLine[] {
    return this.stderr.flatMap((l) => {
      // The operator shares stderr: a message of its without a newline (a shell's
      // "Terminated") can stand in front of drainguard's line.
      const start = l.indexOf('{"time":');
      if (start === -1) return [];
      try {
        return [JSON.parse(l.slice(start)) as LogLine];
      } catch {
        return [];
      }
    });
  }

  /** Waits for a stdout line (exact or matching); resolves with it. */
  line(match: string | RegExp, ms = 10_000): Promise<string> {
    const test = (l: string) => (typeof match === 'string' ? l === match : match.test(l));
    return this.#until(() => this.stdout.find(test), ms, `stdout line ${match}`);
  }

  /** Waits for a stderr line (exact or matching): the log of a program that is not drainguard. */
  stderrLine(match: string | RegExp, ms = 10_000): Promise<string> {
    const test = (l: string) => (typeof match === 'string' ? l === match : match.test(l));
    return this.#until(() => this.stderr.find(test), ms, `stderr line ${match}`);
  }

  /** Waits for a drainguard log line with this message (exact or matching). */
  log(msg: string | RegExp, ms = 10_000): Promise<LogLine> {
    const test = (m: unknown) => (typeof msg === 'string' ? m === msg : msg.test(String(m)));
    return this.#until(() => this.logs().find((l) => test(l.msg)), ms, `log ${typeof msg === 'string' ? `"${msg}"` : msg}`);
  }

  async exit(ms = 15_000): Promise<Exit> {
    return within(ms, `exit of ${this.child.spawnfile}\nstdout: ${this.stdout.join('\n')}\nstderr: ${this.stderr.join('\n')}`, this.exited);
  }

  /** The process itself has exited (its output may still be held open by a grandchild). */
  processExit(ms = 15_000): Promise<Exit> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) {
      return Promise.resolve({ code: this.child.exitCode, signal: this.child.signalCode as NodeJS.Signals | null });
    }
    return within(ms, 'process exit', new Promise((resolve) => this.child.once('exit', (code, signal) => resolve({ code, signal }))));
  }

  /**
   * SIGKILL to drainguard and to the process group of the operator it started
   * (in a session of its own, it outlives a SIGKILLed drainguard): the cleanup
   * of a test that failed half-way. Started detached, its whole process
   * group. In a PID namespace of its own, its PID 1 instead, which takes the
   * whole namespace along.
   */
  killAll(): void {
    if (this.#ownPidNamespace) {
      for (const pid of this.#exit ? [] : [...childrenOf(this.pid), this.pid]) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // Already gone.
        }
      }
      return;
    }
    const started = this.logs().find((l) => l.msg === 'operator started');
    for (const pid of [
      this.#exit ? undefined : this.#detached ? -this.pid : this.pid,
      typeof started?.pid === 'number' ? -started.pid : undefined,
    ]) {
      if (pid === undefined) continue;
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
  }

  kill(signal: NodeJS.Signals = 'SIGTERM'): void {
    if (!this.#exit) this.child.kill(signal);
  }

  #until<T>(predicate: () => T | undefined, ms: number, what: string): Promise<T> {
    return until(
      (check) => {
        this.#events.on('change', check);
        return () => this.#events.off('change', check);
      },
      () => {
        const v = predicate();
        if (v === undefined && this.#exit)
          throw new Error(
            `process exited (${JSON.stringify(this.#exit)}) before ${what}\nstdout: ${this.stdout.join('\n')}\nstderr: ${this.stderr.join('\n')}`,
          );
        return v;
      },
      ms,
      what,
    );
  }
}

/** The children of a process, from /proc; none when it is gone. */
export function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').split(' ').filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/**
 * SIGKILL to drainguard, and to its operator, which it cannot take along; nor
 * can it remove its private socket directory, so the test does.
 */
export async function killHard(p: Proc): Promise<void> {
  const started = await p.log('operator started');
  p.kill('SIGKILL');
  await p.processExit();
  process.kill(started.pid as number, 'SIGKILL');
  rmSync(dirname(started.socket as string), { recursive: true, force: true });
}

/** Starts `drainguard ARGS...` (the built executable). */
export function drainguard(args: readonly string[], env: NodeJS.ProcessEnv = {}): Proc {
  return new Proc(EXE, args, env);
}
