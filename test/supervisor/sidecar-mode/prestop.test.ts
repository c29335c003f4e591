// `drainguard prestop` when things are not as they should be: every case ends
// with a clear message and within its bound, never with a hang.
import { spawnSync } from 'node:child_process';
import { statSync, writeFileSync } from 'node:fs';
import { type Server, type Socket, createServer } from 'node:net';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { NODE, drainguard, fixture, tempDir } from '../../support/proc.ts';
import { prestop, startOperator, startSidecar } from './support.ts';

const listen = (server: Server, path: string) => new Promise<void>((r) => server.listen(path, r));

/** Runs prestop and returns its exit status, its stderr and how long it took. */
async function timed(socket: string, flags: string[] = []) {
  const started = Date.now();
  const p = prestop({ socket }, flags, { DRAINGUARD_LOG_FORMAT: 'text' });
  const exit = await p.exit(15_000);
  return { code: exit.code, stderr: p.stderr.join('\n'), ms: Date.now() - started };
}

test('no socket: exit 1 naming the path and what to check', async () => {
  const socket = join(tempDir(), 'drain.sock');
  const r = await timed(socket);
  assert.equal(r.code, 1);
  assert.match(
    r.stderr,
    /cannot reach the drainguard sidecar: no socket at .*drain\.sock: is the drainguard sidecar running, and is its socket volume mounted/,
  );
  assert.ok(r.ms < 5000, `took ${r.ms} ms`);
});

test('a stale socket nobody listens on: exit 1 after a short retry', async () => {
  const socket = join(tempDir(), 'drain.sock');
  // A process that exits without closing its listener leaves the socket file behind, as a killed sidecar does.
  spawnSync(NODE, ['-e', `require('net').createServer().listen(${JSON.stringify(socket)}, () => process.exit(0))`]);
  assert.ok(statSync(socket).isSocket());
  const r = await timed(socket);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /nothing listens on .*drain\.sock: the drainguard sidecar is not running/);
  assert.ok(r.ms >= 1500 && r.ms < 6000, `took ${r.ms} ms`);
});

test('a socket that accepts and stays silent: exit 1 at the deadline', async () => {
  const socket = join(tempDir(), 'drain.sock');
  const held: Socket[] = [];
  const silent = createServer((s) => held.push(s));
  await listen(silent, socket);
  const r = await timed(socket, ['--drain-timeout', '700ms']);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /accepted the connection but did not answer within 0\.[67]s/);
  assert.ok(r.ms >= 650 && r.ms < 4000, `took ${r.ms} ms`);
  for (const s of held) s.destroy();
  silent.close();
});

test('a supervisor of protocol 1 without drain requests answers with an error: exit 1 saying so', async () => {
  const socket = join(tempDir(), 'drain.sock');
  // As docs/protocol.md fixes version 1: a first message other than hello gets an error and the connection is closed.
  const v1 = createServer((s) =>
    s.once('data', (d) => {
      const first = JSON.parse(d.toString().split('\n')[0]!) as { type: string };
      if (first.type !== 'hello') s.end('{"type":"error","message":"the first message must be hello"}\n');
    }),
  );
  await listen(v1, socket);
  const r = await timed(socket);
  assert.equal(r.code, 1);
  assert.match(
    r.stderr,
    /refused the drain request: the first message must be hello \(this drainguard predates drain requests: upgrade the sidecar\)/,
  );
  v1.close();
});

test('drainguard run refuses drain requests: it drains on SIGTERM', async () => {
  const socket = join(tempDir(), 'drain.sock');
  const wrap = drainguard(['run', '--', NODE, fixture('operator.ts')], { DRAINGUARD_SOCKET: socket });
  await wrap.line('ready');
  const r = await timed(socket);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /refused the drain request: drain requests are not accepted here: drainguard run drains on SIGTERM/);
  assert.not.ok(
    wrap.stdout.some((l) => l.startsWith('drain ')),
    'the operator was not drained',
  );
  wrap.kill('SIGTERM');
  assert.equal((await wrap.exit()).code, 0);
});

test('the sidecar dies during the drain: exit 1, not a hang', async () => {
  const pod = await startSidecar();
  const operator = await startOperator(pod, { FIXTURE_ACK: 'never' });
  const hook = prestop(pod);
  await operator.line(/^drain remainingMs=/);
  pod.sidecar.kill('SIGKILL');
  assert.equal((await hook.exit()).code, 1);
  assert.match(hook.stderr.join('\n'), /closed the connection before the drain ended \(did it exit\?\)/);
  operator.kill('SIGKILL');
  await operator.exit();
});

test('a --drain-timeout shorter than the sidecar deadline: prestop stops waiting then, exit 0', async () => {
  const pod = await startSidecar();
  const operator = await startOperator(pod, { FIXTURE_ACK: 'never' });
  const started = Date.now();
  const hook = prestop(pod, ['--drain-timeout', '600ms']);
  assert.equal((await hook.exit()).code, 0);
  const ms = Date.now() - started;
  assert.ok(ms >= 580 && ms < 4000, `took ${ms} ms`);
  assert.ok(hook.logs().some((l) => l.msg === 'deadline passed before the drain ended; the stop signal follows'));
  operator.kill('SIGKILL');
  await operator.exit();
  pod.sidecar.kill('SIGTERM');
  await pod.sidecar.exit();
});

test('no operator client connected: the drain ends at once', async () => {
  const pod = await startSidecar();
  const r = await timed(pod.socket);
  assert.equal(r.code, 0);
  assert.match(r.stderr, /drain ended outcome=no-client/);
  pod.sidecar.kill('SIGTERM');
  await pod.sidecar.exit();
});

test('not a socket: exit 1', async () => {
  const file = join(tempDir(), 'drain.sock');
  writeFileSync(file, '');
  const r = await timed(file);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /cannot reach the drainguard sidecar/);
});

test.run();
