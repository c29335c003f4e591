// waitForIdle's rules of time against a stand-in of controller-runtime's
// metrics endpoint (metrics-stand-in.ts; held to the real one in
// idle-metrics.test.ts): which scrape decides, what a refused, failing or
// silent endpoint costs, and the pause between scrapes.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { waitForIdle } from '../../src/idle/idle-metrics.ts';
import { freePort } from '../support/free-port.ts';
import { MetricsStandIn } from './metrics-stand-in.ts';

const soon = (ms: number) => Date.now() + ms;
const open: MetricsStandIn[] = [];
const standIn = async (...answers: ConstructorParameters<typeof MetricsStandIn>[0]) => {
  const s = await new MetricsStandIn(answers).listen();
  open.push(s);
  return s;
};

test.after.each(async () => {
  for (const s of open.splice(0)) await s.close();
});

test('an idle endpoint: idle at the first scrape, which sent accept: text/plain', async () => {
  const s = await standIn({ active: 0 });
  const r = await waitForIdle({ url: s.url, intervalMs: 20, deadline: soon(5_000) });
  assert.equal(r, { outcome: 'idle', scrapes: 1, failed: 0, lastActive: 0, lastError: undefined });
  assert.equal(s.scrapes.length, 1);
  assert.is(s.scrapes[0]!.accept, 'text/plain');
});

test('an endpoint not listening yet: the refused scrapes fail, the first one answered decides', async () => {
  // What a manager's metrics server is when its goroutine has not listened yet (controller-runtime does not wait for it before its caches sync).
  const port = await freePort();
  const late = new MetricsStandIn([{ active: 0 }]);
  open.push(late);
  const failures: [string, number][] = [];
  let listening: Promise<unknown> | undefined;
  const r = await waitForIdle({
    url: `http://127.0.0.1:${port}/metrics`,
    intervalMs: 20,
    deadline: soon(5_000),
    onFailure: (error, scrape) => {
      failures.push([error, scrape]);
      listening ??= late.listen(port);
    },
  });
  assert.is(r.outcome, 'idle');
  assert.ok(failures.length >= 1);
  assert.equal(failures[0], [`connect ECONNREFUSED 127.0.0.1:${port}`, 1]);
  assert.is(r.failed, failures.length);
  assert.is(r.scrapes, failures.length + 1, 'idle at the first scrape the endpoint answered');
  assert.is(late.scrapes.length, 1);
  assert.match(r.lastError ?? '', /ECONNREFUSED/, 'the failure is still told after the idle scrape');
});

test('busy, then idle: idle at the first scrape that reads 0, not before', async () => {
  const s = await standIn({ active: 2 });
  const pending = waitForIdle({ url: s.url, intervalMs: 20, deadline: soon(10_000) });
  await s.scraped(3);
  s.answer({ active: 0 });
  const r = await pending;
  assert.is(r.outcome, 'idle');
  assert.is(r.scrapes, s.scrapes.length);
  assert.equal(
    s.scrapes.map((x) => (x.answer as { active: number }).active),
    [...Array(s.scrapes.length - 1).fill(2), 0],
  );
  assert.is(r.failed, 0);
});

test('the pause between scrapes: a busy endpoint is scraped once per interval at most, until the deadline', async () => {
  const s = await standIn({ active: 1 });
  const r = await waitForIdle({ url: s.url, intervalMs: 100, deadline: soon(700) });
  assert.is(r.outcome, 'deadline');
  assert.is(r.lastActive, 1);
  // A busy machine makes fewer scrapes, never more: 700 ms hold at most 7 pauses.
  assert.ok(s.scrapes.length >= 2 && s.scrapes.length <= 8, `${s.scrapes.length} scrapes`);
  assert.is(r.scrapes, s.scrapes.length);
});

test('failing answers: each is a failure, told with its scrape, and the last one is reported', async () => {
  const s = await standIn(
    { status: 503 },
    { status: 503 },
    { body: 'controller_runtime_active_workers{controller="x"} many\n' },
    { active: 1 },
  );
  const failures: [string, number][] = [];
  const pending = waitForIdle({ url: s.url, intervalMs: 20, deadline: soon(10_000), onFailure: (e, n) => failures.push([e, n]) });
  await s.scraped(5);
  s.answer({ active: 0 });
  const r = await pending;
  assert.equal(failures, [
    ['HTTP 503', 1],
    ['HTTP 503', 2],
    ['unreadable sample: controller_runtime_active_workers{controller="x"} many', 3],
  ]);
  assert.is(r.outcome, 'idle');
  assert.is(r.failed, 3);
  assert.is(r.lastError, 'unreadable sample: controller_runtime_active_workers{controller="x"} many');
});

test('a silent endpoint: with a scrape timeout each silent scrape fails and the next is made', async () => {
  const s = await standIn('silent', { active: 0 });
  const failures: [string, number][] = [];
  const r = await waitForIdle({
    url: s.url,
    intervalMs: 20,
    scrapeTimeoutMs: 200,
    deadline: soon(10_000),
    onFailure: (e, n) => failures.push([e, n]),
  });
  assert.equal(failures, [['no answer within 200 ms', 1]]);
  assert.equal(r, { outcome: 'idle', scrapes: 2, failed: 1, lastActive: 0, lastError: 'no answer within 200 ms' });
});

test('a silent endpoint without a scrape timeout: one scrape, cut at the deadline, not counted as a failure', async () => {
  const s = await standIn('silent');
  const failures: string[] = [];
  const r = await waitForIdle({ url: s.url, intervalMs: 20, deadline: soon(300), onFailure: (e) => failures.push(e) });
  assert.equal(r, { outcome: 'deadline', scrapes: 1, failed: 0, lastActive: undefined, lastError: 'no answer before the deadline' });
  assert.equal(failures, []);
});

test.run();
