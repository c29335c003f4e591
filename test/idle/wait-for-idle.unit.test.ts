// waitForIdle's rules of time on a clock the test moves, with scrapes the test
// answers: the pause between scrapes, the last pause cut to the deadline, a
// silent scrape given up at its timeout and cut at the deadline, an abort.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { type Fetch, type IdleResult, waitForIdle } from '../../src/idle/idle-metrics.ts';
import { FakeClock } from '../support/fake-clock.ts';
import { within } from '../support/wait.ts';

const URL_ = 'http://127.0.0.1:8080/metrics';
const T0 = Date.UTC(2026, 0, 1);

/** A metrics endpoint that answers after `latencyMs` with the workers `active()` gives, and notes when each scrape came (ms after T0). */
function answering(clock: FakeClock, active: () => number, latencyMs = 0): { fetch: Fetch; at: number[] } {
  const at: number[] = [];
  const fetch: Fetch = async () => {
    at.push(clock.now() - T0);
    if (latencyMs > 0) await clock.sleep(latencyMs);
    return { status: 200, body: `controller_runtime_active_workers{controller="a"} ${active()}\n` };
  };
  return { fetch, at };
}

/** A metrics endpoint that never answers: each scrape ends only when its signal aborts. */
function silent(clock: FakeClock): { fetch: Fetch; at: number[] } {
  const at: number[] = [];
  const fetch: Fetch = (_url, { signal }) => {
    at.push(clock.now() - T0);
    return new Promise((_, reject) => signal.addEventListener('abort', () => reject(new Error('aborted')), { once: true }));
  };
  return { fetch, at };
}

/** The wait's result once it has one, else undefined. */
function watch(pending: Promise<IdleResult>): () => IdleResult | undefined {
  let result: IdleResult | undefined;
  void pending.then((r) => (result = r));
  return () => result;
}

test('busy: the next scrape an interval after the answer to the one before; idle at the first that reads 0', async () => {
  const clock = new FakeClock(T0);
  let active = 2;
  const endpoint = answering(clock, () => active, 20);
  const pending = waitForIdle({ url: URL_, intervalMs: 50, scrapeTimeoutMs: 1000, deadline: T0 + 10_000, fetch: endpoint.fetch, clock });
  const result = watch(pending);
  await clock.advance(160);
  assert.equal(endpoint.at, [0, 70, 140]);
  active = 0;
  await clock.advance(69);
  assert.equal(endpoint.at, [0, 70, 140, 210]);
  assert.is(result(), undefined, 'idle only once the scrape at 210 is answered');
  await clock.advance(1);
  assert.equal(await within(1000, 'the wait', pending), { outcome: 'idle', scrapes: 4, failed: 0, lastActive: 0, lastError: undefined });
  assert.is(clock.now() - T0, 230);
  assert.is(clock.nextAt, undefined, 'no timer left behind');
});

test('busy until the deadline: the last pause is cut to it, and the wait ends there, not an interval later', async () => {
  const clock = new FakeClock(T0);
  const endpoint = answering(clock, () => 1);
  const pending = waitForIdle({ url: URL_, intervalMs: 300, deadline: T0 + 1000, fetch: endpoint.fetch, clock });
  const result = watch(pending);
  await clock.advance(999);
  assert.is(result(), undefined);
  await clock.advance(1);
  assert.equal(await within(1000, 'the wait', pending), {
    outcome: 'deadline',
    scrapes: 4,
    failed: 0,
    lastActive: 1,
    lastError: undefined,
  });
  assert.equal(endpoint.at, [0, 300, 600, 900]);
  assert.is(clock.nextAt, undefined, 'no timer left behind');
});

test('a silent endpoint: each scrape given up at its timeout, the last one cut at the deadline and not counted as failed', async () => {
  const clock = new FakeClock(T0);
  const endpoint = silent(clock);
  const failures: [string, number, number][] = [];
  const pending = waitForIdle({
    url: URL_,
    intervalMs: 50,
    scrapeTimeoutMs: 1000,
    deadline: T0 + 2500,
    fetch: endpoint.fetch,
    clock,
    onFailure: (error, scrape) => failures.push([error, scrape, clock.now() - T0]),
  });
  const result = watch(pending);
  await clock.advance(2499);
  assert.is(result(), undefined);
  assert.equal(failures, [
    ['no answer within 1000 ms', 1, 1000],
    ['no answer within 1000 ms', 2, 2050],
  ]);
  await clock.advance(1);
  assert.equal(await within(1000, 'the wait', pending), {
    outcome: 'deadline',
    scrapes: 3,
    failed: 2,
    lastActive: undefined,
    lastError: 'no answer within 1000 ms',
  });
  assert.equal(endpoint.at, [0, 1050, 2100], 'the third scrape, 400 ms before the deadline, has no timeout of its own');
  assert.is(clock.nextAt, undefined, 'no timer left behind');
});

test('aborted in a pause: the wait ends at once, with no timer left', async () => {
  const clock = new FakeClock(T0);
  const endpoint = answering(clock, () => 1);
  const abort = new AbortController();
  const pending = waitForIdle({ url: URL_, intervalMs: 500, deadline: T0 + 10_000, fetch: endpoint.fetch, clock, signal: abort.signal });
  await clock.advance(100);
  abort.abort();
  assert.equal(await within(1000, 'the wait', pending), { outcome: 'aborted', scrapes: 1, failed: 0, lastActive: 1, lastError: undefined });
  assert.is(clock.now() - T0, 100);
  assert.is(clock.nextAt, undefined);
});

test.run();
