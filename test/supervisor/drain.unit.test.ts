// The drain on a real socket with a clock the test moves: how each way of
// ending it is told apart, and that its deadline is the one announced.
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { DrainClient } from '../../src/protocol/client.ts';
import { DrainServer } from '../../src/protocol/server.ts';
import { Drain, type DrainOptions, type DrainResult } from '../../src/supervisor/drain.ts';
import type { DrainSource } from '../../src/supervisor/observer.ts';
import { type Logger, silentLogger } from '../../src/log/logger.ts';
import { tempDir } from '../support/proc.ts';
import { within } from '../support/wait.ts';
import { FakeClock, settle } from '../support/fake-clock.ts';

async function setup(options: Partial<DrainOptions> = {}, timeoutMs = 3000) {
  const clock = new FakeClock();
  const server = new DrainServer({ path: join(tempDir(), 'drain.sock'), clock });
  await server.listen();
  const ends: DrainResult[] = [];
  const drain = new Drain({ server, clock, logger: silentLogger, deadline: () => clock.now() + timeoutMs, ...options });
  // Each drain that starts records its end; a joining request does not.
  const request = (source: DrainSource) => {
    const ticket = drain.request(source);
    if (!ticket.joined) void ticket.ended.then((r) => ends.push(r));
    return ticket;
  };
  const clients: DrainClient[] = [];
  const client = async () => {
    const c = new DrainClient({ socketPath: server.path, autoDrained: false });
    clients.push(c);
    await within(5000, 'client ready', c.ready());
    return c;
  };
  const close = async () => {
    for (const c of clients) c.close();
    await server.close();
  };
  return { clock, server, drain, request, ends, client, close };
}

const draining = (c: DrainClient) =>
  within(5000, 'drain message', new Promise<void>((r) => (c.draining.aborted ? r() : c.draining.addEventListener('abort', () => r()))));

test('no client: the drain ends at once, as no-client', async () => {
  const s = await setup();
  const ticket = s.request('signal');
  assert.equal(await ticket.ended, { outcome: 'no-client', durationMs: 0 });
  assert.is(ticket.joined, false);
  assert.equal(ticket.deadline, ticket.startedAt + 3000);
  await s.close();
});

test('a deadline that moves earlier (the Pod deleted again, shorter) ends the drain then; one that moves later changes nothing', async () => {
  let deadline = Date.UTC(2026, 0, 1) + 20_000;
  const s = await setup({ deadline: () => deadline });
  const c = await s.client();
  const ticket = s.request('signal');
  await draining(c);
  assert.is(ticket.deadline, deadline);
  await s.clock.advance(1000);
  deadline += 60_000;
  s.drain.reschedule();
  deadline = Date.UTC(2026, 0, 1) + 4000;
  s.drain.reschedule();
  await s.clock.advance(2999);
  assert.equal(s.ends, [], 'still draining 1 ms before the new deadline');
  await s.clock.advance(1);
  assert.equal(s.ends, [{ outcome: 'deadline', durationMs: 4000 }]);
  await s.close();
});

test('a drain cut short before it started (a second signal during the read of the Pod) ends as it starts', async () => {
  const s = await setup();
  await s.client();
  s.drain.cutShort();
  const ticket = s.request('signal');
  assert.equal(await within(5000, 'end', ticket.ended), { outcome: 'cut-short', durationMs: 0 });
  await s.close();
});

test('every client said drained: drained, after the time it took on the clock', async () => {
  const s = await setup();
  const [a, b] = [await s.client(), await s.client()];
  const ticket = s.request('signal');
  assert.is(ticket.clients, 2);
  await Promise.all([draining(a), draining(b)]);
  await s.clock.advance(1200);
  a.drained();
  b.drained();
  assert.equal(await within(5000, 'end', ticket.ended), { outcome: 'drained', durationMs: 1200 });
  await s.close();
});

test('a client that never says drained: the drain ends at its deadline, not a moment before', async () => {
  const s = await setup();
  const a = await s.client();
  const ticket = s.request('signal');
  await draining(a);
  await s.clock.advance(2999);
  assert.equal(s.ends, [], 'still draining 1 ms before the deadline');
  await s.clock.advance(1);
  assert.equal(s.ends, [{ outcome: 'deadline', durationMs: 3000 }]);
  assert.equal(await ticket.ended, s.ends[0]);
  await s.close();
});

test('a client that disconnects counts as done: disconnected', async () => {
  const s = await setup();
  const a = await s.client();
  const b = await s.client();
  const ticket = s.request('signal');
  await Promise.all([draining(a), draining(b)]);
  a.drained();
  b.close();
  assert.is((await within(5000, 'end', ticket.ended)).outcome, 'disconnected');
  await s.close();
});

test('cut short by a second signal; a later request joins the drain under way', async () => {
  const s = await setup();
  await s.client();
  const first = s.request('signal');
  const second = s.request('socket');
  assert.is(second.joined, true);
  assert.is(second.deadline, first.deadline);
  s.drain.cutShort();
  assert.is((await first.ended).outcome, 'cut-short');
  assert.is(await second.ended, await first.ended, 'one drain, one end');
  assert.is(s.ends.length, 1, 'ended once');
  await s.close();
});

test('the operator exiting ends the drain: child-exited', async () => {
  let exit!: () => void;
  const s = await setup({ operatorGone: new Promise<void>((r) => (exit = r)) });
  await s.client();
  const ticket = s.request('signal');
  exit();
  assert.is((await within(5000, 'end', ticket.ended)).outcome, 'child-exited');
  await s.close();
});

test('no client and idle metrics: the drain waits for idle, or for its deadline', async () => {
  const idle = await setup({ untilIdle: { wait: async () => 'idle', summary: () => ({}) } });
  assert.is((await idle.request('signal').ended).outcome, 'idle');
  await idle.close();
  let deadlineSeen: number | undefined;
  const busy = await setup({
    untilIdle: {
      wait: (deadline, signal) => ((deadlineSeen = deadline), new Promise((r) => signal.addEventListener('abort', () => r('aborted')))),
      summary: () => ({}),
    },
  });
  const ticket = busy.request('signal');
  assert.is(deadlineSeen, ticket.deadline);
  await busy.clock.advance(3000);
  await settle();
  assert.is((await ticket.ended).outcome, 'deadline', 'the operator never went idle: the wait ended at the deadline');
  await busy.close();
});

test('no time left to drain with a client connected: the drain ends at once, with a warning that says how to get time', async () => {
  const warnings: string[] = [];
  const logger: Logger = { ...silentLogger, warn: (msg: string) => void warnings.push(msg), with: () => logger };
  const s = await setup({ logger }, 0);
  await s.client();
  const ticket = s.request('signal');
  await s.clock.advance(0);
  assert.equal((await within(5000, 'drain end', ticket.ended)).outcome, 'deadline');
  const zero = warnings.find((w) => w.startsWith('the drain timeout is 0'));
  assert.ok(zero?.includes('raise terminationGracePeriodSeconds or DRAINGUARD_GRACE_PERIOD'), warnings.join(' | '));
  await s.close();
});

test.run();
