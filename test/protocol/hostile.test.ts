// Hostile input at the drain socket of the built executable: each case gets
// an error and a closed connection, and a real client's drain still completes.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { readFileSync } from 'node:fs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { NODE, Proc, drainguard, fixture, tempDir } from '../support/proc.ts';
import { RawClient } from '../support/raw-client.ts';

function start(): { p: Proc; socket: string } {
  const socket = join(tempDir(), 'drain.sock');
  const p = drainguard(['run', '--socket', socket, '--', NODE, fixture('operator.ts')], {
    FIXTURE_WORK: '300',
    DRAINGUARD_LOG_LEVEL: 'debug',
  });
  return { p, socket };
}

const rss = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;

async function rejected(socket: string, payload: string | Buffer, reason: RegExp): Promise<void> {
  const c = await new RawClient(socket).connected();
  c.send(payload);
  const error = await c.message('error');
  assert.match(String(error.message), reason);
  // The code of docs/errors.md comes first, the spec's text after it.
  assert.match(String(error.message), /^DG_PROTOCOL_[A-Z_]+: /);
  await c.close();
}

test('each kind of bad input gets an error message and the connection is closed', async () => {
  const { p, socket } = start();
  await p.line('ready');
  await rejected(socket, 'not json\n', /invalid JSON/);
  await rejected(socket, '{"type":"inflight","count":1}\n', /first message must be hello/);
  await rejected(socket, '[1,2]\n', /must be a JSON object/);
  await rejected(socket, '{"type":"hello","protocol":2}\n', /unsupported protocol version 2/);
  await rejected(
    socket,
    Buffer.concat([Buffer.from('{"type":"hello","protocol":1,"name":"'), Buffer.from([0xff, 0xfe]), Buffer.from('"}\n')]),
    /not valid UTF-8/,
  );
  await rejected(socket, 'x'.repeat(64 * 1024 + 1), /line longer than 65536 bytes/);
  // Exactly 64 KiB is allowed; unknown fields and types are ignored.
  const ok = await new RawClient(socket).connected();
  const hello = JSON.stringify({ type: 'hello', protocol: 1, name: 'edge', extra: true });
  ok.send(`${hello}${' '.repeat(64 * 1024 - hello.length)}\n`);
  await ok.message('welcome');
  ok.send({ type: 'from-the-future', x: 1 });
  ok.send({ type: 'drained' });
  p.kill('SIGTERM');
  assert.equal((await p.exit()).code, 0);
  assert.ok(p.stdout.includes('work done 0'));
  assert.not.ok(p.stdout.some((l) => l.startsWith('work interrupted')));
});

test('hundreds of junk connections and silent ones neither crash drainguard nor stall the drain', async () => {
  const { p, socket } = start();
  await p.line('ready');
  const before = rss(p.pid);
  const silent = await Promise.all(Array.from({ length: 300 }, () => new RawClient(socket).connected()));
  const junk = await Promise.all(Array.from({ length: 300 }, () => new RawClient(socket).connected()));
  junk.forEach((c, i) => c.send(i % 2 ? 'x'.repeat(70_000) : '{"type":"drained"}\n'));
  await Promise.all(junk.map((c) => c.close()));
  // Partial lines that never end, under the limit: held, bounded.
  const partial = await Promise.all(Array.from({ length: 200 }, () => new RawClient(socket).connected()));
  partial.forEach((c) => c.send('{"type":"hello"'.padEnd(60_000, ' ')));
  await readAll(p.pid);
  const peak = rss(p.pid);
  const signalled = Date.now();
  p.kill('SIGTERM');
  // The fixture's real client drains, silent and partial connections are not waited for.
  const exit = await p.exit();
  assert.equal(exit.code, 0);
  assert.equal(p.logs().find((l) => l.msg === 'drain ended')!.outcome, 'drained');
  assert.ok(peak - before < 64, `RSS grew by ${(peak - before).toFixed(1)} MiB`);
  const termination = p.logs().find((l) => l.msg === 'termination requested')!;
  console.log(`  termination requested ${Date.parse(termination.time as string) - signalled} ms after the SIGTERM, 200 partial lines held`);
  for (const c of [...silent, ...partial]) c.socket.destroy();
});

/**
 * Waits until drainguard has read all that was sent to it: no byte left in the
 * receive queue of any of its sockets. A client's write is done once the kernel
 * holds it, and nothing tells the writer when the reader took it, so the
 * queues are read back (ss, from the kernel's socket diagnostics) until empty.
 */
async function readAll(pid: number, ms = 10_000): Promise<void> {
  const stop = Date.now() + ms;
  for (;;) {
    const sockets = execFileSync('ss', ['-xpnH'], { encoding: 'utf8' })
      .split('\n')
      .filter((l) => l.includes(`pid=${pid},`));
    if (sockets.length === 0) throw new Error(`ss shows no socket of drainguard (pid ${pid})`);
    const queued = sockets.reduce((sum, l) => sum + Number(l.trim().split(/\s+/)[2]), 0);
    if (queued === 0) return;
    if (Date.now() > stop) throw new Error(`drainguard left ${queued} bytes unread for ${ms} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

test('a rejected peer that keeps its half of the connection open does not hold up the exit', async () => {
  const socket = join(tempDir(), 'drain.sock');
  const p = drainguard(['run', '--socket', socket, '--', NODE, fixture('operator.ts')]);
  await p.line('ready');
  const c = await new RawClient(socket).connected();
  c.socket.allowHalfOpen = true; // it reads the error and the end, and never closes
  c.send('not json\n');
  await c.message('error');
  const rejected = Date.now();
  p.kill('SIGTERM');
  assert.equal((await p.exit()).code, 0);
  // Without the cut at close, drainguard went only at the rejected socket's own timeout, 1 s after the rejection.
  assert.ok(Date.now() - rejected < 800, `exited ${Date.now() - rejected} ms after the rejection`);
  c.socket.destroy();
});

test('a client that says hello during the drain gets drain right after welcome and is waited for', async () => {
  const socket = join(tempDir(), 'drain.sock');
  const p = drainguard(['run', '--socket', socket, '--', NODE, fixture('operator.ts')], { FIXTURE_ACK: 'never' });
  await p.line('ready');
  p.kill('SIGTERM');
  await p.log('drain started');
  const late = await new RawClient(socket).connected();
  late.send({ type: 'hello', protocol: 1, name: 'late', pid: 1 });
  const drain = await late.message('drain');
  assert.equal(late.messages()[0]!.type, 'welcome');
  assert.ok(typeof drain.remainingMs === 'number' && (drain.remainingMs as number) > 0);
  assert.match(String(drain.deadline), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  // The fixture never acknowledges; the late client disconnecting does not end the drain for it.
  late.socket.destroy();
  p.kill('SIGTERM');
  assert.equal((await p.exit()).code, 0);
  assert.equal(p.logs().find((l) => l.msg === 'drain ended')!.outcome, 'cut-short');
});

test.run();
