// Kubernetes Events on the pod for the drain, written by the built sidecar to
// the test API server as the pod's own service account.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { type FakeApiServer, type KubeObject, startApiServer, writeKubeconfig } from '../support/apiserver/index.ts';
import { tempDir } from '../support/proc.ts';
import { prestop, startOperator, startSidecar } from './support.ts';

const NS = 'operators';

/** A scheduled Pod and a ServiceAccount that may create Events in its namespace, as a Helm chart would set it up. */
function setUp(api: FakeApiServer, terminationGracePeriodSeconds?: number): { env: NodeJS.ProcessEnv; uid: string } {
  api.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
  const pod = api.create({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'op-7d9f', namespace: NS },
    spec: { nodeName: 'node-1', containers: [{ name: 'operator', image: 'op' }], ...(terminationGracePeriodSeconds !== undefined && { terminationGracePeriodSeconds }) },
  });
  api.create({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'op', namespace: NS } });
  api.create({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'Role',
    metadata: { name: 'op-events', namespace: NS },
    rules: [
      { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] },
      { apiGroups: [''], resources: ['pods'], verbs: ['get'] },
    ],
  });
  api.create({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: { name: 'op-events', namespace: NS },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'op-events' },
    subjects: [{ kind: 'ServiceAccount', name: 'op', namespace: NS }],
  });
  const uid = (pod.metadata as { uid: string }).uid;
  const kubeconfig = writeKubeconfig(tempDir(), api, api.tokenFor(NS, 'op'));
  return { env: { KUBECONFIG: kubeconfig, DRAINGUARD_POD_NAME: 'op-7d9f', DRAINGUARD_POD_NAMESPACE: NS, DRAINGUARD_POD_UID: uid }, uid };
}

const events = (api: FakeApiServer) => api.list('v1', 'events', NS) as (KubeObject & Record<string, any>)[];

test('drain started and drained: Events on the pod, with the duration', async () => {
  const api = await startApiServer();
  try {
    const { env, uid } = setUp(api);
    const pod = await startSidecar(env);
    const operator = await startOperator(pod, { FIXTURE_WORK: '500' });
    assert.equal((await prestop(pod).exit()).code, 0);
    const drained = await api.waitFor(() => events(api).find((e) => e.reason === 'Drained'), 10_000, 'the Drained Event');
    const started = events(api).find((e) => e.reason === 'DrainStarted')!;
    assert.ok(started, 'DrainStarted Event');
    assert.equal(started.type, 'Normal');
    assert.match(started.message, /by the preStop hook \(drainguard prestop\)/);
    const durationMs = pod.sidecar.logs().find((l) => l.msg === 'drain ended')!.durationMs as number;
    assert.match(drained.message, new RegExp(`^drain ended after ${(durationMs / 1000).toFixed(1)}s: every operator client said drained`));
    for (const e of [started, drained]) {
      assert.equal(e.involvedObject, { apiVersion: 'v1', kind: 'Pod', name: 'op-7d9f', namespace: NS, uid });
      assert.equal(e.reportingComponent, 'drainguard');
    }
    const writes = api.requestsMatching((r) => r.resource === 'events' && r.verb === 'create');
    assert.ok(writes.every((r) => r.user === `system:serviceaccount:${NS}:op` && r.status === 201), JSON.stringify(writes.map((r) => [r.user, r.status])));
    operator.kill('SIGTERM');
    await operator.exit();
    pod.sidecar.kill('SIGTERM');
    assert.equal((await pod.sidecar.exit()).code, 0);
  } finally {
    await api.close();
  }
});

test('a drain that times out is a Warning Event', async () => {
  const api = await startApiServer();
  try {
    const { env } = setUp(api);
    const pod = await startSidecar({ ...env, DRAINGUARD_DRAIN_TIMEOUT: '600ms' });
    const operator = await startOperator(pod, { FIXTURE_ACK: 'never' });
    assert.equal((await prestop(pod).exit()).code, 0);
    const timedOut = await api.waitFor(() => events(api).find((e) => e.reason === 'DrainTimedOut'), 10_000, 'the DrainTimedOut Event');
    assert.equal(timedOut.type, 'Warning');
    assert.match(timedOut.message, /^drain ended after 0\.[67]s: the drain deadline passed/);
    operator.kill('SIGKILL');
    await operator.exit();
    pod.sidecar.kill('SIGTERM');
    assert.equal((await pod.sidecar.exit()).code, 0);
  } finally {
    await api.close();
  }
});

test('Events are best effort: an API that refuses them changes nothing', async () => {
  const api = await startApiServer();
  try {
    const { env } = setUp(api);
    api.fault({ match: (r) => r.resource === 'events', status: 500, message: 'etcd is sad' });
    const pod = await startSidecar(env);
    const operator = await startOperator(pod, { FIXTURE_WORK: '200' });
    assert.equal((await prestop(pod).exit()).code, 0);
    await pod.sidecar.log('could not record a Kubernetes Event');
    operator.kill('SIGTERM');
    await operator.exit();
    pod.sidecar.kill('SIGTERM');
    assert.equal((await pod.sidecar.exit()).code, 0);
    assert.equal(events(api).length, 0);
  } finally {
    await api.close();
  }
});

test("the Pod's grace period replaces the default, and the drain timeout follows it", async () => {
  const api = await startApiServer();
  try {
    const { env } = setUp(api, 45);
    const pod = await startSidecar(env);
    const read = await pod.sidecar.log('grace period read from the Pod');
    assert.equal([read.gracePeriodMs, read.drainTimeoutMs], [45_000, 38_000]);
    const operator = await startOperator(pod, { FIXTURE_ACK: 'never' });
    const hook = prestop(pod);
    const remaining = Number((await operator.line(/^drain remainingMs=/)).split('=')[1]);
    assert.ok(remaining > 37_000 && remaining <= 38_000, `remainingMs ${remaining}`);
    // Two signals cut the drain short (the second only once the first was seen: signals do not queue).
    pod.sidecar.kill('SIGTERM');
    await pod.sidecar.log('termination requested');
    pod.sidecar.kill('SIGTERM');
    assert.equal((await hook.exit()).code, 0);
    operator.kill('SIGKILL');
    await operator.exit();
    await pod.sidecar.exit();

    // A grace period given explicitly and shorter than the Pod's is kept (a budget the user chose).
    const fixed = await startSidecar({ ...env, DRAINGUARD_GRACE_PERIOD: '20s' });
    const second = await startOperator(fixed, { FIXTURE_ACK: 'never' });
    const fixedHook = prestop(fixed);
    const fixedRemaining = Number((await second.line(/^drain remainingMs=/)).split('=')[1]);
    assert.ok(fixedRemaining > 12_000 && fixedRemaining <= 13_000, `remainingMs ${fixedRemaining}: 20s - 5s - 2s`);
    second.kill('SIGKILL');
    assert.equal((await fixedHook.exit()).code, 0);
    await api.waitFor(() => events(api).filter((e) => e.reason === 'DrainStarted').length === 2, 10_000, 'the DrainStarted Event of the second sidecar');
    assert.not.ok(fixed.sidecar.logs().some((l) => l.msg === 'grace period read from the Pod'));
    fixed.sidecar.kill('SIGTERM');
    await fixed.sidecar.exit();
  } finally {
    await api.close();
  }
});

test('no API configured: no Events, and the sidecar works as before', async () => {
  const pod = await startSidecar({ DRAINGUARD_POD_NAME: 'op', DRAINGUARD_POD_NAMESPACE: NS, HOME: tempDir() });
  const logged = await pod.sidecar.log('no Kubernetes API configured: no Events on the pod');
  assert.match(logged.reason as string, /no Kubernetes API configured/);
  assert.equal((await prestop(pod).exit()).code, 0);
  pod.sidecar.kill('SIGTERM');
  assert.equal((await pod.sidecar.exit()).code, 0);
});

test.run();
