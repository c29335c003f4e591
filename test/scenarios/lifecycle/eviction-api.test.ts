// The Eviction API with a PodDisruptionBudget on the real kubelet, as `kubectl
// drain --grace-period=15` does it: POST pods/eviction with
// deleteOptions.gracePeriodSeconds 15 (the Pod's spec says 30), retried while
// the PDB refuses (429). The API server sets the Pod's DisruptionTarget
// (EvictionByEvictionAPI) and deletes it; the kubelet SIGTERMs and SIGKILLs at
// the deletion's 15 s. Three pods under one PDB (minAvailable 1):
// - `fitted`: drainguard in wrap mode guarding a Role, an 8 s reconcile in
//   flight at the eviction: the cause `eviction-api` read, the deletion's
//   deadline, the reconcile completed, the operator stopped, the guard released
//   before the kubelet's SIGKILL;
// - `bare`, the control: the same operator without drainguard: its reconcile in
//   flight is interrupted by the kubelet's SIGTERM;
// - `spare`, which keeps the PDB satisfied so that both evictions are allowed.
// Then a NoExecute taint on the node: the taint-eviction controller deletes the
// pods that do not tolerate it (DeletionByTaintManager) with their own grace,
// PDB or not; the same pair, drainguard and the control.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { TestCluster } from '../../support/cluster/index.ts';
import {
  TOOLS_IMAGE,
  type RealNode,
  nodeWithNamespace,
  wrapPod,
  wrapStderr,
  wrapOperatorPid,
  wrapStdout,
} from '../../support/node/index.ts';
import { fixture } from '../../support/proc.ts';
import { assertDeletedPair } from './deleted-pair.ts';

/** The eviction's deleteOptions.gracePeriodSeconds; the Pod's spec says 30. */
const EVICTION_GRACE_S = 15;
const LABELS = { app: 'evicted-op' };

let c: TestCluster;
let node: RealNode;
let ns: string;

test.before(async () => {
  ({ c, node, ns } = await nodeWithNamespace('evict'));
  await c.serviceAccount(ns, 'op');
  // drainguard's rights as docs/guard.md lists them, for a guarded Role of the operator's.
  await c.grant(ns, 'op', 'op', [
    { apiGroups: [''], resources: ['pods'], verbs: ['get'] },
    { apiGroups: [''], resources: ['events'], verbs: ['create'] },
    { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create', 'list', 'patch', 'delete'] },
    { apiGroups: ['rbac.authorization.k8s.io'], resources: ['roles'], resourceNames: ['guarded'], verbs: ['get', 'patch'] },
  ]);
  await c.api.create(`/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/roles`, {
    metadata: { name: 'guarded' },
    rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get'] }],
  });
  await c.api.create(`/apis/policy/v1/namespaces/${ns}/poddisruptionbudgets`, {
    metadata: { name: 'op' },
    spec: { minAvailable: 1, selector: { matchLabels: LABELS } },
  });
});

const timeline = (pod: string) => `--- ${pod}\n${wrapStdout(node, pod).join('\n')}\n${wrapStderr(node, pod).join('\n')}`;
const podPath = (name: string) => `/api/v1/namespaces/${ns}/pods/${name}`;

/** A wrap-mode pod of the operator fixture under the PDB; `bare`: the operator's own command, without drainguard. */
function operatorPod(name: string, env: Record<string, string>, { bare = false } = {}): object {
  const pod = wrapPod(node, {
    name,
    namespace: ns,
    serviceAccountName: 'op',
    apiUrl: c.url,
    operator: fixture('operator.ts'),
    terminationGracePeriodSeconds: 30,
    // The reconcile starts when the test sends SIGUSR2, just before the eviction.
    env: { FIXTURE_WORK: '8000', FIXTURE_WORK_AT: 'usr2', ...env },
  }) as { metadata: Record<string, unknown>; spec: { containers: { command: string[] }[] } };
  pod.metadata.labels = LABELS;
  if (bare) pod.spec.containers[0]!.command = ['/busybox', 'sh', '-c', 'exec "$NODE" "$OPERATOR" >>/out/$DRAINGUARD_POD_NAME.out 2>&1'];
  return pod;
}

const guarded = () => `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/roles/guarded`;

/** The guard's finalizer on the Role (from `fitted`), and both operators ready. */
async function guardedAndReady(fitted: string, bare: string): Promise<void> {
  await c.waitFor(
    async () => ((await c.api.get(guarded()))?.metadata?.finalizers ?? []).length > 0,
    60_000,
    "the guard's finalizer on the Role",
    () => timeline(fitted),
  );
  const ready = (p: string) => wrapStdout(node, p).includes('ready');
  await c.waitFor(
    () => ready(fitted) && ready(bare),
    60_000,
    'both operators ready',
    () => `${timeline(fitted)}\n${timeline(bare)}`,
  );
}

/** SIGUSR2 to the operator of pod `p`: its reconcile starts. */
async function startReconcile(p: string): Promise<void> {
  process.kill(wrapOperatorPid(ns, p), 'SIGUSR2');
  await c.waitFor(
    () => wrapStdout(node, p).includes('work start 0'),
    10_000,
    `${p}'s reconcile started`,
    () => timeline(p),
  );
}

async function gone(...pods: string[]): Promise<void> {
  for (const p of pods)
    await c.waitFor(
      async () => (await c.api.get(podPath(p))) === undefined,
      60_000,
      `${p} gone`,
      () => `${node.tail()}\n${timeline(p)}`,
    );
}

/** POST pods/NAME/eviction with the grace, again while the PDB refuses it (429), as kubectl drain does; resolves once accepted. */
async function evict(name: string): Promise<number> {
  const body = {
    apiVersion: 'policy/v1',
    kind: 'Eviction',
    metadata: { name, namespace: ns },
    deleteOptions: { gracePeriodSeconds: EVICTION_GRACE_S },
  };
  return c.waitFor(
    async () => {
      const r = await c.api.request('POST', `${podPath(name)}/eviction`, body);
      if (r.status === 429) return false;
      if (r.status >= 300) throw new Error(`eviction of ${name}: ${r.status} ${JSON.stringify(r.body)}`);
      return Date.now();
    },
    30_000,
    `the eviction of ${name} accepted`,
  );
}

test("evicted through the Eviction API with a PDB (grace 15 s on a 30 s spec): drainguard reads eviction-api, goes by the deletion's deadline, the reconcile completes and the guard is released before the kubelet's SIGKILL; without drainguard (the control) the reconcile is interrupted", async () => {
  await c.api.create(
    `/api/v1/namespaces/${ns}/pods`,
    operatorPod('fitted', { DRAINGUARD_GUARD: `role/${ns}/guarded`, DRAINGUARD_STOP_TIMEOUT: '2s' }),
  );
  await c.api.create(`/api/v1/namespaces/${ns}/pods`, operatorPod('bare', { FIXTURE_CONNECT: 'never' }, { bare: true }));
  await c.api.create(`/api/v1/namespaces/${ns}/pods`, {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'spare', labels: LABELS },
    spec: {
      nodeName: node.name,
      hostNetwork: true,
      terminationGracePeriodSeconds: 1,
      containers: [{ name: 'main', image: TOOLS_IMAGE, command: ['/busybox', 'sleep', '3600'] }],
    },
  });
  // The PDB counts the three Ready: two evictions allowed.
  await c.waitFor(
    async () => {
      const pdb = await c.api.get(`/apis/policy/v1/namespaces/${ns}/poddisruptionbudgets/op`);
      return pdb?.status?.observedGeneration === pdb?.metadata?.generation && pdb?.status?.disruptionsAllowed === 2;
    },
    90_000,
    'the PDB allowing two disruptions',
    () => `${node.tail()}\n${timeline('fitted')}\n${timeline('bare')}`,
  );
  await guardedAndReady('fitted', 'bare');
  let evictedAt = 0;
  for (const p of ['fitted', 'bare']) {
    await startReconcile(p);
    const at = await evict(p);
    evictedAt ||= at;
  }
  await gone('fitted', 'bare');

  const { stoppedAt, drainMs, marginMs, lastMs } = await assertDeletedPair({
    ...{ c, node, ns, fitted: 'fitted', bare: 'bare', guarded: guarded() },
    ...{ cause: 'eviction-api', disruption: 'EvictionByEvictionAPI', graceS: EVICTION_GRACE_S },
  });
  console.log(
    `Eviction API, deleteOptions.gracePeriodSeconds ${EVICTION_GRACE_S} on a 30 s spec: the kubelet's stop ${stoppedAt - evictedAt} ms after ` +
      `the eviction was accepted, drained in ${drainMs} ms, guard released ${marginMs} ms and the last line ${lastMs} ms ` +
      "before the kubelet's SIGKILL (its stop + grace); control without drainguard: reconcile interrupted",
  );
});

test("a NoExecute taint on the node: the taint-eviction controller deletes the pods with their own grace (30 s); drainguard reads taint-eviction, the reconcile completes and the guard is released before the kubelet's SIGKILL; without drainguard (the control) the reconcile is interrupted", async () => {
  await c.api.create(
    `/api/v1/namespaces/${ns}/pods`,
    operatorPod('t-fitted', { DRAINGUARD_GUARD: `role/${ns}/guarded`, DRAINGUARD_STOP_TIMEOUT: '2s' }),
  );
  await c.api.create(`/api/v1/namespaces/${ns}/pods`, operatorPod('t-bare', { FIXTURE_CONNECT: 'never' }, { bare: true }));
  await guardedAndReady('t-fitted', 't-bare');
  for (const p of ['t-fitted', 't-bare']) await startReconcile(p);
  const taintedAt = Date.now();
  const taint = { spec: { taints: [{ key: 'drainguard.dev/test', value: 'evict', effect: 'NoExecute' }] } };
  const patched = await c.api.request('PATCH', `/api/v1/nodes/${node.name}`, taint, 'application/merge-patch+json');
  assert.is(patched.status, 200, JSON.stringify(patched.body));
  await gone('t-fitted', 't-bare');

  const { stoppedAt, drainMs, marginMs } = await assertDeletedPair({
    ...{ c, node, ns, fitted: 't-fitted', bare: 't-bare', guarded: guarded() },
    ...{ cause: 'taint-eviction', disruption: 'DeletionByTaintManager', graceS: 30 },
  });
  console.log(
    `taint-based eviction (NoExecute), the Pod's 30 s: the kubelet's stop ${stoppedAt - taintedAt} ms after the taint, drained in ` +
      `${drainMs} ms, guard released ${marginMs} ms before the kubelet's SIGKILL; control without drainguard: reconcile interrupted`,
  );
});

test.run();
