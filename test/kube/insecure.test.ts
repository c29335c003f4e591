// An API server reached over plain http, or with insecure-skip-tls-verify in
// the kubeconfig, is used as kubectl uses it, but not silently: one warning
// naming the server (the built executable, `drainguard status`).

import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { notFoundApi } from '../support/not-found-api.ts';
import { drainguard, tempDir } from '../support/proc.ts';

function kubeconfig(cluster: string): string {
  const file = join(tempDir(), 'kubeconfig');
  writeFileSync(
    file,
    `apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {${cluster}}}]\nusers: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n`,
  );
  return file;
}

async function status(config: string) {
  const p = drainguard(['status', '--guard', 'clusterrole/x,clusterrole/y'], { KUBECONFIG: config });
  await p.exit(30_000);
  return p;
}

const warnings = (p: Awaited<ReturnType<typeof status>>) => p.logs().filter((l) => l.level === 'warn');

test('plain http: used, with one warning naming the server', async () => {
  const api = await notFoundApi(false);
  try {
    const config = kubeconfig(`server: "${api.url}"`);
    const p = await status(config);
    assert.ok(api.requests() >= 2, p.stderr.join('\n'));
    const told = warnings(p);
    assert.equal(told.length, 1, p.stderr.join('\n'));
    assert.match(told[0]!.msg, /plain http/);
    assert.equal(told[0]!.server, api.url);
    assert.equal(told[0]!.source, `KUBECONFIG=${config}`);
  } finally {
    api.close();
  }
});

test('run with the pod and a guard (a client each): still one warning', async () => {
  const api = await notFoundApi(false);
  try {
    const p = drainguard(['run', '--', 'true'], {
      KUBECONFIG: kubeconfig(`server: "${api.url}"`),
      DRAINGUARD_POD_NAME: 'op-0',
      DRAINGUARD_POD_NAMESPACE: 'ns',
      DRAINGUARD_POD_UID: '6b3c1f4e-2d1a-4c51-9a0e-1f2d3c4b5a69',
      DRAINGUARD_GUARD: 'clusterrole/x',
    });
    await p.exit(30_000);
    assert.ok(api.requests() >= 2, p.stderr.join('\n'));
    assert.equal(p.logs().filter((l) => /plain http/.test(l.msg)).length, 1, p.stderr.join('\n'));
  } finally {
    api.close();
  }
});

test('insecure-skip-tls-verify: used, with one warning naming the server; a CA instead: no warning', async () => {
  const api = await notFoundApi(true);
  try {
    const insecure = await status(kubeconfig(`server: "${api.url}", insecure-skip-tls-verify: true`));
    assert.ok(api.requests() >= 2, insecure.stderr.join('\n'));
    const told = warnings(insecure);
    assert.equal(told.length, 1, insecure.stderr.join('\n'));
    assert.match(told[0]!.msg, /insecure-skip-tls-verify/);
    assert.equal(told[0]!.server, api.url);

    const before = api.requests();
    const checked = await status(kubeconfig(`server: "${api.url}", certificate-authority-data: ${Buffer.from(api.ca).toString('base64')}`));
    assert.ok(api.requests() > before, checked.stderr.join('\n'));
    assert.equal(warnings(checked), [], checked.stderr.join('\n'));
  } finally {
    api.close();
  }
});

test.run();
