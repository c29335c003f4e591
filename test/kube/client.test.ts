// The API access layer against the real API server (test/support/cluster),
// through the fault proxy (test/support/faultproxy) where a test needs a
// fault or the record of requests: kubeconfig and in-cluster credentials,
// token rotation, timeouts, retries with backoff, errors, Events.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { type Clock, systemClock } from '../../src/clock.ts';
import { KubeClient, type KubeClientOptions } from '../../src/kube/client.ts';
import { loadApiAccess } from '../../src/kube/config.ts';
import { KubeApiError, KubeUnreachableError } from '../../src/kube/errors.ts';
import { createEventRecorder } from '../../src/kube/event-recorder.ts';
import { RESOURCES } from '../../src/kube/objects.ts';
import { backoff } from '../../src/kube/retry.ts';
import { createLogger } from '../../src/log/logger.ts';
import { resourcePath, useCluster } from '../support/cluster/index.ts';
import { selfSigned } from '../support/cluster/pki.ts';
import { type FaultProxy, startFaultProxy } from '../support/faultproxy/index.ts';
import { tempDir } from '../support/proc.ts';

const cluster = await useCluster();
const { name: NS } = await cluster.namespace('client');
// A cluster-admin with a bearer token, the kind of credential the fault proxy passes on.
await cluster.serviceAccount(NS, 'admin');
await cluster.create({
  apiVersion: 'rbac.authorization.k8s.io/v1',
  kind: 'ClusterRoleBinding',
  metadata: { name: `${NS}-admin` },
  roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
  subjects: [{ kind: 'ServiceAccount', name: 'admin', namespace: NS }],
});
const adminToken = await cluster.token(NS, 'admin');

/** A client through a fresh fault proxy, as the admin ServiceAccount. */
async function setup(options: Partial<KubeClientOptions> = {}) {
  const proxy = await startFaultProxy(cluster);
  const dir = tempDir();
  const kubeconfig = cluster.kubeconfigFor(adminToken, { server: proxy.url });
  const access = await loadApiAccess({ KUBECONFIG: kubeconfig }, { home: dir });
  const waits: number[] = [];
  // The wall clock, but the backoff's sleeps only noted: the schedule is checked without waiting it out.
  const clock: Clock = { ...systemClock, sleep: async (ms) => void waits.push(ms) };
  const client = new KubeClient({ access, clock, random: () => 0.5, ...options });
  return { proxy, client, waits, dir, kubeconfig };
}

/** A ClusterRole of this file's (cluster-scoped: a unique name). */
const roleName = (name: string) => `${NS}-${name}`;
const role = (name: string) => ({ ...RESOURCES.clusterrole, name: roleName(name) });
const seed = (name: string) =>
  cluster.create({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: roleName(name) }, rules: [] });
const gets = (proxy: FaultProxy) => proxy.requests.filter((r) => r.verb === 'get' && r.resource === 'clusterroles');

test('reads through KUBECONFIG over TLS, verifying the server with the kubeconfig CA', async () => {
  await seed('x');
  // The admin kubeconfig: the cluster CA and a client certificate, straight to the API server.
  const client = new KubeClient({ access: await loadApiAccess({ KUBECONFIG: cluster.adminKubeconfig }, { home: tempDir() }) });
  const got = await client.get(role('x'));
  assert.equal(got.metadata.name, roleName('x'));
  assert.equal(client.server, cluster.url);
  assert.ok(cluster.url.startsWith('https://'));
  // Another CA: the server is not trusted.
  const { proxy, kubeconfig } = await setup();
  const otherCa = readFileSync(selfSigned(tempDir(), 'other', '/CN=other').cert);
  writeFileSync(
    kubeconfig,
    readFileSync(kubeconfig, 'utf8').replace(/certificate-authority-data: .*/, `certificate-authority-data: ${otherCa.toString('base64')}`),
  );
  const untrusted = new KubeClient({
    access: await loadApiAccess({ KUBECONFIG: kubeconfig }, { home: tempDir() }),
    retry: { baseDelayMs: 1, maxDelayMs: 1, maxAttempts: 1 },
  });
  const refused = await untrusted.get(role('x')).catch((e) => e);
  assert.instance(refused, KubeUnreachableError);
  assert.equal(proxy.requests, [], 'no request was sent to a server the CA does not vouch for');
});

test('transient failures are retried with exponential backoff and jitter; others are not', async () => {
  const { proxy, client, waits } = await setup();
  await seed('y');
  proxy.rule({ method: 'GET', path: /clusterroles\//, times: 3, status: 503 });
  assert.equal((await client.get(role('y'))).metadata.name, roleName('y'));
  assert.equal(waits, [150, 300, 600], 'half fixed, half random (random = 0.5) of 200, 400, 800 ms');
  assert.equal(
    gets(proxy).map((r) => r.status),
    [503, 503, 503, 200],
  );

  waits.length = 0;
  const f = proxy.rule({ method: 'PATCH', times: 1, status: 409 });
  const err = await client.patch(role('y'), { metadata: { finalizers: ['a.b/c'] } }, 'application/merge-patch+json').catch((e) => e);
  assert.instance(err, KubeApiError);
  assert.equal(err.status, 409);
  assert.equal(f.hits, 1);
  assert.equal(waits, [], 'a conflict is the caller’s to resolve');

  proxy.rule({ method: 'GET', status: 500 });
  const given = await client.get(role('y')).catch((e) => e);
  assert.equal(given.status, 500);
  assert.equal(waits.length, 4, 'five attempts in all');
  assert.equal(
    backoff({ baseDelayMs: 200, maxDelayMs: 1000, maxAttempts: 9 }, 8, () => 1),
    1000,
    'capped',
  );
  await proxy.close();
});

test('every call has a timeout; errors name the API server and the object', async () => {
  const { proxy, client, dir, kubeconfig } = await setup({ timeoutMs: 200, retry: { baseDelayMs: 10, maxDelayMs: 10, maxAttempts: 2 } });
  await seed('z');
  proxy.rule({ method: 'GET', delayMs: 1000 });
  const t0 = performance.now();
  const err = await client.get(role('z')).catch((e) => e);
  assert.instance(err, KubeUnreachableError);
  assert.ok(err.timedOut);
  assert.ok(performance.now() - t0 < 1000, 'two attempts of 200 ms, not the 1 s the server takes');
  assert.match(err.message, `GET clusterrole/${roleName('z')}: cannot reach the Kubernetes API at ${proxy.url}: no answer within 200 ms`);

  const missing = await client.patch(role('nope'), {}, 'application/merge-patch+json').catch((e) => e);
  assert.equal(
    missing.message,
    `PATCH clusterrole/${roleName('nope')} on ${proxy.url}: 404 NotFound: clusterroles.rbac.authorization.k8s.io "${roleName('nope')}" not found`,
  );

  // A deadline cuts a call short of its own (longer) timeout: the server would answer after 1 s.
  const patient = new KubeClient({ access: await loadApiAccess({ KUBECONFIG: kubeconfig }, { home: dir }), timeoutMs: 5000 });
  const t1 = Date.now();
  const late = await patient.get(role('z'), { deadline: t1 + 300 }).catch((e) => e);
  assert.instance(late, KubeUnreachableError);
  assert.ok(late.timedOut);
  assert.ok(Date.now() - t1 < 800, `no call outlasts its deadline (${Date.now() - t1} ms)`);

  await proxy.down();
  const down = await client.get(role('w'), { retry: false }).catch((e) => e);
  assert.instance(down, KubeUnreachableError);
  assert.match(down.message, /ECONNREFUSED/);
});

test('in-cluster: the projected token is read again when the kubelet rotates it', async () => {
  const proxy = await startFaultProxy(cluster);
  const dir = tempDir();
  await cluster.serviceAccount(NS, 'a');
  await cluster.serviceAccount(NS, 'b');
  const sa = join(dir, 'sa');
  mkdirSync(sa);
  writeFileSync(join(sa, 'token'), await cluster.token(NS, 'a'));
  writeFileSync(join(sa, 'ca.crt'), cluster.ca);
  writeFileSync(join(sa, 'namespace'), NS);
  const env = { KUBERNETES_SERVICE_HOST: '127.0.0.1', KUBERNETES_SERVICE_PORT: new URL(proxy.url).port };
  const access = await loadApiAccess(env, { serviceAccountDir: sa, home: dir });
  assert.equal(access.source, 'in-cluster service account');
  assert.equal(access.namespace, NS);
  const client = new KubeClient({ access });
  await client.request('GET', '/api');
  writeFileSync(join(sa, 'token'), await cluster.token(NS, 'b'));
  await client.request('GET', '/api');
  assert.equal(
    proxy.requests.map((r) => [r.user, r.status]),
    [
      [`system:serviceaccount:${NS}:a`, 200],
      [`system:serviceaccount:${NS}:b`, 200],
    ],
  );
  const none = await loadApiAccess({}, { serviceAccountDir: join(dir, 'none'), home: dir }).catch((e: Error) => e);
  assert.match(String((none as Error).message), /no Kubernetes API configured/);
  await proxy.close();
});

test('recordEvent writes a core v1 Event; a failure is logged, never thrown', async () => {
  const lines: string[] = [];
  const logger = createLogger({ format: 'json', stream: { write: (l: string) => lines.push(l) } });
  const { proxy, client } = await setup();
  const record = createEventRecorder({ client, instance: 'op-0', logger });
  const pod = await cluster.create({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'op-0', namespace: NS },
    spec: { nodeName: await cluster.node(), containers: [{ name: 'c', image: 'x' }] },
  });
  await record(
    { ...RESOURCES.pod, namespace: NS, name: 'op-0', uid: pod.metadata.uid },
    'Normal',
    'Drained',
    'the operator drained in 1.2s',
  );
  const events = await cluster.api.list(resourcePath('v1', 'events', NS));
  const event = events.find((e) => e.reason === 'Drained');
  assert.ok(event, JSON.stringify(events));
  assert.equal(event.involvedObject, { apiVersion: 'v1', kind: 'Pod', name: 'op-0', namespace: NS, uid: pod.metadata.uid });
  assert.equal(event.source.component, 'drainguard');
  proxy.rule({ status: 500 });
  await record({ ...RESOURCES.pod, namespace: NS, name: 'op-0' }, 'Warning', 'DrainTimeout', 'x');
  assert.ok(lines.some((l) => l.includes('could not record a Kubernetes Event')));
  await proxy.close();
});

test.run();
