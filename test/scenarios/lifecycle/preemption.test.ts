// Preemption by the real kube-scheduler on the real kubelet. The run's control
// plane has no scheduler: this file starts one of its own (its schedulerName is
// the file's, test/support/cluster/scheduler.ts). Two low-priority pods fill the
// node's CPU by their requests (the node's allocatable, read from it); then a
// pod of a high PriorityClass that fits only once both are gone. The scheduler
// sets their DisruptionTarget (PreemptionByScheduler) and deletes them with
// their own grace (DeleteOptions{}: the spec's 30 s); the kubelet SIGTERMs and
// SIGKILLs at that deletion's deadline.
// - `fitted`: drainguard in wrap mode guarding a Role, an 8 s reconcile in
//   flight at the preemption: the cause `preemption` read, the deletion's
//   deadline, the reconcile completed, the operator stopped, the guard released
//   before the kubelet's SIGKILL;
// - `bare`, the control: the same operator without drainguard: its reconcile in
//   flight is interrupted by the kubelet's SIGTERM.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { type Scheduler, type TestCluster, type WatchEvent, startScheduler } from '../../support/cluster/index.ts';
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

/** The Pods' terminationGracePeriodSeconds: the scheduler deletes with it. */
const GRACE_S = 30;
const VICTIMS = ['fitted', 'bare'] as const;

let c: TestCluster;
let node: RealNode;
let ns: string;
let scheduler: Scheduler;
let low: string;
let high: string;
/** Millicores each victim requests, and the preemptor: more than one victim's leaving frees. */
let victimCpu: number;
let preemptorCpu: number;

/** `2`, `1500m`: millicores. */
const millicores = (q: string) => (q.endsWith('m') ? Number(q.slice(0, -1)) : Number(q) * 1000);

test.before(async () => {
  ({ c, node, ns } = await nodeWithNamespace('preempt'));
  scheduler = startScheduler(c);
  const unique = ns.slice(ns.lastIndexOf('-') + 1);
  [low, high] = [`preempt-low-${unique}`, `preempt-high-${unique}`];
  await c.create({ apiVersion: 'scheduling.k8s.io/v1', kind: 'PriorityClass', metadata: { name: low }, value: 100 });
  await c.create({ apiVersion: 'scheduling.k8s.io/v1', kind: 'PriorityClass', metadata: { name: high }, value: 1_000_000 });
  const allocatable = millicores(String((await c.api.get(`/api/v1/nodes/${node.name}`)).status.allocatable.cpu));
  // Both victims hold 90% of the node; with one gone 55% is free: the preemptor's 75% needs both gone.
  victimCpu = Math.floor(allocatable * 0.45);
  preemptorCpu = Math.floor(allocatable * 0.75);
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
});

const timeline = (pod: string) => `--- ${pod}\n${wrapStdout(node, pod).join('\n')}\n${wrapStderr(node, pod).join('\n')}`;
const podPath = (name: string) => `/api/v1/namespaces/${ns}/pods/${name}`;

type PodSpec = {
  nodeName?: string;
  schedulerName?: string;
  nodeSelector?: Record<string, string>;
  priorityClassName?: string;
  containers: { [field: string]: unknown; command: string[]; resources?: object }[];
};

/** Left to the file's scheduler, on this file's node only, at PRIORITY_CLASS, requesting CPU millicores. */
function scheduled(pod: { spec: PodSpec }, priorityClass: string, cpu: number): object {
  delete pod.spec.nodeName;
  pod.spec.schedulerName = scheduler.name;
  pod.spec.nodeSelector = { 'kubernetes.io/hostname': node.name };
  pod.spec.priorityClassName = priorityClass;
  pod.spec.containers[0]!.resources = { requests: { cpu: `${cpu}m` } };
  return pod;
}

/** A low-priority wrap-mode pod of the operator fixture; `bare`: the operator's own command, without drainguard. */
function victim(name: string, env: Record<string, string>, { bare = false } = {}): object {
  const pod = wrapPod(node, {
    name,
    namespace: ns,
    serviceAccountName: 'op',
    apiUrl: c.url,
    operator: fixture('operator.ts'),
    terminationGracePeriodSeconds: GRACE_S,
    // The reconcile starts when the test sends SIGUSR2, just before the preemptor is created.
    env: { FIXTURE_WORK: '8000', FIXTURE_WORK_AT: 'usr2', ...env },
  }) as { spec: PodSpec };
  if (bare) pod.spec.containers[0]!.command = ['/busybox', 'sh', '-c', 'exec "$NODE" "$OPERATOR" >>/out/$DRAINGUARD_POD_NAME.out 2>&1'];
  return scheduled(pod, low, victimCpu);
}

test(
  "preempted by the real scheduler (its DisruptionTarget, a deletion with the spec's 30 s): drainguard reads preemption, " +
    "goes by the deletion's deadline, the reconcile completes and the guard is released before the kubelet's SIGKILL; " +
    'without drainguard (the control) the reconcile is interrupted',
  async () => {
    const detail = () => `${scheduler.tail()}\n${node.tail()}`;
    await c.api.create(
      `/api/v1/namespaces/${ns}/pods`,
      victim('fitted', { DRAINGUARD_GUARD: `role/${ns}/guarded`, DRAINGUARD_STOP_TIMEOUT: '2s' }),
    );
    await c.api.create(`/api/v1/namespaces/${ns}/pods`, victim('bare', { FIXTURE_CONNECT: 'never' }, { bare: true }));
    // What the scheduler did to each victim, as the API server saw it: its DisruptionTarget, its deletion.
    const seen = new Map<string, { disruption?: string; deletionGracePeriodSeconds?: number }>();
    const stopWatch = c.api.watch(`/api/v1/namespaces/${ns}/pods`, (e: WatchEvent) => {
      const pod = e.object;
      const target = pod?.status?.conditions?.find((x: { type: string }) => x.type === 'DisruptionTarget');
      const was = seen.get(pod?.metadata?.name) ?? {};
      seen.set(pod?.metadata?.name, {
        disruption: was.disruption ?? (target?.status === 'True' ? target.reason : undefined),
        deletionGracePeriodSeconds: was.deletionGracePeriodSeconds ?? pod?.metadata?.deletionGracePeriodSeconds,
      });
    });
    try {
      const ready = (p: string) => wrapStdout(node, p).includes('ready');
      await c.waitFor(
        async () => {
          for (const p of VICTIMS) if ((await c.api.get(podPath(p)))?.spec?.nodeName !== node.name) return false;
          return ready('fitted') && ready('bare');
        },
        120_000,
        'both victims bound by the scheduler and their operators ready',
        () => `${detail()}\n${timeline('fitted')}\n${timeline('bare')}`,
      );
      const guarded = `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/roles/guarded`;
      await c.waitFor(
        async () => ((await c.api.get(guarded))?.metadata?.finalizers ?? []).length > 0,
        60_000,
        "the guard's finalizer on the Role",
        () => timeline('fitted'),
      );
      for (const p of VICTIMS) {
        process.kill(wrapOperatorPid(ns, p), 'SIGUSR2');
        await c.waitFor(
          () => wrapStdout(node, p).includes('work start 0'),
          10_000,
          `${p}'s reconcile started`,
          () => timeline(p),
        );
      }
      const preemptorAt = Date.now();
      await c.api.create(
        `/api/v1/namespaces/${ns}/pods`,
        scheduled(
          {
            apiVersion: 'v1',
            kind: 'Pod',
            metadata: { name: 'preemptor' },
            spec: {
              hostNetwork: true,
              terminationGracePeriodSeconds: 1,
              containers: [{ name: 'main', image: TOOLS_IMAGE, command: ['/busybox', 'sleep', '3600'] }],
            },
          } as { spec: PodSpec },
          high,
          preemptorCpu,
        ),
      );
      for (const p of VICTIMS)
        await c.waitFor(
          async () => (await c.api.get(podPath(p))) === undefined,
          60_000,
          `${p} gone`,
          () => `${detail()}\n${timeline(p)}`,
        );
      // The preemption made room: the preemptor bound to the node and running there.
      await c.waitFor(
        async () => {
          const p = await c.api.get(podPath('preemptor'));
          return p?.spec?.nodeName === node.name && p?.status?.phase === 'Running';
        },
        60_000,
        'the preemptor running on the node',
        detail,
      );
      for (const p of VICTIMS)
        assert.equal(
          seen.get(p),
          { disruption: 'PreemptionByScheduler', deletionGracePeriodSeconds: GRACE_S },
          `${p} preempted by the scheduler, deleted with its grace:\n${scheduler.tail()}`,
        );

      const { stoppedAt, drainMs, marginMs, lastMs } = await assertDeletedPair({
        ...{ c, node, ns, fitted: 'fitted', bare: 'bare', guarded },
        ...{ cause: 'preemption', disruption: 'PreemptionByScheduler', graceS: GRACE_S },
      });
      // The preemptor stopped by its kubelet (grace 1 s), not left running for the node's stop to kill.
      await c.api.delete(podPath('preemptor'), { gracePeriodSeconds: 1 });
      await c.waitFor(async () => (await c.api.get(podPath('preemptor'))) === undefined, 60_000, 'the preemptor gone', detail);
      console.log(
        `preemption by kube-scheduler ${c.release}, the spec's ${GRACE_S} s: the kubelet's stop ${stoppedAt - preemptorAt} ms after the ` +
          `preemptor was created, drained in ${drainMs} ms, guard released ${marginMs} ms and the last line ${lastMs} ms ` +
          "before the kubelet's SIGKILL (its stop + grace); control without drainguard: reconcile interrupted",
      );
    } finally {
      stopWatch();
    }
  },
);

test.run();
