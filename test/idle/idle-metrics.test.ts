// waitForIdle against the real, unmodified controller-runtime manager (the
// example operator run with -no-drainguard) and its own metrics endpoint,
// plain http on loopback and controller-runtime's secure metrics (https,
// bearer token checked by the real API server's TokenReview and
// SubjectAccessReview). Also the contract that holds the stand-in of
// wait-for-idle.test.ts and scrape-failures.test.ts (metrics-stand-in.ts) to
// the real endpoint.
import { connect } from 'node:tls';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { activeWorkers, waitForIdle } from '../../src/idle/idle-metrics.ts';
import { useCluster } from '../support/cluster/index.ts';
import { freePort } from '../support/free-port.ts';
import { goBuild } from '../support/go.ts';
import { Proc, tempDir } from '../support/proc.ts';
import { CONTENT_TYPE, MetricsStandIn } from './metrics-stand-in.ts';

const EXAMPLE = goBuild('clients/go/ctrl', './example', join(tempDir(), 'ctrl-example'));
const cluster = await useCluster();
const ns = (await cluster.namespace('idle')).name;
const running: Proc[] = [];

async function manager(flags: string[], secure = false): Promise<{ p: Proc; url: string }> {
  const port = await freePort();
  const addr = `127.0.0.1:${port}`;
  const p = new Proc(
    EXAMPLE,
    ['-no-drainguard', '-namespace', ns, '-metrics-bind-address', addr, ...(secure ? ['-metrics-secure'] : []), ...flags],
    { KUBECONFIG: cluster.adminKubeconfig },
  );
  running.push(p);
  await p.line('ready', 30_000);
  // "ready" is the caches synced; the metrics server listens in a goroutine of its own, which
  // controller-runtime does not wait for (its HTTP servers have no readiness check): on a busy
  // machine the first scrape after "ready" could be refused. It logs this line once it listens.
  await p.stderrLine(/Serving metrics server/, 30_000);
  return { p, url: `${secure ? 'https' : 'http'}://${addr}/metrics` };
}

let seq = 0;
const configMap = () =>
  cluster.api.create(`/api/v1/namespaces/${ns}/configmaps`, {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: `cm-${++seq}`, labels: { app: 'drainguard-example' } },
  });
const soon = (ms: number) => Date.now() + ms;

test.after.each(async () => {
  for (const p of running.splice(0)) {
    p.kill('SIGKILL');
    await p.exited;
  }
});

test('the real endpoint exposes controller_runtime_active_workers, and activeWorkers reads its sum', async () => {
  const { url } = await manager([]);
  const text = await (await fetch(url)).text();
  assert.match(text, /^controller_runtime_active_workers\{controller="example"\} 0$/m);
  assert.equal(activeWorkers(text), 0);
});

test('the stand-in (metrics-stand-in.ts) serves controller_runtime_active_workers as the real manager does', async () => {
  const { url } = await manager([]);
  const standIn = await new MetricsStandIn([{ active: 0 }]).listen();
  try {
    const scrape = async (u: string) => {
      const res = await fetch(u, { headers: { accept: 'text/plain' } });
      const series = (await res.text()).split('\n').filter((l) => l.includes('controller_runtime_active_workers'));
      return { status: res.status, type: res.headers.get('content-type')!.split(';').slice(0, 2).join(';'), series };
    };
    const real = await scrape(url);
    assert.ok(real.series.length >= 3, real.series.join('\n'));
    assert.equal(await scrape(standIn.url), real);
    assert.is(real.type, CONTENT_TYPE.split(';').slice(0, 2).join(';'));
  } finally {
    await standIn.close();
  }
});

test('idle manager: idle at the first scrape', async () => {
  const { url } = await manager([]);
  const r = await waitForIdle({ url, intervalMs: 20, deadline: soon(5_000) });
  assert.equal(r, { outcome: 'idle', scrapes: 1, failed: 0, lastActive: 0, lastError: undefined });
});

test('busy manager: idle at the first scrape after the reconcile returned, not before', async () => {
  const { p, url } = await manager(['-reconcile-time', '1500ms']);
  const cm = await configMap();
  await p.line(`reconcile start ${ns}/${cm.metadata.name}`);
  const started = Date.now();
  const r = await waitForIdle({ url, intervalMs: 20, deadline: soon(10_000) });
  assert.equal(r.outcome, 'idle');
  assert.ok(p.stdout.includes(`reconcile done ${ns}/${cm.metadata.name}`), 'the reconcile finished before the idle scrape');
  assert.ok(r.scrapes > 5, `${r.scrapes} scrapes`);
  assert.ok(Date.now() - started >= 1000, `idle after ${Date.now() - started} ms`);
});

test('a reconcile longer than the wait: deadline, with the last count', async () => {
  const { p, url } = await manager(['-reconcile-time', '20s']);
  await configMap();
  await p.line(/^reconcile start /); // this one, or one an earlier test's manager was killed in
  const r = await waitForIdle({ url, intervalMs: 20, deadline: soon(400) });
  assert.equal(r.outcome, 'deadline');
  assert.equal(r.lastActive, 1);
});

test('aborted: resolves at once with aborted', async () => {
  const { p, url } = await manager(['-reconcile-time', '20s']);
  await configMap();
  await p.line(/^reconcile start /);
  const ac = new AbortController();
  const pending = waitForIdle({ url, intervalMs: 20, deadline: soon(10_000), signal: ac.signal });
  ac.abort();
  assert.equal((await pending).outcome, 'aborted');
});

test('nothing listening: scrapes keep failing until the deadline, the error is reported', async () => {
  const r = await waitForIdle({ url: `http://127.0.0.1:${await freePort()}/metrics`, intervalMs: 20, deadline: soon(300) });
  assert.equal(r.outcome, 'deadline');
  assert.ok(r.scrapes > 1);
  assert.match(r.lastError ?? '', /ECONNREFUSED/);
  assert.equal(r.lastActive, undefined);
});

test('secure metrics: https with a ServiceAccount token; refused without one', async () => {
  await cluster.serviceAccount(ns, 'scraper');
  const role = `idle-scraper-${ns}`;
  await cluster.grant(ns, 'scraper', role, [{ nonResourceURLs: ['/metrics'], verbs: ['get'] }], { clusterWide: true });
  const token = await cluster.token(ns, 'scraper');
  const { url } = await manager([], true);
  // The secure listener comes up after the caches synced, once its authentication client is made.
  const ca = await cluster.waitFor(() => issuerOf(new URL(url)).catch(() => undefined), 10_000, 'the secure metrics listener');
  const r = await waitForIdle({ url, token, ca, intervalMs: 20, deadline: soon(10_000) });
  assert.equal(r.outcome, 'idle', JSON.stringify(r));
  const refused = await waitForIdle({ url, ca, intervalMs: 20, deadline: soon(2_000) });
  assert.equal(refused.outcome, 'deadline');
  assert.match(refused.lastError ?? '', /HTTP 401/, JSON.stringify(refused));
});

/**
 * The CA controller-runtime made for its self-signed metrics certificate
 * (it keeps it in memory only): read once from the chain the server presents,
 * so that the scrapes themselves verify the certificate and its 127.0.0.1 SAN.
 */
function issuerOf(url: URL): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: url.hostname, port: Number(url.port), rejectUnauthorized: false }, () => {
      const issuer = socket.getPeerCertificate(true).issuerCertificate;
      socket.end();
      resolve(`-----BEGIN CERTIFICATE-----\n${issuer.raw.toString('base64')}\n-----END CERTIFICATE-----\n`);
    });
    socket.on('error', reject);
  });
}

test.run();
