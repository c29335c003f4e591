// The runner's reading of a test file's progress (test/support/progress.ts):
// what it says about a file it killed, from the lines the file wrote, on a
// clock the test moves.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ProgressReader } from './progress.ts';

function reader() {
  let now = 1_000;
  const r = new ProgressReader(() => now);
  return { r, at: (t: number) => (now = t), say: (...lines: object[]) => r.feed(lines.map((l) => `${JSON.stringify(l)}\n`).join('')) };
}

test('names the test running and each wait still open, with its deadline and how long it waited', () => {
  const { r, at, say } = reader();
  say(
    { test: 'first' },
    { wait: 'a', what: 'ready', ms: 5000 },
    { done: 'a' },
    { test: 'second' },
    { wait: 'b', what: 'the Lease collected', ms: 60_000 },
  );
  say({ wait: 'c', what: 'the guard set', ms: 10_000 });
  at(4_000);
  assert.equal(r.report(), [
    'the test running: "second"',
    'waiting for the Lease collected (deadline 60000 ms, waited 3000 ms)',
    'waiting for the guard set (deadline 10000 ms, waited 3000 ms)',
  ]);
});

test('no wait open: an await without a deadline, after the last wait that ended', () => {
  const { r, at, say } = reader();
  say({ test: 'watch' }, { wait: 'a', what: 'the events', ms: 10_000 });
  at(1_500);
  say({ done: 'a' });
  at(241_500);
  assert.equal(r.report(), [
    'the test running: "watch"',
    'no wait with a deadline was open: an await without one (wait.ts within/until give one)',
    'the last wait that ended: the events, 240000 ms before',
  ]);
});

test('lines split across chunks are read whole; other text is passed over; before any test it says so', () => {
  const { r } = reader();
  assert.equal(r.report()[0], 'no test had started (the file hung while loading, or before its first test)');
  r.feed('{"test":"spl');
  r.feed('it"}\nnot json\n{"wait":"x","what":"w","ms":1}');
  assert.equal(r.report(), [
    'the test running: "split"',
    'no wait with a deadline was open: an await without one (wait.ts within/until give one)',
  ]);
  r.feed('\n');
  assert.equal(r.report()[1], 'waiting for w (deadline 1 ms, waited 0 ms)');
});

test.run();
