// KEDA's two replicas through a rolling update and an eviction, with or
// without drainguard, while ScaledObjects are being reconciled: the chart of
// keda.ts installed with `operator.replicaCount: 2` and leader election (its
// default), a PodDisruptionBudget (minAvailable 1) on the operator's pods, a
// batch of ScaledObjects created at the moment of each handover, and what the
// operator's own log says of every reconcile.
//
// The node has no pod network: both replicas run on the host network
// (node-network.ts), so they must not bind the same ports. For this file only,
// the chart's operator listens on none it could share: Prometheus metrics off
// (`prometheus.operator.enabled: false`, which KEDA's main.go turns into
// controller-runtime's "0"), the health probe off (`--health-probe-bind-address=0`,
// the chart's two probes removed with it: nothing answers them) and the gRPC
// metrics service on `:0` (a port the kernel picks; nothing here calls it).
// The container's `ports` go too: on the host network each is a host port,
// and the kubelet refuses (NodePorts) a second pod that asks for the same.
// KEDA's lease is shortened by its own variables (KEDA_OPERATOR_LEADER_ELECTION_*)
// through the chart's `env`. The operator binary and the rest of the chart are unchanged.

import * as assert from 'uvu/assert';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { helmRun } from '../helm.ts';
import { LIBRARY } from '../../helm/support/charts.ts';
import { OPERATOR, SCALEDOBJECT_FINALIZER, addDrainguard, kedaCertificates, writeKedaChart } from './keda.ts';
import { type KedaRun, unstick } from './keda-uninstall.ts';
import { bindPods, hostNetworkPolicy } from './node-network.ts';
import { followPodLogs } from './pod-logs.ts';
import { REFUSED } from './release-objects.ts';

const KEDA_API = '/apis/keda.sh/v1alpha1';
const HELM_MS = 150_000;
/** ScaledObjects created at once before the handovers: KEDA reconciles 5 at a time (KEDA_SCALEDOBJECT_CTRL_MAX_RECONCILES). */
const BATCH = 5;
/** At most this many ScaledObjects created one after another through a handover: reconciles queued and running when it comes. */
const STREAM = 40;
/** How many more the stream creates once the leader is being stopped. */
const AFTER_STOP = 4;
/** controller-runtime's line for a reconcile that returned an error, and the error of one cut short by the manager's stop. */
const FAILED = 'Reconciler error';
const CANCELED = /context canceled/;

export interface Handover {
  /** 'rolling update' or 'eviction'. */
  readonly what: string;
  /** The old leader pod, and the pod that led after it. */
  readonly from: string;
  readonly to: string;
  /** From the old leader's deletion (its SIGTERM) until the next leader's "successfully acquired lease". */
  readonly gapMs: number;
}

export interface Rolled {
  readonly guarded: boolean;
  readonly handovers: Handover[];
  /** "Reconciling ScaledObject" lines, in every operator pod's log. */
  readonly reconciles: number;
  /** The ScaledObjects created, every one of them reconciled in the end (finalizer, HPA, Ready True), or rollKeda threw. */
  readonly created: number;
  /** The reconciles (reconcileID) that failed with "context canceled": cut short by the operator's stop. */
  readonly interrupted: string[];
  /** The "Reconciler error" lines that failed otherwise (a conflict on a ScaledObject another reconcile wrote: retried). */
  readonly failed: string[];
  /** The ClusterRole's finalizers after the handovers: drainguard's holders, each of a pod still there. */
  readonly holders: string[];
  readonly livePods: string[];
  /** Log lines with 401/403. */
  readonly refused: string[];
  /** The eviction of the other pod while the first one's replacement was not there yet: the PDB's 429. */
  readonly blockedEviction: number;
  readonly log: string[];
}

/** The chart's Deployment with no port two replicas on one host network could share (see the header). */
function ownPorts(chart: string): void {
  const file = join(chart, 'templates/manager/deployment.yaml');
  const text = readFileSync(file, 'utf8');
  const next = text
    .replace('"--health-probe-bind-address=:{{ .Values.operator.healthPort }}"', '"--health-probe-bind-address=0"')
    .replace('"--metrics-service-bind-address=:{{ .Values.service.portGrpc }}"', '"--metrics-service-bind-address=:0"')
    .replace(/ {10}livenessProbe:\n[\s\S]*? {10}env:\n/, '          env:\n');
  if (next === text || /Probe:|containerPort/.test(next) || !next.includes('bind-address=:0'))
    throw new Error(`the chart's Deployment is not in the shape ownPorts() knows:\n${text}`);
  writeFileSync(file, next);
}

/** The distinct reconcileIDs of LINES (controller-runtime's log fields). */
const reconcileIds = (lines: string[]) => [...new Set(lines.map((l) => /"reconcileID": "([^"]+)"/.exec(l)?.[1] ?? l))];

/** When a klog line (client-go's leader election: "I1207 02:01:49.101968 ...", no year) was written; this year's, UTC. */
function klogTime(line: string): number {
  const m = /^[IWE](\d\d)(\d\d) (\d\d:\d\d:\d\d\.\d+)/.exec(line);
  if (!m) throw new Error(`not a klog line: ${line}`);
  return Date.parse(`${new Date().getUTCFullYear()}-${m[1]}-${m[2]}T${m[3]!.slice(0, 12)}Z`);
}

const ready = (p: any) =>
  !p.metadata.deletionTimestamp && p.status?.conditions?.some((x: any) => x.type === 'Ready' && x.status === 'True');

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
  const leads = (name: string) => podLog(name).find((l) => l.includes('"Successfully acquired lease"'));
  let created = 0;
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
    // KEDA's leader election from its own variables, shorter than its 15 s lease, 10 s renewal and 2 s retry: each
    // handover waits for the lease to expire, and the two files must fit the runner's 240 s.
    const env = [
      { name: 'KEDA_OPERATOR_LEADER_ELECTION_LEASE_DURATION', value: '6s' },
      { name: 'KEDA_OPERATOR_LEADER_ELECTION_RENEW_DEADLINE', value: '4s' },
      { name: 'KEDA_OPERATOR_LEADER_ELECTION_RETRY_PERIOD', value: '1s' },
    ];
    const set = [
      '--set-json',
      'operator.replicaCount=2',
      '--set-json',
      'prometheus.operator.enabled=false',
      '--set-json',
      `env=${JSON.stringify(env)}`,
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

    // A target and its ScaledObject.
    const scaled = async () => {
      const name = `app-${created++}`;
      await c.api.create(`/apis/apps/v1/namespaces/${apps}/deployments`, {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name },
        spec: {
          replicas: 2,
          selector: { matchLabels: { app: name } },
          template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: 'app', image: 'app' }] } },
        },
      });
      await c.api.create(`${KEDA_API}/namespaces/${apps}/scaledobjects`, {
        apiVersion: 'keda.sh/v1alpha1',
        kind: 'ScaledObject',
        metadata: { name },
        spec: {
          scaleTargetRef: { name },
          minReplicaCount: 1,
          maxReplicaCount: 10,
          triggers: [{ type: 'cron', metadata: { timezone: 'UTC', start: '0 0 * * *', end: '1 0 * * *', desiredReplicas: '3' } }],
        },
      });
    };
    const batch = () => Promise.all(Array.from({ length: BATCH }, scaled));
    const done = async () => {
      const sos = await c.api.list(`${KEDA_API}/namespaces/${apps}/scaledobjects`);
      const hpas = new Set(
        (await c.api.list(`/apis/autoscaling/v2/namespaces/${apps}/horizontalpodautoscalers`)).map((h) => h.metadata.name),
      );
      return sos.filter(
        (so) =>
          so.metadata.finalizers?.includes(SCALEDOBJECT_FINALIZER) &&
          hpas.has(`keda-hpa-${so.metadata.name}`) &&
          so.status?.conditions?.some((x: any) => x.type === 'Ready' && x.status === 'True'),
      ).length;
    };
    await batch();
    await c.waitFor(async () => (await done()) === created, 60_000, 'the first batch reconciled', tail);

    const handovers: Handover[] = [];
    // The handover: ScaledObjects created one after another from before what stops the leader until the next one leads,
    // then every ScaledObject reconciled.
    const handover = async (what: string, from: string, stop: () => Promise<void>) => {
      let after = Infinity;
      const before = created;
      const stream = (async () => {
        for (let i = 0; i < STREAM && after-- > 0; i++) await scaled();
      })();
      await c.waitFor(async () => (await done()) >= before + 3, 30_000, `the leader reconciling before the ${what}`, tail);
      await stop();
      // deletionTimestamp is when the grace period ends: the stop signal went deletionGracePeriodSeconds before.
      const stopped = await c.waitFor(
        async () => {
          const m = (await c.api.get(`/api/v1/namespaces/${ns}/pods/${from}`))?.metadata;
          return m?.deletionTimestamp && Date.parse(m.deletionTimestamp) - m.deletionGracePeriodSeconds * 1000;
        },
        60_000,
        `${from} being deleted`,
      );
      after = AFTER_STOP;
      await stream;
      const to: string = await leader();
      const acquired = klogTime(leads(to)!);
      handovers.push({ what, from, to, gapMs: acquired - stopped });
      await c.waitFor(async () => (await done()) === created, 90_000, `every ScaledObject reconciled after the ${what}`, tail);
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
    for (const so of await c.api.list(`${KEDA_API}/namespaces/${apps}/scaledobjects`))
      await c.api.delete(`${KEDA_API}/namespaces/${apps}/scaledobjects/${so.metadata.name}`);
    await c.waitFor(async () => (await c.api.list(`${KEDA_API}/namespaces/${apps}/scaledobjects`)).length === 0, 60_000, 'finalized', tail);
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
      reconciles: log.filter((l) => l.includes('Reconciling ScaledObject')).length,
      created,
      interrupted: reconcileIds(log.filter((l) => l.includes(FAILED) && CANCELED.test(l))),
      failed: log.filter((l) => l.includes(FAILED) && !CANCELED.test(l)),
      holders,
      livePods,
      refused: log.filter((l) => REFUSED.test(l)),
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
