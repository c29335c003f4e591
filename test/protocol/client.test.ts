// The TypeScript client against a real DrainServer on a real socket.
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { DrainClient } from '../../src/protocol/client.ts';
import { DrainServer, type ServerEvent } from '../../src/protocol/server.ts';
import { tellDrain } from '../support/drain.ts';
import { tempDir } from '../support/proc.ts';
import { until, within } from '../support/wait.ts';

function server(path = join(tempDir(), 'drain.sock')) {
  const events: ServerEvent[] = [];
  const listeners = new Set<() => void>();
  const s = new DrainServer({
    path,
    onEvent: (e) => {
      events.push(e);
      for (const l of [...listeners]) l();
    },
  });
  const event = (type: ServerEvent['type'], n = 1) =>
    until(
      (check) => (listeners.add(check), () => listeners.delete(check)),
      () => (events.filter((e) => e.type === type).length >= n ? events.filter((e) => e.type === type).at(n - 1) : undefined),
      5000,
      `server event ${type} #${n}`,
    );
  return { s, path, events, event };
}

const aborted = (signal: AbortSignal) =>
  within(5000, 'abort', new Promise<void>((r) => (signal.aborted ? r() : signal.addEventListener('abort', () => r()))));

test('without DRAINGUARD_SOCKET the client is a no-op', async () => {
  const c = new DrainClient({ env: {} });
  assert.is(c.enabled, false);
  await within(1000, 'ready', c.ready());
  const end = c.begin();
  end();
  c.drained();
  assert.is(c.draining.aborted, false);
  assert.is(c.deadline.aborted, false);
  assert.is(await c.track(async () => 7), 7);
});

test('draining fires at the drain, deadline at the deadline, drained goes after the last unit of work', async () => {
  const { s, path, events, event } = server();
  await s.listen();
  const c = new DrainClient({ env: { DRAINGUARD_SOCKET: path }, name: 'unit' });
  await within(5000, 'ready', c.ready());
  const hello = (await event('hello')) as Extract<ServerEvent, { type: 'hello' }>;
  assert.is(hello.client.name, 'unit');
  assert.is(hello.client.pid, process.pid);
  const endA = c.begin();
  const endB = c.begin();
  await event('inflight', 2);
  const deadline = Date.now() + 400;
  const drain = tellDrain(s, deadline);
  assert.is(drain.told, 1, 'one client told');
  assert.is(tellDrain(s, deadline + 1000).told, 0, 'a drain is for good: a second one tells no one');
  const drained = drain.answered;
  await aborted(c.draining);
  assert.ok(Math.abs(c.deadlineAt!.getTime() - deadline) < 50);
  assert.is(c.deadline.aborted, false);
  assert.is(c.tryBegin(), undefined, 'no new work once draining');
  endA();
  endA(); // ending twice counts once
  assert.is(c.inflight, 1);
  assert.not.ok(events.some((e) => e.type === 'drained'));
  endB();
  const tally = await within(5000, 'drain done', drained);
  assert.equal(tally, { acknowledged: 1, disconnected: 0 });
  await within(5000, 'drainedSent', c.drainedSent());
  await aborted(c.deadline);
  c.close();
  await s.close();
});

test('drained at once when the drain starts with nothing in flight; manual mode waits for drained()', async () => {
  const { s, path, event } = server();
  await s.listen();
  const auto = new DrainClient({ socketPath: path });
  const manual = new DrainClient({ socketPath: path, autoDrained: false });
  await Promise.all([auto.ready(), manual.ready()]);
  const drain = tellDrain(s, Date.now() + 10_000);
  assert.is(drain.told, 2, 'both clients told');
  const done = drain.answered;
  await aborted(manual.draining);
  await within(5000, 'auto drained', auto.drainedSent());
  await event('drained');
  assert.equal(
    s
      .clients()
      .map((c) => c.drained)
      .sort(),
    [false, true],
  );
  manual.drained();
  assert.equal(await within(5000, 'drain', done), { acknowledged: 2, disconnected: 0 });
  auto.close();
  manual.close();
  await s.close();
});

test('the client connects once the socket appears, and reconnects with its state after a restart', async () => {
  const path = join(tempDir(), 'drain.sock');
  const errors: Error[] = [];
  const c = new DrainClient({ socketPath: path, reconnectDelayMs: [10, 50], onError: (e) => errors.push(e) });
  const end = c.begin();
  const first = server(path);
  await first.s.listen();
  await within(5000, 'ready', c.ready());
  await first.event('hello');
  await first.s.close();
  const second = server(path);
  await second.s.listen();
  const hello = await second.event('hello');
  assert.is(hello.client.name, `pid ${process.pid}`);
  const inflight = (await second.event('inflight')) as Extract<ServerEvent, { type: 'inflight' }>;
  assert.is(inflight.client.inflight, 1, 'the work in flight is told again');
  assert.ok(
    errors.some((e) => /ENOENT|ECONNREFUSED/.test(e.message)),
    'connection errors are reported',
  );
  end();
  c.close();
  await second.s.close();
});

test('reportInflight refuses nonsense', () => {
  const c = new DrainClient({ env: {} });
  assert.throws(() => c.reportInflight(-1), /non-negative integer/);
  assert.throws(() => c.reportInflight(1.5), /non-negative integer/);
});

test.run();
