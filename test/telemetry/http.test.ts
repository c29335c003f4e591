// The HTTP listener of the built executable: health, readiness, metrics and
// the token-guarded httpGet preStop route.
import { existsSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { NODE, drainguard, fixture, tempDir } from '../support/proc.ts';
import { http, prestop, startOperator, startSidecar } from '../supervisor/sidecar-mode/support.ts';
import { parseExposition } from './prom-text.ts';

const TOKEN = 'Zm9vYmFyYmF6cXV4cXV1eDEyMzQ1';

test('healthz, readyz, and nothing else on the listener', async () => {
  const pod = await startSidecar();
  const health = await http(`${pod.base}/healthz`);
  assert.equal([health.status, health.body], [200, 'ok\n']);
  const ready = await http(`${pod.base}/readyz`);
  assert.equal([ready.status, ready.body], [200, 'ready\n']);
  assert.equal((await http(`${pod.base}/`)).status, 404);
  assert.equal(
    (await http(`${pod.base}/prestop`, { headers: { 'X-Drainguard-Token': TOKEN } })).status,
    404,
    'no /prestop without a configured token',
  );
  assert.equal((await http(`${pod.base}/readyz`, { method: 'POST' })).status, 405);
  assert.equal(pod.sidecar.logs().filter((l) => l.msg === 'drain started').length, 0);
  pod.sidecar.kill('SIGTERM');
  assert.equal((await pod.sidecar.exit()).code, 0);
});

test('/readyz turns 503 the moment the drain starts, and stays so', async () => {
  const pod = await startSidecar();
  const operator = await startOperator(pod, { FIXTURE_WORK: '1500' });
  assert.equal((await http(`${pod.base}/readyz`)).status, 200);
  const hook = prestop(pod);
  await operator.line(/^drain remainingMs=/);
  const draining = await http(`${pod.base}/readyz`);
  assert.equal([draining.status, draining.body], [503, 'draining\n']);
  assert.equal((await http(`${pod.base}/healthz`)).status, 200, 'alive while draining');
  assert.equal((await hook.exit()).code, 0);
  assert.equal((await http(`${pod.base}/readyz`)).status, 503, 'a drain is for good');
  operator.kill('SIGTERM');
  pod.sidecar.kill('SIGTERM');
  await pod.sidecar.exit();
});

test('httpGet preStop: no token 401, wrong token 403, neither starts anything; the right token drains', async () => {
  const pod = await startSidecar({ DRAINGUARD_PRESTOP_TOKEN: TOKEN });
  const operator = await startOperator(pod, { FIXTURE_WORK: '700' });
  const none = await http(`${pod.base}/prestop`);
  assert.equal(none.status, 401);
  assert.match(none.headers.get('www-authenticate') ?? '', /X-Drainguard-Token/);
  for (const wrong of ['x', `${TOKEN}x`, TOKEN.slice(0, -1) + 'A', TOKEN.toLowerCase()]) {
    assert.equal((await http(`${pod.base}/prestop`, { headers: { 'X-Drainguard-Token': wrong } })).status, 403, wrong);
  }
  assert.equal((await http(`${pod.base}/prestop?token=${TOKEN}`)).status, 401, 'the token counts only in its header');
  assert.equal((await http(`${pod.base}/prestop`, { method: 'DELETE', headers: { 'X-Drainguard-Token': TOKEN } })).status, 405);
  // Nothing was started: still ready, no drain in the logs or the metrics, the operator heard nothing.
  assert.equal((await http(`${pod.base}/readyz`)).status, 200);
  const before = parseExposition((await http(`${pod.base}/metrics`)).body);
  assert.equal(before.value('drainguard_drain_requests_total', { source: 'http' }), 0);
  assert.equal(before.value('drainguard_prestop_refused_total', { reason: 'missing-token' }), 2);
  assert.equal(before.value('drainguard_prestop_refused_total', { reason: 'wrong-token' }), 4);
  assert.equal(pod.sidecar.logs().filter((l) => l.msg === 'drain started').length, 0);
  assert.not.ok(operator.stdout.some((l) => l.startsWith('drain ')));

  const right = await http(`${pod.base}/prestop`, { headers: { 'x-drainguard-token': TOKEN } });
  assert.equal(right.status, 200, right.body);
  assert.equal(JSON.parse(right.body).outcome, 'drained');
  assert.ok(operator.stdout.some((l) => l.startsWith('drain remainingMs=')));
  await operator.line('work done 0');
  assert.equal((await pod.sidecar.log('drain started')).source, 'http');
  operator.kill('SIGTERM');
  pod.sidecar.kill('SIGTERM');
  assert.equal((await pod.sidecar.exit()).code, 0);
});

test('the preStop token from a file; a short or doubly given token is a configuration error', async () => {
  const dir = tempDir();
  const file = join(dir, 'token');
  writeFileSync(file, `${TOKEN}\n`);
  const pod = await startSidecar({ DRAINGUARD_PRESTOP_TOKEN_FILE: file });
  assert.equal((await http(`${pod.base}/prestop`, { headers: { 'X-Drainguard-Token': TOKEN } })).status, 200);
  pod.sidecar.kill('SIGTERM');
  await pod.sidecar.exit();

  const cases: [NodeJS.ProcessEnv, RegExp][] = [
    [{ DRAINGUARD_PRESTOP_TOKEN: 'short' }, /DRAINGUARD_PRESTOP_TOKEN: expected a token of at least 16 characters/],
    [{ DRAINGUARD_PRESTOP_TOKEN: TOKEN, DRAINGUARD_PRESTOP_TOKEN_FILE: file }, /both set/],
    [{ DRAINGUARD_PRESTOP_TOKEN_FILE: join(dir, 'missing') }, /DRAINGUARD_PRESTOP_TOKEN_FILE: cannot read the token file .*ENOENT/],
    [{ DRAINGUARD_HTTP_ADDR: 'nowhere' }, /DRAINGUARD_HTTP_ADDR: expected HOST:PORT/],
  ];
  for (const [env, message] of cases) {
    const p = drainguard(['sidecar'], { DRAINGUARD_SOCKET: join(dir, 's.sock'), DRAINGUARD_HTTP_ADDR: '127.0.0.1:0', ...env });
    assert.equal((await p.exit()).code, 2, JSON.stringify(env));
    assert.match(p.stderr.join('\n'), message);
  }
});

test('/metrics: the named series in the Prometheus text format', async () => {
  const pod = await startSidecar();
  const operator = await startOperator(pod, { FIXTURE_WORK: '900,1000' });
  const idle = parseExposition((await http(`${pod.base}/metrics`)).body);
  for (const name of [
    'drainguard_drains_total',
    'drainguard_drain_duration_seconds',
    'drainguard_clients_connected',
    'drainguard_work_inflight',
    'drainguard_guard_objects_held',
    'drainguard_guard_errors_total',
  ]) {
    assert.ok(idle.help.has(name), `HELP for ${name}`);
  }
  assert.equal(idle.type.get('drainguard_drain_duration_seconds'), 'histogram');
  assert.equal(idle.type.get('drainguard_drains_total'), 'counter');
  assert.equal(idle.value('drainguard_clients_connected'), 1);
  assert.equal(idle.value('drainguard_work_inflight'), 2);
  for (const outcome of ['drained', 'deadline', 'no-client', 'cut-short', 'disconnected']) {
    assert.equal(idle.value('drainguard_drains_total', { outcome }), 0, outcome);
  }
  assert.equal(idle.value('drainguard_drain_duration_seconds_count'), 0);
  assert.equal(idle.value('drainguard_guard_objects_held'), 0);
  assert.equal(idle.value('drainguard_guard_errors_total'), 0);
  assert.ok(idle.value('process_resident_memory_bytes')! > 1e6, 'process metrics');
  assert.ok(idle.type.has('nodejs_eventloop_lag_seconds'));

  assert.equal((await prestop(pod).exit()).code, 0);
  const after = parseExposition((await http(`${pod.base}/metrics`)).body);
  assert.equal(after.value('drainguard_drains_total', { outcome: 'drained' }), 1);
  assert.equal(after.value('drainguard_drain_duration_seconds_count'), 1);
  const seconds = after.value('drainguard_drain_duration_seconds_sum')!;
  const logged = pod.sidecar.logs().find((l) => l.msg === 'drain ended')!.durationMs as number;
  assert.ok(Math.abs(seconds * 1000 - logged) < 2, `histogram ${seconds}s vs log ${logged}ms`);
  assert.equal(after.value('drainguard_drain_duration_seconds_bucket', { le: '0.1' }), 0);
  assert.equal(after.value('drainguard_drain_duration_seconds_bucket', { le: '+Inf' }), 1);
  assert.equal(after.value('drainguard_drain_requests_total', { source: 'socket' }), 1);
  assert.equal(after.value('drainguard_work_inflight'), 0);
  operator.kill('SIGTERM');
  await operator.exit();
  await pod.sidecar.log('client disconnected');
  assert.equal(parseExposition((await http(`${pod.base}/metrics`)).body).value('drainguard_clients_connected'), 0);
  pod.sidecar.kill('SIGTERM');
  await pod.sidecar.exit();
});

test('wrap mode gets the listener when DRAINGUARD_HTTP_ADDR is set', async () => {
  const p = drainguard(['run', '--', NODE, fixture('operator.ts')], { DRAINGUARD_HTTP_ADDR: '127.0.0.1:0', FIXTURE_WORK: '1500' });
  const base = `http://${(await p.log('http listener started')).address as string}`;
  await p.line('ready');
  assert.equal((await http(`${base}/readyz`)).status, 200);
  const m = parseExposition((await http(`${base}/metrics`)).body);
  assert.equal(m.value('drainguard_clients_connected'), 1);
  assert.equal(m.value('drainguard_work_inflight'), 1);
  assert.equal((await http(`${base}/prestop`, { headers: { 'X-Drainguard-Token': TOKEN } })).status, 404);
  p.kill('SIGTERM');
  await p.line(/^drain remainingMs=/);
  assert.equal((await http(`${base}/readyz`)).status, 503);
  assert.equal((await p.exit()).code, 0);

  const quiet = drainguard(['run', '--', 'true'], {});
  assert.equal((await quiet.exit()).code, 0);
  assert.not.ok(
    quiet.logs().some((l) => l.msg === 'http listener started'),
    'off in wrap mode by default',
  );
});

test('an HTTP address in use is a configuration error, found before the operator starts', async () => {
  const blocker = createServer();
  await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
  const port = (blocker.address() as { port: number }).port;
  const dir = tempDir();
  const marker = join(dir, 'started');
  const p = drainguard(['run', '--', 'sh', '-c', `touch ${marker}`], { DRAINGUARD_HTTP_ADDR: `127.0.0.1:${port}` });
  assert.equal((await p.exit()).code, 2);
  assert.match(p.stderr.join('\n'), new RegExp(`DRAINGUARD_HTTP_ADDR: cannot listen on 127.0.0.1:${port}: EADDRINUSE`));
  const s = drainguard(['sidecar'], { DRAINGUARD_HTTP_ADDR: `127.0.0.1:${port}`, DRAINGUARD_SOCKET: join(dir, 's.sock') });
  assert.equal((await s.exit()).code, 2);
  blocker.close();
  assert.not.ok(existsSync(marker));
});

test.run();
