// The API access layer against the fake API server: kubeconfig and in-cluster
// credentials, token rotation, timeouts, retries with backoff, errors, Events.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { KubeClient, type KubeClientOptions } from '../../src/kube/client.ts';
import { loadApiAccess } from '../../src/kube/config.ts';
import { KubeApiError, KubeUnreachableError } from '../../src/kube/errors.ts';
import { createEventRecorder } from '../../src/kube/event-recorder.ts';
import { RESOURCES } from '../../src/kube/objects.ts';
import { backoff } from '../../src/kube/retry.ts';
import { createLogger } from '../../src/log/logger.ts';
import { type FakeApiServer, startApiServer, writeKubeconfig, writeServiceAccountFiles } from '../support/apiserver/index.ts';
import { tempDir } from '../support/proc.ts';

async function setup(options: Partial<KubeClientOptions> = {}, serverOptions = {}) {
  const api = await startApiServer(serverOptions);
  const dir = tempDir();
  const access = loadApiAccess({ KUBECONFIG: writeKubeconfig(dir, api, api.adminToken) }, { home: dir });
  const waits: number[] = [];
  const client = new KubeClient({ access, delay: async (ms) => void waits.push(ms), random: () => 0.5, ...options });
  return { api, client, waits, dir };
}

const role = (name: string) => ({ ...RESOURCES.clusterrole, name });
const seed = (api: FakeApiServer, name: string) =>
  api.create({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name }, rules: [] });

test('reads through KUBECONFIG over TLS, verifying the server with the kubeconfig CA', async () => {
  const { api, client } = await setup();
  try {
    seed(api, 'x');
    const got = await client.get(role('x'));
    assert.equal(got.metadata.name, 'x');
    assert.equal(client.server, api.url);
    assert.ok(api.url.startsWith('https://'));
  } finally {
    await api.close();
  }
});

test('transient failures are retried with exponential backoff and jitter; others are not', async () => {
  const { api, client, waits } = await setup();
  try {
    seed(api, 'x');
    api.fault({ match: (r) => r.verb === 'get', times: 3, status: 503 });
    assert.equal((await client.get(role('x'))).metadata.name, 'x');
    assert.equal(waits, [150, 300, 600], 'half fixed, half random (random = 0.5) of 200, 400, 800 ms');
    assert.equal(api.requestsMatching((r) => r.verb === 'get').map((r) => r.status), [503, 503, 503, 200]);

    waits.length = 0;
    const f = api.fault({ match: (r) => r.verb === 'patch', times: 1, status: 409 });
    const err = await client.patch(role('x'), { metadata: { finalizers: ['a.b/c'] } }, 'application/merge-patch+json').catch((e) => e);
    assert.instance(err, KubeApiError);
    assert.equal(err.status, 409);
    assert.equal(f.hits, 1);
    assert.equal(waits, [], 'a conflict is the caller’s to resolve');

    api.fault({ match: (r) => r.verb === 'get', status: 500 });
    const given = await client.get(role('x')).catch((e) => e);
    assert.equal(given.status, 500);
    assert.equal(waits.length, 4, 'five attempts in all');
    assert.equal(backoff({ baseDelayMs: 200, maxDelayMs: 1000, maxAttempts: 9 }, 8, () => 1), 1000, 'capped');
  } finally {
    await api.close();
  }
});

test('every call has a timeout; errors name the API server and the object', async () => {
  const { api, client, dir } = await setup({ timeoutMs: 200, retry: { baseDelayMs: 10, maxDelayMs: 10, maxAttempts: 2 } });
  try {
    seed(api, 'x');
    api.fault({ match: (r) => r.verb === 'get', delayMs: 1000 });
    const t0 = performance.now();
    const err = await client.get(role('x')).catch((e) => e);
    assert.instance(err, KubeUnreachableError);
    assert.ok(err.timedOut);
    assert.ok(performance.now() - t0 < 1000, 'two attempts of 200 ms, not the 1 s the server takes');
    assert.match(err.message, `GET clusterrole/x: cannot reach the Kubernetes API at ${api.url}: no answer within 200 ms`);

    const missing = await client.patch(role('nope'), {}, 'application/merge-patch+json').catch((e) => e);
    assert.equal(missing.message, `PATCH clusterrole/nope on ${api.url}: 404 NotFound: clusterroles.rbac.authorization.k8s.io "nope" not found`);

    // A deadline cuts a call short of its own (longer) timeout: the server would answer after 1 s.
    const patient = new KubeClient({ access: loadApiAccess({ KUBECONFIG: writeKubeconfig(dir, api, api.adminToken) }, { home: dir }), timeoutMs: 5000 });
    const t1 = Date.now();
    const late = await patient.get(role('x'), { deadline: t1 + 300 }).catch((e) => e);
    assert.instance(late, KubeUnreachableError);
    assert.ok(late.timedOut);
    assert.ok(Date.now() - t1 < 800, `no call outlasts its deadline (${Date.now() - t1} ms)`);

    await api.stopListening();
    const down = await client.get(role('y'), { retry: false }).catch((e) => e);
    assert.instance(down, KubeUnreachableError);
    assert.match(down.message, /ECONNREFUSED/);
  } finally {
    await api.close();
  }
});

test('in-cluster: the projected token is read again when the kubelet rotates it', async () => {
  const api = await startApiServer();
  try {
    const dir = tempDir();
    api.create({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'a', namespace: 'default' } });
    api.create({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'b', namespace: 'default' } });
    const sa = join(dir, 'sa');
    const env = writeServiceAccountFiles(sa, api, api.tokenFor('default', 'a'), 'default');
    const access = loadApiAccess(env, { serviceAccountDir: sa, home: dir });
    assert.equal(access.source, 'in-cluster service account');
    assert.equal(access.namespace, 'default');
    const client = new KubeClient({ access });
    await client.request('GET', '/api');
    writeFileSync(join(sa, 'token'), api.tokenFor('default', 'b'));
    await client.request('GET', '/api');
    assert.equal(api.requests.map((r) => r.user), ['system:serviceaccount:default:a', 'system:serviceaccount:default:b']);
    assert.throws(() => loadApiAccess({}, { serviceAccountDir: join(dir, 'none'), home: dir }), /no Kubernetes API configured/);
  } finally {
    await api.close();
  }
});

test('recordEvent writes a core v1 Event; a failure is logged, never thrown', async () => {
  const lines: string[] = [];
  const logger = createLogger({ format: 'json', stream: { write: (l: string) => lines.push(l) } });
  const { api, client } = await setup();
  try {
    const record = createEventRecorder({ client, instance: 'op-0', logger });
    const pod = api.create({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'op-0', namespace: 'default' }, spec: { nodeName: 'n' } });
    await record({ ...RESOURCES.pod, namespace: 'default', name: 'op-0', uid: pod.metadata.uid }, 'Normal', 'Drained', 'the operator drained in 1.2s');
    const [event] = api.list('v1', 'events', 'default');
    assert.equal(event!.reason, 'Drained');
    assert.equal(event!.involvedObject, { apiVersion: 'v1', kind: 'Pod', name: 'op-0', namespace: 'default', uid: pod.metadata.uid });
    assert.equal(event!.source.component, 'drainguard');
    api.fault({ status: 500 });
    await record({ ...RESOURCES.pod, namespace: 'default', name: 'op-0' }, 'Warning', 'DrainTimeout', 'x');
    assert.ok(lines.some((l) => l.includes('could not record a Kubernetes Event')));
  } finally {
    await api.close();
  }
});

test.run();
