// Hostile input on the drain socket of the built executable: at least
// FUZZ_FRAMES random and mutated frames, thousands of idle, slow and half-sent
// connections, lines dribbled a byte at a time. drainguard must answer every
// connection as the protocol says, stay up, keep its memory bounded, give back
// every descriptor, and still drain the real operator on time.

import { once } from 'node:events';
import { type Socket, connect } from 'node:net';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { EXE, NODE, Proc, fixture, tempDir } from '../../support/proc.ts';
import { until, within } from '../../support/wait.ts';
import { MAX_LINE_BYTES, predict, transcript } from './support/frames.ts';
import { alive, countSockets, descriptors, memory, mib, openFileLimit } from './support/procfs.ts';
import { type Prng, prng } from '../../support/random.ts';
import { sizes } from './support/sizes.ts';
import { inOrder, logOf, noErrors, noWorkInterrupted } from './support/timeline.ts';

const OPERATOR = fixture('operator.ts');
const DRAIN_TIMEOUT_MS = 4000;
const SLACK_MS = 1500;
const WORKERS = 8;
const SLOW_CLIENTS = 20;
const DRIBBLERS = 16;
const DRIBBLE_BYTES = 8 * 1024;
/** The drain socket's caps (docs/protocol.md, "Bounds"): 1024 connections, 128 of them yet to say hello. */
const MAX_CONNECTIONS = 1024;
const MAX_UNGREETED = 128;
/** Held connections that never say hello: the cap on those leaves room for the dribblers' and workers' fresh ones. */
const HELD_UNGREETED = MAX_UNGREETED - WORKERS - DRIBBLERS - 8;

function start(socket: string, wrapper: string[] = []): Proc {
  const args = ['run', '--', NODE, OPERATOR];
  const env = {
    DRAINGUARD_SOCKET: socket,
    DRAINGUARD_DRAIN_TIMEOUT: `${DRAIN_TIMEOUT_MS}ms`,
    FIXTURE_WORK: '1000',
    FIXTURE_WORK_AT: 'usr2',
  };
  return wrapper.length ? new Proc(wrapper[0]!, [...wrapper.slice(1), EXE, ...args], env) : new Proc(EXE, args, env);
}

/** Connects; a full listen backlog (EAGAIN on a Unix socket) is retried until drainguard accepts. */
async function open(path: string): Promise<Socket> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const socket = connect(path);
    const outcome = await within(
      10_000,
      `a connection to ${path}`,
      new Promise<NodeJS.ErrnoException | undefined>((resolve) => {
        socket.once('connect', () => resolve(undefined));
        socket.once('error', (e) => resolve(e));
      }),
    );
    if (!outcome) {
      socket.on('error', () => {});
      return socket;
    }
    if (outcome.code !== 'EAGAIN' || Date.now() > deadline) throw outcome;
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** Opens `n` connections, a batch at a time (the listen backlog is finite). */
async function openMany(path: string, n: number): Promise<Socket[]> {
  const sockets: Socket[] = [];
  while (sockets.length < n)
    sockets.push(...(await Promise.all(Array.from({ length: Math.min(100, n - sockets.length) }, () => open(path)))));
  return sockets;
}

const write = (socket: Socket, data: Buffer | string): Promise<void> =>
  new Promise((resolve, reject) => socket.write(data, (err) => (err ? reject(err) : resolve())));

function closeAll(sockets: Iterable<Socket>): void {
  for (const s of sockets) s.destroy();
}

/** Sends `bytes` whole, in random pieces, or one byte per write; returns what drainguard answered before closing. */
async function exchange(path: string, bytes: Buffer, how: 'whole' | 'pieces' | 'bytes', random: Prng): Promise<string> {
  const socket = await open(path);
  const received: Buffer[] = [];
  socket.on('data', (d: Buffer) => received.push(d));
  const closed = once(socket, 'close');
  // drainguard may answer a bad line and close while the rest is still being sent: then the sending ends.
  let peerEnded = false;
  socket.once('end', () => (peerEnded = true));
  const send = async (piece: Buffer) => {
    if (peerEnded || socket.destroyed) return false;
    try {
      await write(socket, piece);
      return true;
    } catch (err) {
      if (['EPIPE', 'ECONNRESET', 'ERR_STREAM_DESTROYED', 'ERR_STREAM_WRITE_AFTER_END'].includes((err as NodeJS.ErrnoException).code ?? ''))
        return false;
      throw err;
    }
  };
  if (how === 'whole') await send(bytes);
  else if (how === 'bytes') {
    for (let i = 0; i < bytes.length; i++) if (!(await send(bytes.subarray(i, i + 1)))) break;
  } else {
    for (let i = 0; i < bytes.length;) {
      const n = 1 + random.int(4096);
      if (!(await send(bytes.subarray(i, i + n)))) break;
      i += n;
    }
  }
  if (!socket.destroyed) socket.end();
  await within(10_000, 'the connection to close', closed);
  return Buffer.concat(received).toString('utf8');
}

const show = (bytes: Buffer) =>
  JSON.stringify(bytes.subarray(0, 300).toString('latin1')) + (bytes.length > 300 ? ` ... (${bytes.length} bytes)` : '');

test('fuzz: hostile frames and connections; drainguard stays up, bounded, leak-free, and drains on time', async () => {
  const random = prng(sizes.seed);
  console.log(`  seed ${sizes.seed} (replay with FUZZ_SEED=${sizes.seed})`);
  const dir = tempDir();
  const socket = join(dir, 'drain.sock');
  const p = start(socket);
  await p.line('ready');
  const pid = p.pid;
  const before = memory(pid);
  const baseFds = descriptors(pid).length;

  // Connections held open up to the socket's cap: greeted, never reading or stopped mid-line (opened a few
  // at a time, each greeting at once); then as many silent or stopped mid-line before hello as the cap on
  // those leaves room for (the hello deadline closes them after 10 s).
  const room = MAX_CONNECTIONS - 1 - WORKERS - DRIBBLERS - SLOW_CLIENTS - 8;
  const idle = Math.max(0, Math.min(sizes.idleConnections, room, openFileLimit('self') - 400, openFileLimit(pid) - 200));
  const halfLine = () => Buffer.alloc(1 + random.int(MAX_LINE_BYTES - 1), '{');
  const held: Socket[] = [];
  let halfSent = 0;
  while (held.length < idle - HELD_UNGREETED) {
    for (const s of await openMany(socket, Math.min(16, idle - HELD_UNGREETED - held.length))) {
      s.pause();
      s.write('{"type":"hello","protocol":1,"name":"fuzz-idle"}\n');
      if (random.int(10) < 2) {
        s.write(halfLine());
        halfSent++;
      }
      held.push(s);
    }
  }
  for (const s of await openMany(socket, Math.min(HELD_UNGREETED, idle))) {
    if (random.int(10) < 3) {
      s.write(halfLine());
      halfSent++;
    }
    held.push(s);
  }
  // Partial lines a byte at a time, after hello: the most expensive way to make drainguard hold a line.
  const dribblers = await openMany(socket, DRIBBLERS);
  const dribbling = Promise.all(
    dribblers.map(async (s) => {
      await write(s, '{"type":"hello","protocol":1,"name":"fuzz-dribbler"}\n');
      for (let i = 0; i < DRIBBLE_BYTES; i++) await write(s, i === 0 ? '{' : 'a');
    }),
  ).then(
    () => undefined,
    (err: Error) => err,
  );

  let frames = 0;
  let connections = 0;
  const how = { whole: 0, pieces: 0, bytes: 0 };
  const started = Date.now();
  await Promise.all(
    Array.from({ length: WORKERS }, async () => {
      while (frames < sizes.fuzzFrames) {
        // One generator per connection, seeded from its number: a failure replays whatever the interleaving.
        const id = connections++;
        const random = prng(sizes.seed + id * 7919);
        const t = transcript(random, 1 + random.int(120));
        const expected = predict(t.bytes);
        const bytes = t.bytes.subarray(0, expected.sendBytes);
        const mode = bytes.length < 2048 && random.int(40) === 0 ? 'bytes' : random.int(4) === 0 ? 'pieces' : 'whole';
        frames += expected.lines;
        how[mode]++;
        const answer = await exchange(socket, bytes, mode, random);
        const lines = answer
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l) as { type: string; protocol?: number; message?: string });
        const context = `seed ${sizes.seed}, connection ${id}, sent ${mode} ${show(bytes)}\nanswer: ${answer}`;
        assert.equal(lines.filter((m) => m.type === 'welcome').length, expected.welcome ? 1 : 0, `welcome: ${context}`);
        assert.equal(lines.filter((m) => m.type === 'error').length, expected.error ? 1 : 0, `error: ${context}`);
        assert.ok(
          lines.every((m) => m.type === 'welcome' || m.type === 'error'),
          `unexpected message: ${context}`,
        );
        if (expected.welcome) assert.equal(lines[0], { type: 'welcome', protocol: 1 }, context);
        if (expected.error) assert.equal(lines.at(-1)!.type, 'error', context);
        assert.ok(p.child.exitCode === null && alive(pid), `drainguard died: ${context}\n${p.stderr.slice(-20).join('\n')}`);
      }
    }),
  );
  const dribbleError = await within(60_000, 'the dribblers', dribbling);
  assert.not.ok(dribbleError, `a connection sending a partial line was dropped: ${dribbleError}\n${p.stderr.slice(-10).join('\n')}`);
  const fuzzMs = Date.now() - started;
  const loaded = memory(pid);
  const fdsLoaded = descriptors(pid).length;

  // Every held connection closed: every descriptor comes back.
  closeAll(held);
  closeAll(dribblers);
  await until(
    (check) => {
      const t = setInterval(check, 25);
      return () => clearInterval(t);
    },
    () => (descriptors(pid).length <= baseFds ? true : undefined),
    10_000,
    `drainguard's descriptors back to ${baseFds}`,
  );
  const after = memory(pid);

  console.log(
    `  ${frames} frames on ${connections} connections in ${fuzzMs} ms (${JSON.stringify(how)}); held ${idle} connections (${halfSent} mid-line) + ${DRIBBLERS} dribbling ${DRIBBLE_BYTES} bytes a byte at a time`,
  );
  console.log(
    `  drainguard RSS: before ${mib(before.rssKiB)}, peak ${mib(loaded.peakKiB)}, loaded ${mib(loaded.rssKiB)}, after ${mib(after.rssKiB)}; fds ${baseFds} -> ${fdsLoaded} -> ${descriptors(pid).length}`,
  );
  assert.ok(frames >= sizes.fuzzFrames);
  // What drainguard may hold: a little per connection, one line of at most 64 KiB per half-sent one,
  // and room for the runtime's own heap growth.
  const boundKiB = before.rssKiB + 96 * 1024 + (idle + DRIBBLERS) * 8 + (halfSent + DRIBBLERS) * 64;
  assert.ok(loaded.peakKiB < boundKiB, `peak RSS ${mib(loaded.peakKiB)} above the bound ${mib(boundKiB)}`);
  assert.ok(
    p.stdout.every((l) => !l.startsWith('client error')),
    `the real client lost its connection:\n${p.stdout.join('\n')}`,
  );

  // The real operator drains on time while clients that never read nor acknowledge hold on.
  const slow = await openMany(socket, SLOW_CLIENTS);
  for (const s of slow) {
    s.pause();
    s.write('{"type":"hello","protocol":1,"name":"fuzz-slow"}\n');
  }
  process.kill(logOf(p, 'operator started').pid as number, 'SIGUSR2');
  await p.line('work start 0');
  p.kill('SIGTERM');
  const drain = await p.line(/^drain remainingMs=/);
  assert.ok(Number(drain.split('=')[1]) > DRAIN_TIMEOUT_MS - 1000, `drain reached the operator late: ${drain}`);
  assert.equal((await p.exit()).code, 0);
  closeAll(slow);
  inOrder(p.stdout, [/^drain /, 'work done 0', 'signal SIGTERM'], 'stdout');
  noWorkInterrupted(p);
  const ended = logOf(p, 'drain ended');
  assert.equal(ended.outcome, 'deadline');
  assert.ok((ended.durationMs as number) < DRAIN_TIMEOUT_MS + SLACK_MS, `the kill was held ${ended.durationMs} ms`);
  assert.ok(
    !(ended.waitingFor as unknown[]).includes('fixture') && (ended.waitingFor as unknown[]).includes('fuzz-slow'),
    JSON.stringify(ended.waitingFor),
  );
  assert.ok(p.logs().some((l) => l.msg === 'client drained' && l.name === 'fixture'));
  noErrors(p);
  console.log(`  drain with ${SLOW_CLIENTS} unresponsive clients ended at the deadline after ${ended.durationMs} ms`);
});

test('out of descriptors: a connection flood past the open-file limit does not bring drainguard down', async () => {
  const dir = tempDir();
  const socket = join(dir, 'drain.sock');
  const p = start(socket, ['sh', '-c', 'ulimit -n 96 && exec "$0" "$@"']);
  await p.line('ready');
  const pid = p.pid;
  assert.equal(openFileLimit(pid), 96);
  const before = countSockets(descriptors(pid));
  const flood: Socket[] = [];
  const attempts = 300;
  await Promise.all(
    Array.from({ length: attempts }, async () => {
      const s = connect(socket);
      s.on('error', () => {});
      flood.push(s);
      s.write('{"type":"hello","protocol":1,"name":"flood"}\n');
      await within(10_000, 'connect', Promise.race([once(s, 'connect'), once(s, 'close')]));
    }),
  );
  assert.ok(alive(pid) && p.child.exitCode === null, 'drainguard survived the flood');
  const sockets = countSockets(descriptors(pid));
  closeAll(flood);
  console.log(`  ${attempts} connections against a limit of 96: drainguard held ${sockets} sockets and stayed up`);

  // Once the flood is gone, a new client is served, and the drain works as ever. Gone to the
  // last socket: a flood client still open when the drain starts is told to drain, and its
  // close then counts as a client that left undrained ('disconnected').
  await until(
    (check) => {
      const t = setInterval(check, 25);
      return () => clearInterval(t);
    },
    () => (countSockets(descriptors(pid)) <= before ? true : undefined),
    10_000,
    'the flood to be closed',
  );
  const late = await open(socket);
  const welcome = once(late, 'data');
  await write(late, '{"type":"hello","protocol":1,"name":"late"}\n');
  assert.match(String((await within(5000, 'welcome', welcome))[0]), /"welcome"/);
  late.destroy();
  process.kill(logOf(p, 'operator started').pid as number, 'SIGUSR2');
  await p.line('work start 0');
  p.kill('SIGTERM');
  assert.equal((await p.exit()).code, 0);
  assert.equal(logOf(p, 'drain ended').outcome, 'drained');
  noWorkInterrupted(p);
});

test.run();
