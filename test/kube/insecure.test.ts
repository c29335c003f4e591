// An API server reached over plain http, or with insecure-skip-tls-verify in
// the kubeconfig, is used as kubectl uses it, but not silently: one warning
// naming the server (the built executable, `drainguard status`).

import { execFileSync } from 'node:child_process';
import { type Server, createServer as createHttp } from 'node:http';
import { createServer as createHttps } from 'node:https';
import type { AddressInfo } from 'node:net';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { drainguard, tempDir } from '../support/proc.ts';
import { within } from '../support/wait.ts';

const NOT_FOUND = '{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}';

/** A fake API server that answers every request 404 and counts them. */
async function apiServer(tls: boolean): Promise<{ url: string; ca: string; requests: () => number; close: () => void }> {
  let requests = 0;
  const handler = (_req: unknown, res: import('node:http').ServerResponse) => {
    requests++;
    res.writeHead(404, { 'content-type': 'application/json' }).end(NOT_FOUND);
  };
  let server: Server;
  let ca = '';
  if (tls) {
    const dir = tempDir();
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-keyout',
        'k',
        '-out',
        'c',
        '-days',
        '1',
        '-subj',
        '/CN=api',
        '-addext',
        'subjectAltName=IP:127.0.0.1',
      ],
      { cwd: dir, stdio: 'ignore' },
    );
    ca = readFileSync(join(dir, 'c'), 'utf8');
    server = createHttps({ key: readFileSync(join(dir, 'k')), cert: ca }, handler);
  } else {
    server = createHttp(handler);
  }
  await within(5000, 'listen', new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve)));
  const url = `${tls ? 'https' : 'http'}://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, ca, requests: () => requests, close: () => server.close() };
}

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
  const api = await apiServer(false);
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
  const api = await apiServer(false);
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
  const api = await apiServer(true);
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
