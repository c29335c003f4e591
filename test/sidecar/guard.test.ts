// The sidecar holds the guard for its pod and releases it only once the
// operator container has stopped: against the test API server, as an
// uninstall deletes the operator's ClusterRole while the pod terminates.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { type FakeApiServer, type KubeObject, startApiServer, writeKubeconfig } from '../support/apiserver/index.ts';
import { tempDir } from '../support/proc.ts';
import { http, prestop, startOperator, startSidecar, stillRunning } from './support.ts';
import { parseExposition } from '../telemetry/prom-text.ts';

const NS = 'op';
const RBAC = 'rbac.authorization.k8s.io/v1';

interface Setup {
  readonly api: FakeApiServer;
  readonly env: NodeJS.ProcessEnv;
  readonly finalizer: string;
  readonly lease: string;
}

/** An operator install (ServiceAccount, ClusterRole and its binding) and its scheduled Pod with two containers. */
async function install(): Promise<Setup> {
  const api = await startApiServer();
  api.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
  api.create({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'op', namespace: NS } });
  api.create({
    apiVersion: RBAC,
    kind: 'ClusterRole',
    metadata: { name: 'op' },
    rules: [{ apiGroups: ['rbac.authorization.k8s.io'], resources: ['clusterroles'], resourceNames: ['op'], verbs: ['get', 'patch'] }],
  });
  api.create({
    apiVersion: RBAC,
    kind: 'ClusterRoleBinding',
    metadata: { name: 'op' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'op' },
    subjects: [{ kind: 'ServiceAccount', name: 'op', namespace: NS }],
  });
  api.create({
    apiVersion: RBAC,
    kind: 'Role',
    metadata: { name: 'drainguard', namespace: NS },
    rules: [
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'list', 'create', 'patch', 'update', 'delete'] },
      { apiGroups: [''], resources: ['pods'], verbs: ['get'] },
      { apiGroups: [''], resources: ['events'], verbs: ['create'] },
    ],
  });
  api.create({
    apiVersion: RBAC,
    kind: 'RoleBinding',
    metadata: { name: 'drainguard', namespace: NS },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'drainguard' },
    subjects: [{ kind: 'ServiceAccount', name: 'op', namespace: NS }],
  });
  const pod = api.create({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'op-0', namespace: NS },
    spec: { nodeName: 'node-1', serviceAccountName: 'op', containers: [{ name: 'manager', image: 'op' }, { name: 'drainguard', image: 'drainguard' }] },
    status: { containerStatuses: [{ name: 'manager', state: { running: {} } }, { name: 'drainguard', state: { running: {} } }] },
  });
  const uid = pod.metadata.uid!;
  const kubeconfig = writeKubeconfig(tempDir(), api, api.tokenFor(NS, 'op'));
  return {
    api,
    env: { KUBECONFIG: kubeconfig, DRAINGUARD_GUARD: 'clusterrole/op', DRAINGUARD_POD_NAME: 'op-0', DRAINGUARD_POD_NAMESPACE: NS, DRAINGUARD_POD_UID: uid },
    finalizer: `drainguard.dev/holder-${uid}`,
    lease: `drainguard-${uid}`,
  };
}

const clusterRole = (api: FakeApiServer) => api.get(RBAC, 'clusterroles', undefined, 'op') as KubeObject | undefined;

/** The kubelet's report that a container ended. */
function terminated(api: FakeApiServer, container: string): void {
  const type = api.type('v1', 'pods');
  const pod = api.store.get(type, NS, 'op-0')! as KubeObject & { status: { containerStatuses: { name: string; state: object }[] } };
  const statuses = pod.status.containerStatuses.map((s) => (s.name === container ? { ...s, state: { terminated: { exitCode: 0, reason: 'Completed' } } } : s));
  api.store.update(type, NS, 'op-0', { ...pod, status: { ...pod.status, containerStatuses: statuses } }, { statusOnly: true });
}

test('plain sidecar: the ClusterRole deleted by an uninstall stays until the operator is gone', async () => {
  const { api, env, finalizer, lease } = await install();
  try {
    // The finalizer write is held up, so readiness can be seen waiting for it.
    const slow = api.fault({ match: (r) => r.resource === 'clusterroles' && r.verb === 'patch', delayMs: 2000, times: 1 });
    const pod = await startSidecar(env);
    await pod.sidecar.log('holder Lease created');
    const waiting = await http(`${pod.base}/readyz`);
    assert.equal([waiting.status, waiting.body], [503, 'guard not set yet\n']);
    await pod.sidecar.log('finalizer added');
    assert.equal(slow.hits, 1);
    assert.ok(clusterRole(api)?.metadata.finalizers?.includes(finalizer));
    assert.equal((await http(`${pod.base}/readyz`)).status, 200);
    const m = parseExposition((await http(`${pod.base}/metrics`)).body);
    assert.equal(m.value('drainguard_guard_objects_held'), 1);
    const operator = await startOperator(pod, { FIXTURE_WORK: '300', FIXTURE_ON_TERM: 'ignore' });

    // helm uninstall: the ClusterRole is deleted while the pod terminates (plain sidecar: SIGTERM with the hook).
    api.delete(RBAC, 'clusterroles', undefined, 'op', { propagationPolicy: 'Background' });
    const hook = prestop(pod);
    pod.sidecar.kill('SIGTERM');
    assert.equal((await hook.exit()).code, 0);
    await pod.sidecar.log('waiting for the operator to stop');
    operator.kill('SIGTERM');
    await operator.line('signal SIGTERM');
    const held = clusterRole(api);
    assert.ok(held?.metadata.deletionTimestamp, 'the ClusterRole is being deleted');
    assert.ok(held?.metadata.finalizers?.includes(finalizer), 'and still held while the operator runs');
    assert.ok(stillRunning(pod.sidecar));

    operator.kill('SIGKILL');
    await operator.exit();
    assert.equal((await pod.sidecar.exit()).code, 0);
    assert.equal(clusterRole(api), undefined, 'the ClusterRole is gone once the operator is');
    assert.equal(api.get('coordination.k8s.io/v1', 'leases', NS, lease), undefined, 'the holder Lease is deleted');
    const logs = pod.sidecar.logs().map((l) => l.msg);
    assert.ok(logs.indexOf('operator stopped') < logs.indexOf('releasing the guard'));
  } finally {
    await api.close();
  }
});

test('an operator without the protocol: the release waits for the API to report its container terminated', async () => {
  const { api, env, finalizer } = await install();
  try {
    const pod = await startSidecar({ ...env, DRAINGUARD_OPERATOR_CONTAINER: 'manager' });
    await api.waitFor(() => clusterRole(api)?.metadata.finalizers?.includes(finalizer), 10_000, 'the finalizer on the ClusterRole');
    const operator = await startOperator(pod, { FIXTURE_CLIENT: '0', FIXTURE_ON_TERM: 'ignore' });
    pod.sidecar.kill('SIGTERM');
    operator.kill('SIGTERM');
    await pod.sidecar.log('waiting for the Kubernetes API to report the operator container terminated');
    await api.waitFor(() => api.requestsMatching((r) => r.resource === 'pods' && r.verb === 'get').length >= 2, 10_000, 'a second look at the Pod');
    assert.ok(clusterRole(api)?.metadata.finalizers?.includes(finalizer), 'held while the container runs');
    assert.ok(stillRunning(pod.sidecar));

    operator.kill('SIGKILL');
    await operator.exit();
    terminated(api, 'manager');
    assert.equal((await pod.sidecar.exit()).code, 0);
    assert.not.ok(clusterRole(api)?.metadata.finalizers?.includes(finalizer), 'released');
    const logs = pod.sidecar.logs().map((l) => l.msg);
    assert.ok(logs.indexOf('operator container terminated') < logs.indexOf('releasing the guard'));
  } finally {
    await api.close();
  }
});

test('a container name the pod does not have: going by the connections, said once', async () => {
  const { api, env } = await install();
  try {
    const pod = await startSidecar({ ...env, DRAINGUARD_OPERATOR_CONTAINER: 'nope' });
    pod.sidecar.kill('SIGTERM');
    assert.equal((await pod.sidecar.exit()).code, 0);
    const warned = pod.sidecar.logs().find((l) => l.msg.startsWith('cannot tell from the Kubernetes API'))!;
    assert.match(warned.error as string, /DRAINGUARD_OPERATOR_CONTAINER names nope, which is not a container of pod op\/op-0 \(it has manager, drainguard\)/);
  } finally {
    await api.close();
  }
});

test.run();
