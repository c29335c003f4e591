// What a test file is doing right now, told to the runner as it happens: the
// test that started, and each wait with its deadline (wait.ts) as it begins and
// ends. When the runner kills a file that ran past its time limit, it names the
// test that was running and what it was waiting for, instead of a row of dots.
//
// Lines of JSON on the file descriptor the runner gives in TEST_PROGRESS_FD,
// written synchronously, so that what was said is there even if the file then
// hangs for good. Without the runner (a file run by hand) nothing is written.

import { randomBytes } from 'node:crypto';
import { writeSync } from 'node:fs';

export const PROGRESS_FD_VARIABLE = 'TEST_PROGRESS_FD';
/** Begins the line (on stderr) with which a file names a failed before hook, which uvu does not show. */
export const BEFORE_HOOK_FAILED = 'before hook failed:';

const fd = Number(process.env[PROGRESS_FD_VARIABLE]) || undefined;
// Read once, and not handed down: a process the test starts has another file at that number.
delete process.env[PROGRESS_FD_VARIABLE];

export type ProgressLine = { test: string } | { wait: string; what: string; ms: number } | { done: string };

function say(line: ProgressLine): void {
  if (fd === undefined) return;
  try {
    writeSync(fd, `${JSON.stringify(line)}\n`);
  } catch {
    // The runner is gone or not listening: progress is only ever a help.
  }
}

/** A test began. */
export function testStarted(name: string): void {
  say({ test: name });
}

/** A wait of at most `ms` began; call the result when it is over. */
export function waitStarted(what: string, ms: number): () => void {
  const id = randomBytes(6).toString('hex');
  say({ wait: id, what: what.split('\n')[0]!.slice(0, 300), ms });
  return () => say({ done: id });
}

/** The runner's side: what a file said, to name what it was doing when it was killed. */
export class ProgressReader {
  #test: string | undefined;
  readonly #waits = new Map<string, { what: string; ms: number; since: number }>();
  #last: { what: string; at: number } | undefined;
  #partial = '';

  readonly now: () => number;

  constructor(now: () => number = Date.now) {
    this.now = now;
  }

  feed(chunk: string): void {
    const lines = (this.#partial + chunk).split('\n');
    this.#partial = lines.pop()!;
    for (const text of lines) {
      let line: ProgressLine;
      try {
        line = JSON.parse(text) as ProgressLine;
      } catch {
        continue;
      }
      if ('test' in line) {
        this.#test = line.test;
        this.#waits.clear();
        this.#last = undefined;
      } else if ('wait' in line) this.#waits.set(line.wait, { what: line.what, ms: line.ms, since: this.now() });
      else if ('done' in line) {
        const w = this.#waits.get(line.done);
        if (w) this.#last = { what: w.what, at: this.now() };
        this.#waits.delete(line.done);
      }
    }
  }

  /** Lines for the report of a killed file. */
  report(): string[] {
    const test =
      this.#test === undefined
        ? 'no test had started (the file hung while loading, or before its first test)'
        : `the test running: "${this.#test}"`;
    const waits = [...this.#waits.values()].map((w) => `waiting for ${w.what} (deadline ${w.ms} ms, waited ${this.now() - w.since} ms)`);
    const none = ['no wait with a deadline was open: an await without one (wait.ts within/until give one)'];
    if (this.#last) none.push(`the last wait that ended: ${this.#last.what}, ${this.now() - this.#last.at} ms before`);
    return [test, ...(waits.length > 0 ? waits : none)];
  }
}
