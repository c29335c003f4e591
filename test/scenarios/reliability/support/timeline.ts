// Checks on what a drainguard run printed: its JSON log on stderr and the
// fixture operator's lines on stdout.

import * as assert from 'uvu/assert';
import type { LogLine, Proc } from '../../../support/proc.ts';

type Match = string | RegExp;
const matches = (line: string, m: Match) => (typeof m === 'string' ? line === m : m.test(line));

/** Asserts that `expected` occur in `lines` in this order (other lines may come between). */
export function inOrder(lines: readonly string[], expected: readonly Match[], what: string): void {
  let at = 0;
  for (const m of expected) {
    const found = lines.findIndex((l, i) => i >= at && matches(l, m));
    assert.ok(found !== -1, `${what}: expected ${expected.join(' < ')}; ${m} missing after position ${at} in:\n${lines.join('\n')}`);
    at = found + 1;
  }
}

export const messages = (p: Proc): string[] => p.logs().map((l) => l.msg);

export function logOf(p: Proc, msg: string): LogLine {
  const line = p.logs().find((l) => l.msg === msg);
  assert.ok(line, `no log "${msg}" in:\n${p.stderr.join('\n')}`);
  return line;
}

export const count = (lines: readonly string[], m: Match): number => lines.filter((l) => matches(l, m)).length;

/** Milliseconds between two drainguard log lines, from their timestamps. */
export const between = (a: LogLine, b: LogLine): number => Date.parse(b.time as string) - Date.parse(a.time as string);

/** The signal counts the fixture prints when it exits. */
export function signalCounts(p: Proc): Record<string, number> {
  const line = p.stdout.find((l) => l.startsWith('counts '));
  assert.ok(line, `the fixture printed no counts:\n${p.stdout.join('\n')}`);
  return JSON.parse(line.slice('counts '.length)) as Record<string, number>;
}

/** No reconcile was cut off by the stop signal. */
export function noWorkInterrupted(p: Proc): void {
  const cut = p.stdout.filter((l) => l.startsWith('work interrupted'));
  assert.equal(cut, [], `reconciles interrupted:\n${p.stdout.join('\n')}`);
}

/** drainguard logged nothing at error level and did not crash. */
export function noErrors(p: Proc): void {
  const errors = p.logs().filter((l) => l.level === 'error');
  assert.equal(errors, [], 'error log lines');
  assert.not.match(p.stderr.join('\n'), /^drainguard( run)?: .*Error/m, 'drainguard crashed');
}
