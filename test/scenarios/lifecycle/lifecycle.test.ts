// What only a real cluster shows, with deploy/examples/wrap applied for real
// and its pods run by the kubelet stand-in: a rolling update (two holders at
// once, the old pod drains while the new one runs), an eviction through the
// Eviction API, a namespace deletion, and Kubebuilder's defaults (grace 10 s,
// nothing set for drainguard: the release still comes inside the grace period).
// The operator is the reliability fixture: its reconciles start on SIGUSR2
// (passed on by drainguard), so a drain finds work in flight.

import { randomBytes } from 'node:crypto';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { WatchEvent } from '../../support/kubelet/api.ts';
import { Kubelet } from '../../support/kubelet/index.ts';
import { type KubeletCluster, kubeletCluster } from '../../support/kubelet/cluster.ts';
import { DRAINGUARD_IMAGE, drainguardImage, operatorImage } from '../../support/kubelet/runners.ts';
import { type Proc, fixture } from '../../support/proc.ts';
import { type Example, type KubeObject, example } from '../../deploy/support/manifests.ts';

const GUARDED = ['ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding'];
const HOLDER = 'drainguard.dev/holder-';

let c: KubeletCluster;
test.before(async () => {
  c = await kubeletCluster();
});

const pathOf = (o: KubeObject) =>
  `${o.apiVersion === 'v1' ? '/api/v1' : `/apis/${o.apiVersion}`}${o.metadata.namespace ? `/namespaces/${o.metadata.namespace}` : ''}/${o.kind.toLowerCase()}s/${o.metadata.name}`;

interface Install {
  readonly ex: Example;
  readonly kubelet: Kubelet;
  readonly guarded: KubeObject[];
  readonly deployment: string;
  /** The running pods of the Deployment, by name. */
  pods(): Promise<any[]>;
  /** The holders on an object (pod uids). */
  holders(o: KubeObject): Promise<string[]>;
  /** drainguard (the manager container) of a pod. */
  drainguard(pod: string): Promise<Proc>;
  close(): Promise<void>;
}

async function install(edit: (deployment: KubeObject) => void = () => {}, operatorEnv: NodeJS.ProcessEnv = {}): Promise<Install> {
  const ex = example('wrap', `lc-${randomBytes(3).toString('hex')}`);
  const objects = structuredClone(ex.objects);
  const dep = objects.find((o) => o.kind === 'Deployment')!;
  dep.spec.strategy = { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } };
  edit(dep);
  const kubelet = await Kubelet.start({
    cluster: c.access,
    namespaces: [ex.namespace],
    images: {
      [DRAINGUARD_IMAGE]: drainguardImage(),
      [ex.image]: operatorImage(fixture('operator.ts'), { FIXTURE_WORK: '2500', FIXTURE_WORK_AT: 'usr2', ...operatorEnv }),
    },
  });
  c.kubectl(['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }));
  const deployment = `/apis/apps/v1/namespaces/${ex.namespace}/deployments/${ex.name}`;
  await c.poll(deployment, (b) => b.status?.availableReplicas === 1, 90_000, 'the Deployment available');
  const guarded = objects.filter((o) => GUARDED.includes(o.kind));
  return {
    ex,
    kubelet,
    guarded,
    deployment,
    pods: async () =>
      (await c.api.must('GET', `/api/v1/namespaces/${ex.namespace}/pods`)).items.filter((p: any) => !p.metadata.deletionTimestamp),
    holders: async (o) =>
      ((await c.api.must('GET', pathOf(o))).metadata.finalizers ?? [])
        .filter((f: string) => f.startsWith(HOLDER))
        .map((f: string) => f.slice(HOLDER.length)),
    drainguard: (pod) => kubelet.process(pod, 'manager', 60_000),
    async close() {
      await kubelet.stop();
      await c.freeAnchors(ex.namespace);
      for (const o of [...guarded, ...objects.filter((x) => x.kind === 'Namespace')]) {
        await c.api.call('PATCH', pathOf(o), { metadata: { finalizers: null } }, 'application/merge-patch+json');
        await c.api.call('DELETE', pathOf(o));
      }
      await c.poll(`/api/v1/namespaces/${ex.namespace}`, (_b, s) => s === 404, 60_000, `namespace ${ex.namespace} gone`);
    },
  };
}

/** Every watch event of one object from now on. */
async function watchObject(path: string): Promise<{ events: WatchEvent[]; stop: () => void }> {
  const name = path.slice(path.lastIndexOf('/') + 1);
  const collection = `${path.slice(0, path.lastIndexOf('/'))}?fieldSelector=metadata.name%3D${encodeURIComponent(name)}`;
  const list = await c.api.must('GET', collection);
  const events: WatchEvent[] = [];
  const abort = new AbortController();
  void c.api.watch(collection, list.metadata.resourceVersion, (e) => events.push(e), abort.signal);
  return { events, stop: () => abort.abort() };
}

/** Starts the reconciles of the operator behind this drainguard (SIGUSR2, passed on) and waits until they run. */
/** Waits until `o` carries the holder finalizer of `pod` (its guard set). */
function heldBy(o: KubeObject, pod: { metadata: { uid: string } }, what: string): Promise<unknown> {
  return c.poll(pathOf(o), (b) => b.metadata.finalizers?.includes(`${HOLDER}${pod.metadata.uid}`), 20_000, what);
}

async function startWork(dg: Proc): Promise<void> {
  await dg.line('ready', 20_000);
  dg.kill('SIGUSR2');
  await dg.line('work start 0', 10_000);
}

/** The old pod drained with its work in flight, finished it, and stopped; nothing interrupted. */
function drainedCleanly(dg: Proc): void {
  const out = dg.stdout;
  const [drain, done, term] = [
    out.findIndex((l) => l.startsWith('drain remainingMs=')),
    out.indexOf('work done 0'),
    out.indexOf('signal SIGTERM'),
  ];
  assert.ok(drain !== -1 && drain < done && done < term, `drain, work done, SIGTERM in that order:\n${out.join('\n')}`);
  assert.not.ok(
    out.some((l) => l.startsWith('work interrupted')),
    'no reconcile interrupted',
  );
  assert.is(dg.logs().find((l) => l.msg === 'drain ended')?.outcome, 'drained');
}

test('rolling update (kubectl rollout restart, maxSurge 1): the new pod starts, the old one drains; two holders; no reconcile interrupted', async () => {
  // In wrap mode nothing gates the new pod's readiness on its guard: work long enough that the old pod still holds then.
  const i = await install(undefined, { FIXTURE_WORK: '8000' });
  try {
    const [old] = await i.pods();
    const oldDg = await i.drainguard(old.metadata.name);
    await heldBy(i.guarded[0]!, old, 'the old pod holding');
    await startWork(oldDg);
    const role = i.guarded.find((o) => o.kind === 'ClusterRole' && o.metadata.name === i.ex.name)!;
    const watch = await watchObject(pathOf(role));
    c.kubectl(['rollout', 'restart', '-n', i.ex.namespace, `deployment/${i.ex.name}`]);
    await c.poll(
      i.deployment,
      (b) =>
        b.status?.updatedReplicas === 1 &&
        b.status.replicas === 1 &&
        b.status.availableReplicas === 1 &&
        b.status.observedGeneration === b.metadata.generation,
      90_000,
      'the rollout done',
    );
    await i.kubelet.event((e) => e.pod === old.metadata.name && e.what === 'deleted 200', 30_000, 'the old pod stopped and deleted');
    watch.stop();
    const [fresh] = await i.pods();
    assert.is.not(fresh.metadata.uid, old.metadata.uid);
    const both = watch.events.some((e) => [old, fresh].every((p) => e.object.metadata.finalizers?.includes(`${HOLDER}${p.metadata.uid}`)));
    assert.ok(both, 'two holders on the ClusterRole at once, old and new');
    // The new pod ran before the old one was told to stop (maxUnavailable 0).
    const freshStarted = i.kubelet.events.find(
      (e) => e.pod === fresh.metadata.name && e.what === 'started' && e.container === 'manager',
    )!.at;
    const oldStop = i.kubelet.events.find((e) => e.pod === old.metadata.name && e.what.startsWith('terminating'))!.at;
    assert.ok(freshStarted < oldStop, 'the new pod started before the old one was stopped');
    drainedCleanly(oldDg);
    for (const o of i.guarded)
      assert.equal(await i.holders(o), [fresh.metadata.uid], `${o.kind}/${o.metadata.name}: the new pod alone holds`);
    await c.poll(
      `/apis/coordination.k8s.io/v1/namespaces/${i.ex.namespace}/leases/drainguard-${old.metadata.uid}`,
      (_b, s) => s === 404,
      15_000,
      "the old pod's Lease gone",
    );
    assert.equal(i.kubelet.errors, []);
  } finally {
    await i.close();
  }
});

test('eviction through the Eviction API: the pod drains and releases its own holder; its replacement holds', async () => {
  const i = await install();
  try {
    const [victim] = await i.pods();
    const dg = await i.drainguard(victim.metadata.name);
    await heldBy(i.guarded[0]!, victim, 'the pod holding');
    await startWork(dg);
    const r = await c.api.call('POST', `/api/v1/namespaces/${i.ex.namespace}/pods/${victim.metadata.name}/eviction`, {
      apiVersion: 'policy/v1',
      kind: 'Eviction',
      metadata: { name: victim.metadata.name, namespace: i.ex.namespace },
    });
    assert.is(r.status, 201, JSON.stringify(r.body));
    const evicted = await c.api.must('GET', `/api/v1/namespaces/${i.ex.namespace}/pods/${victim.metadata.name}`);
    assert.ok(evicted.metadata.deletionTimestamp, 'the eviction is a graceful delete');
    assert.ok(
      evicted.status.conditions.some((x: any) => x.type === 'DisruptionTarget' && x.reason === 'EvictionByEvictionAPI'),
      'the API server marks it DisruptionTarget',
    );
    await i.kubelet.event((e) => e.pod === victim.metadata.name && e.what === 'deleted 200', 30_000, 'the evicted pod stopped and deleted');
    drainedCleanly(dg);
    await c.poll(i.deployment, (b) => b.status?.availableReplicas === 1, 60_000, 'the replacement available');
    const [replacement] = await i.pods();
    for (const o of i.guarded) {
      await c.poll(
        pathOf(o),
        (b) => {
          const f = b.metadata.finalizers ?? [];
          return f.includes(`${HOLDER}${replacement.metadata.uid}`) && !f.includes(`${HOLDER}${victim.metadata.uid}`);
        },
        20_000,
        `${o.kind}/${o.metadata.name}: held by the replacement alone`,
      );
    }
  } finally {
    await i.close();
  }
});

test('namespace deletion: the pod drains, the namespaced objects it holds go with the namespace, no holder is left on the cluster-scoped ones', async () => {
  // The namespace controller reaches the pods after some seconds: work long enough to be in flight then.
  const i = await install(undefined, { FIXTURE_WORK: '12000' });
  try {
    const [pod] = await i.pods();
    const dg = await i.drainguard(pod.metadata.name);
    await heldBy(i.guarded[0]!, pod, 'the pod holding');
    await startWork(dg);
    await c.api.must('DELETE', `/api/v1/namespaces/${i.ex.namespace}`);
    await i.kubelet.event((e) => e.pod === pod.metadata.name && e.what === 'deleted 200', 60_000, 'the pod stopped and deleted');
    drainedCleanly(dg);
    await c.poll(`/api/v1/namespaces/${i.ex.namespace}`, (_b, s) => s === 404, 60_000, 'the namespace gone');
    for (const o of i.guarded.filter((x) => !x.metadata.namespace))
      assert.equal(await i.holders(o), [], `${o.kind}/${o.metadata.name}: no holder left`);
    assert.ok(
      dg.logs().some((l) => l.msg === 'guard released'),
      dg.stderr.join('\n'),
    );
  } finally {
    await i.close();
  }
});

test("Kubebuilder's defaults (terminationGracePeriodSeconds 10, nothing set for drainguard): the drain and the release complete inside the grace period, no finalizer left", async () => {
  const i = await install((d) => (d.spec.template.spec.terminationGracePeriodSeconds = 10));
  try {
    const [pod] = await i.pods();
    const dg = await i.drainguard(pod.metadata.name);
    for (const o of i.guarded) await heldBy(o, pod, `${o.kind} held`);
    await startWork(dg);
    await c.api.must('DELETE', `${i.deployment}`, { propagationPolicy: 'Background' });
    await i.kubelet.event((e) => e.pod === pod.metadata.name && e.what === 'deleted 200', 30_000, 'the pod stopped and deleted');
    drainedCleanly(dg);
    const start = i.kubelet.events.find((e) => e.pod === pod.metadata.name && e.what.startsWith('terminating'))!;
    assert.is(start.what, 'terminating, grace 10s');
    const released = dg.logs().find((l) => l.msg === 'guard released');
    assert.ok(released, dg.stderr.join('\n'));
    assert.ok(Date.parse(released!.time as string) - start.at < 10_000, 'released inside the grace period');
    assert.not.ok(
      i.kubelet.events.some((e) => e.pod === pod.metadata.name && e.what === 'signal SIGKILL'),
      'drainguard was not killed by the kubelet',
    );
    for (const o of i.guarded) assert.equal(await i.holders(o), [], `${o.kind}/${o.metadata.name}: no finalizer left`);
  } finally {
    await i.close();
  }
});

test("Kubebuilder's defaults, worst case: a drain that cannot finish still releases inside the grace period", async () => {
  // Work that outlasts the grace period, and an operator that ignores SIGTERM.
  const i = await install((d) => (d.spec.template.spec.terminationGracePeriodSeconds = 10), {
    FIXTURE_WORK: '60000',
    FIXTURE_ON_TERM: 'ignore',
  });
  try {
    const [pod] = await i.pods();
    const dg = await i.drainguard(pod.metadata.name);
    for (const o of i.guarded) await heldBy(o, pod, `${o.kind} held`);
    await startWork(dg);
    await c.api.must('DELETE', `${i.deployment}`, { propagationPolicy: 'Background' });
    await i.kubelet.event((e) => e.pod === pod.metadata.name && e.what === 'deleted 200', 30_000, 'the pod stopped and deleted');
    const start = i.kubelet.events.find((e) => e.pod === pod.metadata.name && e.what.startsWith('terminating'))!;
    assert.is(start.what, 'terminating, grace 10s');
    const released = dg.logs().find((l) => l.msg === 'guard released');
    assert.ok(released, dg.stderr.join('\n'));
    const releasedAfter = Date.parse(released!.time as string) - start.at;
    assert.ok(releasedAfter < 10_000, `released ${releasedAfter} ms after the deletion, inside the 10 s grace period`);
    assert.not.ok(
      i.kubelet.events.some((e) => e.pod === pod.metadata.name && e.what === 'signal SIGKILL'),
      'drainguard was not killed by the kubelet',
    );
    assert.ok(i.kubelet.events.some((e) => e.pod === pod.metadata.name && e.container === 'manager' && /^exited /.test(e.what)));
    for (const o of i.guarded) assert.equal(await i.holders(o), [], `${o.kind}/${o.metadata.name}: no finalizer left`);
  } finally {
    await i.close();
  }
});

test.run();
