// KEDA under drainguard with DRAINGUARD_IDLE_METRICS (the chart's
// drainguard.idleMetrics), through a rolling update and a node drain while
// ScaledObjects are being reconciled; and its control, the same chart with
// drainguard and no idleMetrics (KEDA connects no drain client, so the stop
// signal is passed on at once): the one value differs, so what differs in the
// outcome is the idle wait's. keda-rollout.test.ts is the control without
// drainguard at all for the same two operations.
//
// The node has no pod network: pods go on the host network (node-network.ts),
// where two pods of one ReplicaSet cannot bind the same metrics port, and the
// idle wait needs the metrics. So ONE replica (leader election as the chart
// has it), and each of the two handovers keeps old and new pod off each
// other's port:
// - a rolling update by `helm upgrade` that moves KEDA's metrics port
//   (`prometheus.operator.port`, a free one; idleMetrics follows it as a
//   template): the surge pod binds the new port while the old one drains on
//   the old;
// - `kubectl drain`'s steps: cordon the node, evict the pod through the
//   Eviction API (a PodDisruptionBudget of maxUnavailable 1 allows it), and
//   uncordon once the pod is gone. The test's stand-in scheduler (bindPods)
//   knows no cordon: it is stopped for the cordon's time, as kube-scheduler
//   would leave the replacement Pending on the one unschedulable node.
// Both handovers stream ScaledObjects until the old pod is being deleted, and
// a few more while it stops (STREAM, keda-load.ts): reconciles are queued and
// running at its SIGTERM. Interruptions are counted from KEDA's own log as in
// keda-rollout.ts: "Reconciler error" with "context canceled".

import * as assert from 'uvu/assert';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { freePort } from '../free-port.ts';
import { helmRun } from '../helm.ts';
import { LIBRARY } from '../../helm/support/charts.ts';
import { OPERATOR, addDrainguard, kedaCertificates, writeKedaChart } from './keda.ts';
import { SHORT_LEASE, type Tally, finalizeAll, klogTime, leads, ownPorts, ready, scaledObjects, tally } from './keda-load.ts';
import { type KedaRun, unstick } from './keda-uninstall.ts';
import { bindPods, hostNetworkPolicy } from './node-network.ts';
import { followPodLogs } from './pod-logs.ts';
import { refusedLine } from './release-objects.ts';

const HELM_MS = 150_000;
/**
 * ScaledObjects created one after another through a handover: at most 80, 4 more once the operator pod is being
 * stopped, and before that at most 10 unreconciled at a time: KEDA reconciles slower than the stream creates
 * (5 workers), so the queue is never empty at the stop, and the backlog the idle wait waits out stays short
 * (unbounded, it grew to 30-35 s of work, near the drain's 53 s).
 */
const STREAM = { after: 4, max: 80, window: 10 };
/** The idle wait's URL, following the chart's own value of KEDA's metrics port. */
export const IDLE_METRICS = 'http://127.0.0.1:{{ .Values.prometheus.operator.port }}/metrics';

/** A drainguard log line (JSON, in the operator container's log in wrap mode). */
type Line = Record<string, unknown> & { msg: string };

export interface Stop {
  /** 'rolling update' or 'node drain'. */
  readonly what: string;
  readonly from: string;
  readonly to: string;
  /** From the old pod's stop signal until the next one's "successfully acquired lease". */
  readonly gapMs: number;
  /** The old pod's log, what it says of its reconciles. */
  readonly tally: Tally;
  /** drainguard's "drain ended" in the old pod, and with the idle wait its "operator idle" (scrapes, afterMs). */
  readonly drainEnded?: Line;
  readonly idle?: Line;
}

export interface Idled extends Tally {
  readonly idleMetrics: boolean;
  readonly stops: Stop[];
  readonly created: number;
  /** The first eviction's status (201: the PDB allowed it). */
  readonly evicted: number;
  /** Operator pods bound while the node was cordoned. */
  readonly boundWhileCordoned: string[];
  readonly refused: string[];
  readonly log: string[];
}

const drainguardLines = (lines: string[]): Line[] =>
  lines.flatMap((l) => {
    if (!l.startsWith('{')) return [];
    try {
      const o = JSON.parse(l);
      return typeof o.msg === 'string' ? [o] : [];
    } catch {
      return [];
    }
  });

/** Two free loopback ports, not the same. */
async function twoPorts(): Promise<[number, number]> {
  const first = await freePort();
  for (;;) {
    const second = await freePort();
    if (second !== first) return [first, second];
  }
}

/** Installs KEDA with one replica under drainguard (idleMetrics when IDLE_METRICS), rolls it by helm upgrade and drains the node under load. */
export async function idleKeda(run: KedaRun, idleMetrics: boolean): Promise<Idled> {
  const { c, node } = run;
  const ns = (await c.namespace(idleMetrics ? 'keda-idle' : 'keda-idle-control')).name;
  const apps = (await c.namespace('keda-idle-apps')).name;
  await hostNetworkPolicy(c, ns);
  // Every pod of the namespace: the operator's and drainguard's post-delete hook's.
  let stopBinding = bindPods(c, ns, node);
  const logs = followPodLogs(node, ns);
  const kube = ['--kubeconfig', c.adminKubeconfig];
  const pods = async () => c.api.list(`/api/v1/namespaces/${ns}/pods?labelSelector=app%3D${OPERATOR}`);
  const all = () => logs.lines(OPERATOR, OPERATOR);
  const tail = () => `${all().slice(-40).join('\n')}\n${node.tail()}`;
  const podLog = (name: string) => logs.lines(name, OPERATOR);
  const load = scaledObjects(c, apps, tail);
  const cordon = (unschedulable: boolean) => c.api.patch(`/api/v1/nodes/${node.name}`, { spec: { unschedulable } });
  let cordoned = false;
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
    addDrainguard(chart, LIBRARY);
    if (idleMetrics) {
      const values = parse(readFileSync(join(chart, 'values.yaml'), 'utf8'));
      values.drainguard.idleMetrics = IDLE_METRICS;
      writeFileSync(join(chart, 'values.yaml'), stringify(values));
    }
    await c.api.create(`/apis/policy/v1/namespaces/${ns}/poddisruptionbudgets`, {
      apiVersion: 'policy/v1',
      kind: 'PodDisruptionBudget',
      metadata: { name: OPERATOR },
      spec: { maxUnavailable: 1, selector: { matchLabels: { app: OPERATOR } } },
    });
    const [oldPort, newPort] = await twoPorts();
    const set = [
      '--set-json',
      'operator.replicaCount=1',
      '--set-json',
      `prometheus.operator.port=${oldPort}`,
      '--set-json',
      `env=${JSON.stringify(SHORT_LEASE)}`,
    ];
    const installed = await helmRun(['install', 'keda', chart, '--namespace', ns, '--wait', '--timeout', '120s', ...set, ...kube], HELM_MS);
    if (installed.code !== 0) throw new Error(`helm install: ${installed.stderr}${installed.stdout}\n${tail()}`);
    const leader = async () =>
      c.waitFor(
        async () => {
          const ps = (await pods()).filter(ready);
          return ps.length === 1 && leads(podLog(ps[0].metadata.name)) && ps[0].metadata.name;
        },
        90_000,
        'the operator pod Ready, and the leader',
        tail,
      );
    const first: string = await leader();
    await load.batch();
    await c.waitFor(async () => (await load.done()) === load.created(), 60_000, 'the first batch reconciled', tail);

    const stops: Stop[] = [];
    const told = (what: string, from: string, to: string, stopped: number): void => {
      const lines = podLog(from);
      const dg = drainguardLines(lines);
      stops.push({
        what,
        from,
        to,
        gapMs: klogTime(leads(podLog(to))!) - stopped,
        tally: tally(lines),
        drainEnded: dg.find((l) => l.msg === 'drain ended'),
        idle: dg.find((l) => l.msg === 'operator idle: no reconcile running'),
      });
    };

    // `helm upgrade` to a new metrics port: the Deployment's template changes, one surge pod, then the old one stops.
    const rolled = await load.through(
      'rolling update',
      ns,
      first,
      async () => {
        const r = await helmRun(
          ['upgrade', 'keda', chart, '--namespace', ns, '--reuse-values', '--set-json', `prometheus.operator.port=${newPort}`, ...kube],
          HELM_MS,
        );
        if (r.code !== 0) throw new Error(`helm upgrade: ${r.stderr}${r.stdout}\n${tail()}`);
      },
      STREAM,
    );
    const second: string = await leader();
    await c.waitFor(async () => !(await c.api.get(`/api/v1/namespaces/${ns}/pods/${first}`)), 90_000, `${first} gone`, tail);
    told('rolling update', first, second, rolled);
    await c.waitFor(
      async () => (await load.done()) === load.created(),
      90_000,
      'every ScaledObject reconciled after the rolling update',
      tail,
    );

    // `kubectl drain`: cordon, evict through the PDB, wait for the pod to be gone; then uncordon.
    let evicted = 0;
    const drained = await load.through(
      'node drain',
      ns,
      second,
      async () => {
        await cordon(true);
        cordoned = true;
        stopBinding();
        const r = await c.api.request('POST', `/api/v1/namespaces/${ns}/pods/${second}/eviction`, {
          apiVersion: 'policy/v1',
          kind: 'Eviction',
          metadata: { name: second, namespace: ns },
        });
        evicted = r.status;
        if (r.status !== 201) throw new Error(`evicting ${second}: ${r.status} ${JSON.stringify(r.body)}`);
      },
      STREAM,
    );
    await c.waitFor(async () => !(await c.api.get(`/api/v1/namespaces/${ns}/pods/${second}`)), 90_000, `${second} gone`, tail);
    const boundWhileCordoned = (await pods()).filter((p) => p.spec.nodeName).map((p) => p.metadata.name);
    await cordon(false);
    cordoned = false;
    stopBinding = bindPods(c, ns, node);
    const third: string = await leader();
    told('node drain', second, third, drained);
    await c.waitFor(async () => (await load.done()) === load.created(), 90_000, 'every ScaledObject reconciled after the node drain', tail);

    // Clean up by the operator itself: every ScaledObject deleted and finalized by it, then the release.
    // The tally is of the handovers: a reconcile requeued for a ScaledObject the cleanup has just finalized fails with
    // "not found", a race of the cleanup's own (seen once in keda-rollout.test.ts), not of a stop.
    const handedOver = tally(all());
    await finalizeAll(c, apps, tail);
    const log = all();
    const uninstall = await helmRun(['uninstall', 'keda', '--namespace', ns, '--wait', '--timeout', '60s', ...kube], HELM_MS);
    if (uninstall.code !== 0) throw new Error(`helm uninstall: ${uninstall.stderr}${uninstall.stdout}`);
    uninstalled = true;
    return {
      idleMetrics,
      stops,
      ...handedOver,
      created: load.created(),
      evicted,
      boundWhileCordoned,
      refused: log.filter(refusedLine),
      log,
    };
  } finally {
    if (cordoned) await cordon(false);
    stopBinding();
    logs.stop();
    // After a failure: what is left removed by force, so that the next case can install the same CRDs.
    if (!uninstalled) {
      await helmRun(['uninstall', 'keda', '--namespace', ns, '--no-hooks', '--timeout', '30s', ...kube], HELM_MS);
      await unstick(c, ns, apps);
    }
  }
}

const fields = (l?: Line) =>
  l
    ? Object.entries(l)
        .filter(([k]) => !['time', 'level', 'msg'].includes(k))
        .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
        .join(' ')
    : '(none)';

export const story = (r: Idled) =>
  `drainguard ${r.idleMetrics ? 'with' : 'without'} idleMetrics: ${r.created} ScaledObjects, ${r.reconciles} reconciles, ` +
  `${r.interrupted.length} cut short (context canceled), ${r.failed.length} other reconcile errors\n` +
  r.stops
    .map(
      (s) =>
        `  ${s.what}: ${s.from} -> ${s.to}, next leader ${s.gapMs} ms after the stop; in ${s.from}: ${s.tally.reconciles} reconciles, ` +
        `${s.tally.interrupted.length} cut short\n    drain ended: ${fields(s.drainEnded)}\n    operator idle: ${fields(s.idle)}`,
    )
    .join('\n') +
  `\n  eviction: ${r.evicted}; bound while cordoned: ${r.boundWhileCordoned.join(', ') || '(none)'}\n` +
  `other errors:\n  ${r.failed.join('\n  ') || '(none)'}\nrefused:\n  ${r.refused.join('\n  ') || '(none)'}\n`;

/** A conflict: the reconcile read a ScaledObject another one had just written; controller-runtime retries it. */
const CONFLICT = /Operation cannot be fulfilled .* the object has been modified/;

/** What holds either way: both handovers to a new pod, every ScaledObject reconciled (idleKeda waits for it), no 403, no error but a stop's or a conflict. */
export function assertHandedOver(r: Idled): void {
  if (process.env.TEST_VERBOSE) process.stderr.write(`${story(r)}\n`);
  assert.equal(
    r.stops.map((s) => s.what),
    ['rolling update', 'node drain'],
    story(r),
  );
  for (const s of r.stops) {
    assert.is.not(s.to, s.from, story(r));
    assert.ok(s.drainEnded, `drainguard's "drain ended" in ${s.from}\n${story(r)}`);
  }
  assert.ok(r.reconciles >= r.created, `every ScaledObject created was reconciled at least once\n${story(r)}`);
  assert.is(r.evicted, 201, story(r));
  assert.equal(r.boundWhileCordoned, [], `no operator pod started on the cordoned node\n${story(r)}`);
  assert.equal(r.refused, [], `no 401/403 in the operator's log\n${story(r)}`);
  assert.equal(
    r.failed.filter((l) => !CONFLICT.test(l)),
    [],
    story(r),
  );
}
