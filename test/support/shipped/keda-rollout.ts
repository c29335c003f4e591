// KEDA's two replicas through a rolling update and an eviction, with or
// without drainguard, while ScaledObjects are being reconciled: the chart of
// keda.ts installed with `operator.replicaCount: 2` and leader election (its
// default), a PodDisruptionBudget (minAvailable 1) on the operator's pods, a
// batch of ScaledObjects created at the moment of each handover, and what the
// operator's own log says of every reconcile.
//
// The node has no pod network: both replicas run on the host network
// (node-network.ts), so they must not bind the same ports: keda-load.ts's
// ownPorts(), and for this file the Prometheus metrics off too
// (`prometheus.operator.enabled: false`, which KEDA's main.go turns into
// controller-runtime's "0"; keda-idle.ts gives each pod a port of its own
// instead). KEDA's lease is shortened by its own variables
// (KEDA_OPERATOR_LEADER_ELECTION_*) through the chart's `env`. The operator
// binary and the rest of the chart are unchanged.

import * as assert from 'uvu/assert';
import { helmRun } from '../helm.ts';
import { LIBRARY } from '../../helm/support/charts.ts';
import { OPERATOR, addDrainguard, kedaCertificates, writeKedaChart } from './keda.ts';
import { SHORT_LEASE, type Tally, finalizeAll, klogTime, leads as leadLine, ownPorts, ready, scaledObjects, tally } from './keda-load.ts';
import { type KedaRun, unstick } from './keda-uninstall.ts';
import { bindPods, hostNetworkPolicy } from './node-network.ts';
import { followPodLogs } from './pod-logs.ts';
import { refusedLine } from './release-objects.ts';

const HELM_MS = 150_000;
/** At most this many ScaledObjects created one after another through a handover: reconciles queued and running when it comes. */
const STREAM = 40;
/** How many more the stream creates once the leader is being stopped. */
const AFTER_STOP = 4;

export interface Handover {
  /** 'rolling update' or 'eviction'. */
  readonly what: string;
  /** The old leader pod, and the pod that led after it. */
  readonly from: string;
  readonly to: string;
  /** From the old leader's deletion (its SIGTERM) until the next leader's "successfully acquired lease". */
  readonly gapMs: number;
}

/** The Tally is of every operator pod's log. */
export interface Rolled extends Tally {
  readonly guarded: boolean;
  readonly handovers: Handover[];
  /** The ScaledObjects created, every one of them reconciled in the end (finalizer, HPA, Ready True), or rollKeda threw. */
  readonly created: number;
  /** The ClusterRole's finalizers after the handovers: drainguard's holders, each of a pod still there. */
  readonly holders: string[];
  readonly livePods: string[];
  /** Log lines with 401/403. */
  readonly refused: string[];
  /** The eviction of the other pod while the first one's replacement was not there yet: the PDB's 429. */
  readonly blockedEviction: number;
  readonly log: string[];
}

/** Installs KEDA with two replicas (drainguard added when GUARDED), rolls it and evicts its leader under load; says what its log shows. */
export async function rollKeda(run: KedaRun, guarded: boolean): Promise<Rolled> {
  const { c, node } = run;
  const ns = (await c.namespace(guarded ? 'keda-roll-dg' : 'keda-roll')).name;
  const apps = (await c.namespace('keda-roll-apps')).name;
  await hostNetworkPolicy(c, ns);
  // Every pod of the namespace: the operator's and drainguard's post-delete hook's.
  const stopBinding = bindPods(c, ns, node);
  const logs = followPodLogs(node, ns);
  const kube = ['--kubeconfig', c.adminKubeconfig];
  const pods = async () => c.api.list(`/api/v1/namespaces/${ns}/pods?labelSelector=app%3D${OPERATOR}`);
  const all = () => logs.lines(OPERATOR, OPERATOR);
  const tail = () => `${all().slice(-40).join('\n')}\n${node.tail()}`;
  const podLog = (name: string) => logs.lines(name, OPERATOR);
  const leads = (name: string) => leadLine(podLog(name));
  const load = scaledObjects(c, apps, tail);
  let uninstalled = false;
  try {
    await c.api.create(`/api/v1/namespaces/${ns}/secrets`, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'kedaorg-certs' },
      data: kedaCertificates(ns),
    });
    const chart = writeKedaChart();
    ownPorts(chart);
    if (guarded) addDrainguard(chart, LIBRARY);
    await c.api.create(`/apis/policy/v1/namespaces/${ns}/poddisruptionbudgets`, {
      apiVersion: 'policy/v1',
      kind: 'PodDisruptionBudget',
      metadata: { name: OPERATOR },
      spec: { minAvailable: 1, selector: { matchLabels: { app: OPERATOR } } },
    });
    // Each handover waits for KEDA's lease to expire (SHORT_LEASE), and the two files must fit the runner's 240 s.
    const set = [
      '--set-json',
      'operator.replicaCount=2',
      '--set-json',
      'prometheus.operator.enabled=false',
      '--set-json',
      `env=${JSON.stringify(SHORT_LEASE)}`,
    ];
    const installed = await helmRun(['install', 'keda', chart, '--namespace', ns, '--wait', '--timeout', '120s', ...set, ...kube], HELM_MS);
    if (installed.code !== 0) throw new Error(`helm install: ${installed.stderr}${installed.stdout}\n${tail()}`);
    const leader = async () =>
      c.waitFor(
        async () => {
          const ps = await pods();
          const now = ps.filter((p) => ready(p) && leads(p.metadata.name));
          return ps.filter(ready).length === 2 && now.length === 1 && now[0].metadata.name;
        },
        90_000,
        'two operator pods Ready, one of them the leader',
        tail,
      );
    const first: string = await leader();

    await load.batch();
    await c.waitFor(async () => (await load.done()) === load.created(), 60_000, 'the first batch reconciled', tail);

    const handovers: Handover[] = [];
    // The handover: ScaledObjects created one after another from before what stops the leader until the next one leads,
    // then every ScaledObject reconciled.
    const handover = async (what: string, from: string, stop: () => Promise<void>) => {
      const stopped = await load.through(what, ns, from, stop, { after: AFTER_STOP, max: STREAM });
      const to: string = await leader();
      const acquired = klogTime(leads(to)!);
      handovers.push({ what, from, to, gapMs: acquired - stopped });
      await c.waitFor(async () => (await load.done()) === load.created(), 90_000, `every ScaledObject reconciled after the ${what}`, tail);
      await c.waitFor(async () => !(await c.api.get(`/api/v1/namespaces/${ns}/pods/${from}`)), 60_000, `${from} gone`, tail);
      return to;
    };

    // `kubectl rollout restart`: the template's restartedAt annotation.
    const second = await handover('rolling update', first, async () => {
      await c.api.patch(`/apis/apps/v1/namespaces/${ns}/deployments/${OPERATOR}`, {
        spec: { template: { metadata: { annotations: { 'kubectl.kubernetes.io/restartedAt': new Date().toISOString() } } } },
      });
    });
    await c.waitFor(
      async () => {
        const d = await c.api.get(`/apis/apps/v1/namespaces/${ns}/deployments/${OPERATOR}`);
        return d.status.updatedReplicas === 2 && d.status.readyReplicas === 2 && d.status.replicas === 2;
      },
      90_000,
      'the rolling update complete',
      tail,
    );

    // `kubectl drain`'s way: the Eviction API, through the PDB; then the other pod, refused while only one is left.
    let blockedEviction = 0;
    const evict = (name: string) =>
      c.api.request('POST', `/api/v1/namespaces/${ns}/pods/${name}/eviction`, {
        apiVersion: 'policy/v1',
        kind: 'Eviction',
        metadata: { name, namespace: ns },
      });
    await handover('eviction', second, async () => {
      const other = (await pods()).find((p) => p.metadata.name !== second)!.metadata.name;
      const r = await evict(second);
      if (r.status !== 201) throw new Error(`evicting ${second}: ${r.status} ${JSON.stringify(r.body)}`);
      blockedEviction = (await evict(other)).status;
    });

    // Clean up by the operator itself: every ScaledObject deleted and finalized by it, then the release.
    // The tally is of the handovers: a reconcile requeued for a ScaledObject the cleanup has just finalized fails with
    // "not found", a race of the cleanup's own (seen once in keda-rollout.test.ts), not of a stop.
    const handedOver = tally(all());
    await finalizeAll(c, apps, tail);
    const log = all();
    const holders = ((await c.api.get(`/apis/rbac.authorization.k8s.io/v1/clusterroles/${OPERATOR}`)).metadata.finalizers ?? []).filter(
      (f: string) => f.startsWith('drainguard.dev/'),
    );
    const livePods = (await pods()).map((p) => p.metadata.uid);
    const uninstall = await helmRun(['uninstall', 'keda', '--namespace', ns, '--wait', '--timeout', '60s', ...kube], HELM_MS);
    if (uninstall.code !== 0) throw new Error(`helm uninstall: ${uninstall.stderr}${uninstall.stdout}`);
    uninstalled = true;
    return {
      guarded,
      handovers,
      ...handedOver,
      created: load.created(),
      holders,
      livePods,
      refused: log.filter(refusedLine),
      blockedEviction,
      log,
    };
  } finally {
    stopBinding();
    logs.stop();
    // After a failure: what is left removed by force, so that the next case can install the same CRDs.
    if (!uninstalled) {
      await helmRun(['uninstall', 'keda', '--namespace', ns, '--no-hooks', '--timeout', '30s', ...kube], HELM_MS);
      await unstick(c, ns, apps);
    }
  }
}

export const story = (r: Rolled) =>
  `${r.guarded ? 'with' : 'without'} drainguard: ${r.created} ScaledObjects, ${r.reconciles} reconciles, ` +
  `${r.interrupted.length} cut short (context canceled), ${r.failed.length} other reconcile errors\n` +
  r.handovers.map((h) => `  ${h.what}: ${h.from} -> ${h.to}, next leader ${h.gapMs} ms after the stop`).join('\n') +
  `\n  second eviction: ${r.blockedEviction}\n  holders: ${r.holders.join(', ') || '(none)'}\n` +
  `other errors:\n  ${r.failed.join('\n  ') || '(none)'}\nrefused:\n  ${r.refused.join('\n  ') || '(none)'}\n`;

const tell = (r: Rolled) => process.env.TEST_VERBOSE && process.stderr.write(`${story(r)}\n`);

/** A conflict: the reconcile read a ScaledObject another one had just written; controller-runtime retries it. */
const CONFLICT = /Operation cannot be fulfilled .* the object has been modified/;

/**
 * What holds with drainguard and without: each handover went to another pod, every ScaledObject ended reconciled
 * (rollKeda waits for it), the PDB refused the second eviction, no 403, and no reconcile failed but for a stop or a
 * conflict (both retried).
 */
export function assertHandedOver(r: Rolled): void {
  tell(r);
  assert.equal(
    r.handovers.map((h) => h.what),
    ['rolling update', 'eviction'],
    story(r),
  );
  for (const h of r.handovers) assert.is.not(h.to, h.from, story(r));
  assert.ok(r.reconciles >= r.created, `every ScaledObject created was reconciled at least once\n${story(r)}`);
  assert.is(r.blockedEviction, 429, `the PDB refused evicting the second pod while the first was going\n${story(r)}`);
  assert.equal(r.refused, [], `no 401/403 in the operator's log\n${story(r)}`);
  assert.equal(
    r.failed.filter((l) => !CONFLICT.test(l)),
    [],
    story(r),
  );
}
