// The preStop token of the built sidecar: read again from its file when the
// kubelet rotates the Secret volume, refusals logged at a bounded rate, and
// the token as a value deprecated with a warning.

import { mkdirSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { tempDir } from '../support/proc.ts';
import { http, startOperator, startSidecar } from '../supervisor/sidecar-mode/support.ts';
import { parseExposition } from './prom-text.ts';

const OLD = 'b2xkLXRva2VuLW9mLXRoZS1zZWNyZXQ';
const NEW = 'bmV3LXRva2VuLWFmdGVyLXJvdGF0aW9u';

/** A Secret volume as the kubelet writes it: `token` -> `..data/token`, `..data` -> a timestamped directory, swapped with a rename on every update. */
function secretVolume(token: string): { file: string; rotate: (token: string) => void } {
  const dir = tempDir();
  let n = 0;
  const write = (value: string) => {
    const version = `..2026_12_03_${n++}`;
    mkdirSync(join(dir, version));
    writeFileSync(join(dir, version, 'token'), `${value}\n`);
    symlinkSync(version, join(dir, '..data_tmp'));
    renameSync(join(dir, '..data_tmp'), join(dir, '..data'));
  };
  write(token);
  symlinkSync('..data/token', join(dir, 'token'));
  return { file: join(dir, 'token'), rotate: write };
}

const presenting = (base: string, token: string) => http(`${base}/prestop`, { headers: { 'X-Drainguard-Token': token } });

test('a rotated Secret: the old token is refused from then on, the new one drains', async () => {
  const secret = secretVolume(OLD);
  const pod = await startSidecar({ DRAINGUARD_PRESTOP_TOKEN_FILE: secret.file });
  const operator = await startOperator(pod, { FIXTURE_WORK: '300' });
  assert.equal((await presenting(pod.base, NEW)).status, 403, 'the new token before the rotation');
  secret.rotate(NEW);
  assert.equal((await presenting(pod.base, OLD)).status, 403, 'the old token after the rotation');
  assert.equal(pod.sidecar.logs().filter((l) => l.msg === 'drain started').length, 0);
  const right = await presenting(pod.base, NEW);
  assert.equal(right.status, 200, right.body);
  assert.equal(JSON.parse(right.body).outcome, 'drained');
  assert.not.ok(pod.sidecar.logs().some((l) => /deprecated/.test(l.msg)));
  operator.kill('SIGTERM');
  pod.sidecar.kill('SIGTERM');
  assert.equal((await pod.sidecar.exit()).code, 0);
});

test('a rotation to a bad token keeps the one before, and says why', async () => {
  const secret = secretVolume(OLD);
  const pod = await startSidecar({ DRAINGUARD_PRESTOP_TOKEN_FILE: secret.file });
  secret.rotate('short');
  assert.equal((await presenting(pod.base, 'short')).status, 403);
  const warning = await pod.sidecar.log('preStop token file not taken');
  assert.match(
    String(warning.problem),
    /DRAINGUARD_PRESTOP_TOKEN_FILE .*: expected a token of at least 16 characters.*the token read before stays in force/,
  );
  assert.equal((await presenting(pod.base, OLD)).status, 200);
  pod.sidecar.kill('SIGTERM');
  assert.equal((await pod.sidecar.exit()).code, 0);
});

test('refused requests are counted one by one and logged at a bounded rate', async () => {
  const secret = secretVolume(OLD);
  const pod = await startSidecar({ DRAINGUARD_PRESTOP_TOKEN_FILE: secret.file });
  for (let i = 0; i < 50; i++) {
    assert.equal((await presenting(pod.base, `${NEW}${i}`)).status, 403);
    assert.equal((await http(`${pod.base}/prestop`)).status, 401);
  }
  const metrics = parseExposition((await http(`${pod.base}/metrics`)).body);
  assert.equal(metrics.value('drainguard_prestop_refused_total', { reason: 'wrong-token' }), 50);
  assert.equal(metrics.value('drainguard_prestop_refused_total', { reason: 'missing-token' }), 50);
  const lines = (msg: string) => pod.sidecar.logs().filter((l) => l.msg === msg).length;
  assert.equal(lines('preStop request with a wrong token refused'), 1);
  assert.equal(lines('preStop request without a token refused'), 1);
  pod.sidecar.kill('SIGTERM');
  assert.equal((await pod.sidecar.exit()).code, 0);
});

test('the token as a value still works, with a warning that it is deprecated and why', async () => {
  const pod = await startSidecar({ DRAINGUARD_PRESTOP_TOKEN: OLD });
  const warning = pod.sidecar.logs().find((l) => /^DRAINGUARD_PRESTOP_TOKEN is deprecated/.test(l.msg));
  assert.ok(warning, pod.sidecar.stderr.join('\n'));
  assert.equal(warning.level, 'warn');
  assert.match(warning.msg, /view role.*DRAINGUARD_PRESTOP_TOKEN_FILE/);
  assert.equal((await presenting(pod.base, OLD)).status, 200);
  pod.sidecar.kill('SIGTERM');
  assert.equal((await pod.sidecar.exit()).code, 0);
});

test.run();
