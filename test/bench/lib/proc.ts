// Processes for the benchmark: stdout read line by line (the fixtures print
// timestamped events), the exit time taken the moment the exit is seen, and
// every process killed if the benchmark itself is interrupted.

import { type ChildProcess, spawn } from 'node:child_process';
import { nowMs } from './clock.ts';

export interface Exit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  /** nowMs() when the exit was seen. */
  readonly at: number;
}

type Waiter = { match: (line: string) => boolean; stream: 'stdout' | 'stderr'; resolve: (line: string) => void };

const live = new Set<BenchProc>();
/** Pids that fixtures reported (grandchildren of the benchmark), killed on abort. */
const reported = new Set<number>();

export class BenchProc {
  readonly child: ChildProcess;
  readonly lines: string[] = [];
  readonly stderr: string[] = [];
  readonly exited: Promise<Exit>;
  exit?: Exit;
  #waiters: Waiter[] = [];
  readonly #listeners: ((line: string) => void)[] = [];

  constructor(file: string, args: readonly string[], env: NodeJS.ProcessEnv, options: { stderr?: boolean } = {}) {
    this.child = spawn(file, args, {
      env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
      stdio: ['ignore', 'pipe', options.stderr ? 'pipe' : 'ignore'],
      // Its own process group: a Ctrl-C at the terminal reaches only the benchmark, which cleans up.
      detached: true,
    });
    live.add(this);
    this.exited = new Promise((resolve) => {
      this.child.once('exit', (code, signal) => {
        this.exit = { code, signal, at: nowMs() };
        live.delete(this);
        resolve(this.exit);
      });
    });
    this.child.once('error', () => {});
    splitLines(this.child.stdout!, (line) => {
      this.lines.push(line);
      for (const l of this.#listeners) l(line);
      this.#settle('stdout', line);
    });
    if (options.stderr) {
      splitLines(this.child.stderr!, (line) => {
        this.stderr.push(line);
        this.#settle('stderr', line);
      });
    }
  }

  #settle(stream: Waiter['stream'], line: string): void {
    this.#waiters = this.#waiters.filter((w) => (w.stream === stream && w.match(line) ? (w.resolve(line), false) : true));
  }

  get pid(): number {
    return this.child.pid!;
  }

  onLine(listener: (line: string) => void): void {
    this.#listeners.push(listener);
  }

  /** The first stdout line (already seen or still to come) that matches, or an error after `timeoutMs`. */
  waitFor(match: (line: string) => boolean, timeoutMs: number, what: string, stream: Waiter['stream'] = 'stdout'): Promise<string> {
    const seen = (stream === 'stdout' ? this.lines : this.stderr).find(match);
    if (seen !== undefined) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${what}: nothing after ${timeoutMs} ms (pid ${this.pid})`)), timeoutMs);
      const done = (line: string) => {
        clearTimeout(timer);
        resolve(line);
      };
      this.#waiters.push({ match, stream, resolve: done });
      void this.exited.then((e) => {
        clearTimeout(timer);
        reject(new Error(`${what}: the process exited (${e.code ?? e.signal}) first; stderr: ${this.stderr.slice(-5).join(' | ')}`));
      });
    });
  }

  waitLine(prefix: string, timeoutMs: number): Promise<string[]> {
    return this.waitFor((l) => l.startsWith(`${prefix} `) || l === prefix, timeoutMs, `waiting for "${prefix}"`).then((l) => l.split(' '));
  }

  /** Sends a signal; returns nowMs() taken just before, for latency measurements. */
  signal(signal: NodeJS.Signals): number {
    const at = nowMs();
    this.child.kill(signal);
    return at;
  }

  /** Resolves with the exit, or kills the process group and throws after `timeoutMs`. */
  async waitExit(timeoutMs: number, what: string): Promise<Exit> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<undefined>((r) => (timer = setTimeout(() => r(undefined), timeoutMs)));
    const exit = await Promise.race([this.exited, timeout]);
    clearTimeout(timer);
    if (exit) return exit;
    this.kill();
    throw new Error(`${what}: no exit after ${timeoutMs} ms (pid ${this.pid})`);
  }

  kill(): void {
    try {
      process.kill(-this.pid, 'SIGKILL');
    } catch {}
  }
}

/** Remembers a pid a fixture reported, so an aborted benchmark leaves nothing behind. */
export function reportedPid(pid: number): void {
  if (Number.isSafeInteger(pid) && pid > 0) reported.add(pid);
}

export function killEverything(): void {
  for (const p of live) p.kill();
  for (const pid of reported) {
    for (const target of [-pid, pid]) {
      try {
        process.kill(target, 'SIGKILL');
      } catch {}
    }
  }
  reported.clear();
}

function splitLines(stream: NodeJS.ReadableStream, onLine: (line: string) => void): void {
  let partial = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    const parts = (partial + chunk).split('\n');
    partial = parts.pop()!;
    for (const p of parts) onLine(p);
  });
}
