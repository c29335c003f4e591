// askForDrain's deadlines and retries on a clock the test moves, against a
// socket of the test's own (or none): a missing socket retried until the
// connect window, a silent supervisor given up at the answer timeout, and the
// announced deadline waited for with its slack, each cut by --drain-timeout.
import { type Server, type Socket, createServer } from 'node:net';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { encode } from '../../src/protocol/messages.ts';
import { ANSWER_TIMEOUT_MS, CONNECT_RETRY_MS, type PrestopResult, askForDrain } from '../../src/protocol/control-client.ts';
import { assertEqualJitter } from '../support/backoff.ts';
import { FakeClock } from '../support/fake-clock.ts';
import { tempDir } from '../support/proc.ts';
import { within } from '../support/wait.ts';

const T0 = Date.UTC(2026, 0, 1);

/** What askForDrain came back with, once it has, and when (ms after T0). */
interface Seen {
  result?: PrestopResult;
  at?: number;
}

function watch(clock: FakeClock, pending: Promise<PrestopResult>): Seen {
  const seen: Seen = {};
  void pending.then((result) => Object.assign(seen, { result, at: clock.now() - T0 }));
  return seen;
}

/** Until `done` holds: the socket's events come from the event loop, not from the clock. */
async function until(what: string, done: () => boolean): Promise<void> {
  await within(
    2000,
    what,
    (async () => {
      while (!done()) await new Promise(setImmediate);
    })(),
  );
}

/** The supervisors' sockets a test opened, closed after it, passed or failed. */
const open: { close(): Promise<void> }[] = [];
test.after.each(async () => {
  for (const s of open.splice(0)) await s.close();
});

/** A supervisor's socket that hands each connection, once its request has come, to `onRequest`. */
async function supervisor(onRequest: (socket: Socket) => void): Promise<{ path: string; requests: () => number }> {
  const path = join(tempDir(), 'drain.sock');
  const sockets = new Set<Socket>();
  let requests = 0;
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.once('data', () => {
      requests++;
      onRequest(socket);
    });
  });
  await new Promise<void>((resolve) => server.listen(path, resolve));
  open.push({
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  });
  return { path, requests: () => requests };
}

test('no socket: retried with a growing backoff while the next try starts inside the connect window, then unreachable', async () => {
  const clock = new FakeClock(T0);
  const path = join(tempDir(), 'missing.sock');
  const seen = watch(clock, askForDrain({ socket: path, clock }));
  const waits: number[] = [];
  for (;;) {
    await until('the next try or the result', () => clock.nextAt !== undefined || seen.result !== undefined);
    if (seen.result) break;
    waits.push(clock.nextAt! - clock.now());
    await clock.advance(clock.nextAt! - clock.now());
  }
  const r = seen.result!;
  assert.is(r.ok, false);
  assert.is(!r.ok && r.code, 'DG_PRESTOP_UNREACHABLE');
  assert.match(!r.ok ? r.message : '', `no socket at ${path}`);
  // 50 ms doubling to 400 ms, each between half its ceiling and the ceiling.
  assertEqualJitter(waits, 50, 400, 'the connect tries');
  const gaveUpAt = seen.at!;
  assert.ok(gaveUpAt < CONNECT_RETRY_MS, `no try starts after the connect window (${gaveUpAt} ms)`);
  assert.ok(gaveUpAt >= CONNECT_RETRY_MS - 400, `no try left out that fit in it (${gaveUpAt} ms)`);
});

test('no socket and a --drain-timeout shorter than the connect window: the tries stop inside the timeout', async () => {
  const clock = new FakeClock(T0);
  const seen = watch(clock, askForDrain({ socket: join(tempDir(), 'missing.sock'), timeoutMs: 300, clock }));
  for (;;) {
    await until('the next try or the result', () => clock.nextAt !== undefined || seen.result !== undefined);
    if (seen.result) break;
    await clock.advance(clock.nextAt! - clock.now());
  }
  assert.is(seen.result?.ok === false && seen.result.code, 'DG_PRESTOP_UNREACHABLE');
  assert.ok(seen.at! < 300, `gave up at ${seen.at} ms`);
});

test('a supervisor that accepts the request and says nothing: given up at the answer timeout, not before', async () => {
  const clock = new FakeClock(T0);
  const s = await supervisor(() => {});
  const seen = watch(clock, askForDrain({ socket: s.path, clock }));
  await until('the request', () => s.requests() === 1);
  await clock.advance(ANSWER_TIMEOUT_MS - 1);
  assert.is(seen.result, undefined);
  await clock.advance(1);
  await until('the result', () => seen.result !== undefined);
  assert.equal(seen.result, {
    ok: false,
    code: 'DG_PRESTOP_NO_ANSWER',
    message: `the drainguard at ${s.path} accepted the connection but did not answer within 5s`,
  });
});

test('a silent supervisor and a --drain-timeout of 3 s: given up at 3 s, and the message says so', async () => {
  const clock = new FakeClock(T0);
  const s = await supervisor(() => {});
  const seen = watch(clock, askForDrain({ socket: s.path, timeoutMs: 3000, clock }));
  await until('the request', () => s.requests() === 1);
  await clock.advance(2999);
  assert.is(seen.result, undefined);
  await clock.advance(1);
  await until('the result', () => seen.result !== undefined);
  assert.match(seen.result?.ok === false ? seen.result.message : '', /did not answer within 3s$/);
});

test('a drain started with 1 s left: waited for 2 s beyond it, then given up as a deadline', async () => {
  const clock = new FakeClock(T0);
  const s = await supervisor((socket) =>
    socket.write(
      encode({ type: 'drain-started', deadline: new Date(T0 + 1000).toISOString(), remainingMs: 1000, clients: 2, joined: false }),
    ),
  );
  const seen = watch(clock, askForDrain({ socket: s.path, clock }));
  await until('the request', () => s.requests() === 1);
  await until('drain-started read', () => clock.nextAt === T0 + 3000);
  await clock.advance(2999);
  assert.is(seen.result, undefined);
  await clock.advance(1);
  await until('the result', () => seen.result !== undefined);
  assert.equal(seen.result, { ok: true, outcome: 'deadline', clients: 2, joined: false, gaveUp: true });
});

test('a drain that ends in time: its outcome, and no timer left behind', async () => {
  const clock = new FakeClock(T0);
  const s = await supervisor((socket) => {
    socket.write(
      encode({ type: 'drain-started', deadline: new Date(T0 + 1000).toISOString(), remainingMs: 1000, clients: 1, joined: true }),
    );
    socket.write(encode({ type: 'drain-ended', outcome: 'drained', durationMs: 12 }));
  });
  const seen = watch(clock, askForDrain({ socket: s.path, clock }));
  await until('the result', () => seen.result !== undefined);
  assert.equal(seen.result, { ok: true, outcome: 'drained', durationMs: 12, clients: 1, joined: true, gaveUp: false });
  assert.is(clock.nextAt, undefined);
  assert.is(clock.now(), T0);
});

test.run();
