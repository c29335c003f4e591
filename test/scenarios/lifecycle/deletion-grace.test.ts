// A deletion's own grace period, shorter than the spec's: deploy/examples/wrap
// (terminationGracePeriodSeconds set to 30 s, as in the report of issue 34) run
// by the kubelet stand-in, which kills at the deletion's grace as the kubelet
// does, deleted with reconciles of 8 s in flight by `kubectl delete
// --grace-period=N` (4 s, 1 s, and 0 with --force), and evicted through the
// Eviction API with DeleteOptions. Whatever is left, the operator gets its stop
// signal from drainguard and the guard is released before the kubelet's
// SIGKILL; nothing of this pod is left on the guarded objects. A second delete
// with a shorter grace during the drain is seen too.
// Run against drainguard before issue 34, the 4 s cases fail: it drained on a
// 23 s budget and the kubelet killed it all at 4 s.

import { randomBytes } from 'node:crypto';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Kubelet } from '../../support/kubelet/index.ts';
import { type KubeletCluster, kubeletCluster } from '../../support/kubelet/cluster.ts';
import { DRAINGUARD_IMAGE, drainguardImage, operatorImage } from '../../support/kubelet/runners.ts';
import { type Proc, fixture } from '../../support/proc.ts';
import { type KubeObject, example } from '../../deploy/support/manifests.ts';

const GUARDED = ['ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding'];
const HOLDER = 'drainguard.dev/holder-';
const SPEC_GRACE = 30;

let c: KubeletCluster;
test.before(async () => {
  c = await kubeletCluster();
});

const pathOf = (o: KubeObject) =>
  `${o.apiVersion === 'v1' ? '/api/v1' : `/apis/${o.apiVersion}`}${o.metadata.namespace ? `/namespaces/${o.metadata.namespace}` : ''}/${o.kind.toLowerCase()}s/${o.metadata.name}`;
const at = (line: Record<string, unknown> | undefined) => Date.parse(line?.time as string);

interface Running {
  readonly ns: string;
  readonly pod: string;
  readonly uid: string;
  readonly kubelet: Kubelet;
  readonly guarded: KubeObject[];
  readonly dg: Proc;
  holders(o: KubeObject): Promise<string[]>;
  close(): Promise<void>;
}

/** The wrap example with a 30 s grace period, its pod holding, its operator's reconcile of 8 s under way. */
async function running(): Promise<Running> {
  const ex = example('wrap', `dg-${randomBytes(3).toString('hex')}`);
  const objects = structuredClone(ex.objects);
  objects.find((o) => o.kind === 'Deployment')!.spec.template.spec.terminationGracePeriodSeconds = SPEC_GRACE;
  const kubelet = await Kubelet.start({
    cluster: c.access,
    namespaces: [ex.namespace],
    images: {
      [DRAINGUARD_IMAGE]: drainguardImage(),
      [ex.image]: operatorImage(fixture('operator.ts'), { FIXTURE_WORK: '8000', FIXTURE_WORK_AT: 'usr2' }),
    },
  });
  const guarded = objects.filter((o) => GUARDED.includes(o.kind));
  const holders = async (o: KubeObject) =>
    ((await c.api.must('GET', pathOf(o))).metadata.finalizers ?? [])
      .filter((f: string) => f.startsWith(HOLDER))
      .map((f: string) => f.slice(HOLDER.length));
  const close = async () => {
    await kubelet.stop();
    for (const o of [...guarded, ...objects.filter((x) => x.kind === 'Namespace')]) {
      await c.api.call('PATCH', pathOf(o), { metadata: { finalizers: null } }, 'application/merge-patch+json');
      await c.api.call('DELETE', pathOf(o));
    }
  };
  try {
    c.kubectl(['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }));
    await c.poll(
      `/apis/apps/v1/namespaces/${ex.namespace}/deployments/${ex.name}`,
      (b) => b.status?.availableReplicas === 1,
      90_000,
      'the Deployment available',
    );
    const [pod] = (await c.api.must('GET', `/api/v1/namespaces/${ex.namespace}/pods`)).items;
    const dg = await kubelet.process(pod.metadata.name, 'manager', 60_000);
    for (const o of guarded)
      await c.poll(pathOf(o), (b) => b.metadata.finalizers?.includes(`${HOLDER}${pod.metadata.uid}`), 20_000, `${o.kind} held`);
    await dg.line('ready', 20_000);
    // The Pod's grace period read, as in a pod that ran a while: what drainguard knew before this work.
    await dg.log('grace period read from the Pod', 20_000);
    dg.kill('SIGUSR2');
    await dg.line('work start 0', 10_000);
    return { ns: ex.namespace, pod: pod.metadata.name, uid: pod.metadata.uid, kubelet, guarded, dg, holders, close };
  } catch (err) {
    await close();
    throw err;
  }
}

/**
 * What the stop must look like whatever the deletion's grace period: the
 * operator's stop signal from drainguard, the guard released before the
 * kubelet's SIGKILL (which never came: drainguard exited first), no holder left.
 * Returns the figures: ms from the deletion to the stop signal, and before the kubelet's deadline.
 */
async function stoppedInTime(r: Running, graceS: number, seen = 'terminating'): Promise<Record<string, number>> {
  const { dg, kubelet, pod } = r;
  const terminating = kubelet.events.find((e) => e.pod === pod && e.what.startsWith(seen))!;
  assert.ok(terminating, kubelet.timeline());
  // The kubelet's SIGKILL: the grace period from when it saw the deletion, never sooner than 2 s after its SIGTERM.
  const sigterm = kubelet.events.find((e) => e.pod === pod && e.container === 'manager' && e.what === 'signal SIGTERM')!;
  const killAt = Math.max(terminating.at + graceS * 1000, sigterm.at + 2000);
  const timeline = () => `${kubelet.timeline()}\n${dg.stderr.join('\n')}\n${dg.stdout.join('\n')}`;
  assert.not.ok(
    kubelet.events.some((e) => e.pod === pod && e.what === 'signal SIGKILL'),
    `the kubelet killed the pod:\n${timeline()}`,
  );
  assert.ok(dg.stdout.includes('signal SIGTERM'), `the operator never got the stop signal:\n${timeline()}`);
  const stopSent = at(dg.logs().find((l) => l.msg === 'stop signal sent'));
  const released = at(dg.logs().find((l) => l.msg === 'guard released'));
  assert.ok(released < killAt, `the guard released ${released - killAt} ms after the kubelet's deadline:\n${timeline()}`);
  for (const o of r.guarded) assert.not.ok((await r.holders(o)).includes(r.uid), `${o.kind}/${o.metadata.name}: this pod's finalizer left`);
  assert.equal(kubelet.errors, []);
  return {
    stopSignalAfterDeleteMs: stopSent - terminating.at,
    stopSignalBeforeKillMs: killAt - stopSent,
    releasedBeforeKillMs: killAt - released,
  };
}

const deleted = (r: Running) => r.kubelet.event((e) => e.pod === r.pod && e.what === 'deleted 200', 40_000, 'the pod stopped and deleted');

for (const grace of [4, 1]) {
  test(`kubectl delete pod --grace-period=${grace} on a pod whose spec says ${SPEC_GRACE}: the stop signal and the release come before the kubelet's SIGKILL`, async () => {
    const r = await running();
    try {
      c.kubectl(['delete', 'pod', '-n', r.ns, r.pod, `--grace-period=${grace}`, '--wait=false']);
      await deleted(r);
      const figures = await stoppedInTime(r, grace);
      const read = r.dg.logs().find((l) => l.msg === 'deletion read from the Pod')!;
      assert.ok(read, r.dg.stderr.join('\n'));
      assert.is(read.deletionGracePeriodMs, grace * 1000);
      assert.ok((read.leftMs as number) <= grace * 1000, `${read.leftMs as number} ms left`);
      assert.is(r.dg.logs().find((l) => l.msg === 'drain ended')!.outcome, 'deadline', 'no time to finish an 8 s reconcile');
      console.log(`--grace-period=${grace}: ${JSON.stringify(figures)}`);
    } finally {
      await r.close();
    }
  });
}

test('kubectl delete pod --grace-period=0 --force: the kubelet kills a second later; drainguard drains nothing, stops at once, releases before', async () => {
  const r = await running();
  try {
    c.kubectl(['delete', 'pod', '-n', r.ns, r.pod, '--grace-period=0', '--force', '--wait=false']);
    await r.kubelet.event((e) => e.pod === r.pod && e.container === 'manager' && e.what.startsWith('exited'), 40_000, 'drainguard exited');
    await r.dg.exit(5000);
    await r.dg.log(
      'the Pod is gone (force-deleted): the kubelet kills its containers a second after the termination: no drain, the stop is fitted to it',
    );
    const { kubelet, dg, pod } = r;
    const sigterm = kubelet.events.find((e) => e.pod === pod && e.container === 'manager' && e.what === 'signal SIGTERM')!;
    const timeline = () => `${kubelet.timeline()}\n${dg.stderr.join('\n')}\n${dg.stdout.join('\n')}`;
    assert.ok(sigterm, timeline());
    assert.ok(dg.stdout.includes('signal SIGTERM'), `the operator never got the stop signal:\n${timeline()}`);
    assert.not.ok(
      kubelet.events.some((e) => e.pod === pod && e.what === 'signal SIGKILL'),
      `the kubelet killed drainguard:\n${timeline()}`,
    );
    const released = at(dg.logs().find((l) => l.msg === 'guard released'));
    assert.ok(released < sigterm.at + 1000, `the guard released ${released - sigterm.at} ms after the kubelet's signal:\n${timeline()}`);
    for (const o of r.guarded)
      assert.not.ok((await r.holders(o)).includes(r.uid), `${o.kind}/${o.metadata.name}: this pod's finalizer left`);
  } finally {
    await r.close();
  }
});

test('kubectl delete pod, then again with --grace-period=4 during the drain: the drain ends in time for the second', async () => {
  const r = await running();
  try {
    c.kubectl(['delete', 'pod', '-n', r.ns, r.pod, '--wait=false']);
    await r.dg.log('drain started', 10_000);
    c.kubectl(['delete', 'pod', '-n', r.ns, r.pod, '--grace-period=4', '--wait=false']);
    await deleted(r);
    // No second SIGTERM from the stand-in: drainguard sees the second delete by reading its Pod while it drains.
    const figures = await stoppedInTime(r, 4, 'grace shortened to 4s');
    assert.ok(
      r.dg.logs().some((l) => l.msg === "the Pod's deletion moved earlier: the stop is fitted to it"),
      r.dg.stderr.join('\n'),
    );
    console.log(`second delete, --grace-period=4: ${JSON.stringify(figures)}`);
  } finally {
    await r.close();
  }
});

test('an eviction through the Eviction API with DeleteOptions.gracePeriodSeconds 4: the same as a delete with it', async () => {
  const r = await running();
  try {
    const evicted = await c.api.call('POST', `/api/v1/namespaces/${r.ns}/pods/${r.pod}/eviction`, {
      apiVersion: 'policy/v1',
      kind: 'Eviction',
      metadata: { name: r.pod, namespace: r.ns },
      deleteOptions: { gracePeriodSeconds: 4 },
    });
    assert.is(evicted.status, 201, JSON.stringify(evicted.body));
    await deleted(r);
    const figures = await stoppedInTime(r, 4);
    assert.is(r.dg.logs().find((l) => l.msg === 'deletion read from the Pod')!.deletionGracePeriodMs, 4000);
    console.log(`eviction, gracePeriodSeconds 4: ${JSON.stringify(figures)}`);
  } finally {
    await r.close();
  }
});

test.run();
