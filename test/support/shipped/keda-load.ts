// What the KEDA handover scenarios share (keda-rollout.ts, keda-idle.ts): the
// chart's Deployment made fit for pods of one ReplicaSet side by side on the
// node's host network, ScaledObjects (each with its target) created in a
// batch or in a stream through a handover, and what KEDA's own log says of
// every reconcile.

import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TestCluster } from '../cluster/index.ts';
import { SCALEDOBJECT_FINALIZER } from './keda.ts';

export const KEDA_API = '/apis/keda.sh/v1alpha1';
/** ScaledObjects created at once before the handovers: KEDA reconciles 5 at a time (KEDA_SCALEDOBJECT_CTRL_MAX_RECONCILES). */
export const BATCH = 5;
/** controller-runtime's line for a reconcile that returned an error, and the error of one cut short by the manager's stop. */
const FAILED = 'Reconciler error';
const CANCELED = /context canceled/;

/** KEDA's leader election from its own variables, shorter than its 15 s lease, 10 s renewal and 2 s retry: each handover waits for the lease to expire. */
export const SHORT_LEASE = [
  { name: 'KEDA_OPERATOR_LEADER_ELECTION_LEASE_DURATION', value: '6s' },
  { name: 'KEDA_OPERATOR_LEADER_ELECTION_RENEW_DEADLINE', value: '4s' },
  { name: 'KEDA_OPERATOR_LEADER_ELECTION_RETRY_PERIOD', value: '1s' },
];

/**
 * The chart's Deployment with no port two pods on one host network could share: the health probe off
 * (`--health-probe-bind-address=0`, the chart's two probes removed with it: nothing answers them), the gRPC
 * metrics service on `:0` (a port the kernel picks; nothing here calls it), and the container's `ports` gone
 * (on the host network each is a host port, and the kubelet refuses a second pod that asks for the same).
 * The Prometheus metrics port stays in the args: the caller turns it off, or gives each pod's its own.
 */
export function ownPorts(chart: string): void {
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

/** When a klog line (client-go's leader election: "I1207 02:01:49.101968 ...", no year) was written; this year's, UTC. */
export function klogTime(line: string): number {
  const m = /^[IWE](\d\d)(\d\d) (\d\d:\d\d:\d\d\.\d+)/.exec(line);
  if (!m) throw new Error(`not a klog line: ${line}`);
  return Date.parse(`${new Date().getUTCFullYear()}-${m[1]}-${m[2]}T${m[3]!.slice(0, 12)}Z`);
}

export const ready = (p: any): boolean =>
  !p.metadata.deletionTimestamp && p.status?.conditions?.some((x: any) => x.type === 'Ready' && x.status === 'True');

/** The lease line of a pod that became the leader. */
export const leads = (lines: string[]): string | undefined => lines.find((l) => l.includes('"Successfully acquired lease"'));

/** What KEDA's log LINES say of its reconciles. */
export interface Tally {
  /** "Reconciling ScaledObject" lines. */
  readonly reconciles: number;
  /** The reconciles (reconcileID) that failed with "context canceled": cut short by the operator's stop. */
  readonly interrupted: string[];
  /** The "Reconciler error" lines that failed otherwise (a conflict on a ScaledObject another reconcile wrote: retried). */
  readonly failed: string[];
}

/** The distinct reconcileIDs of LINES (controller-runtime's log fields). */
const reconcileIds = (lines: string[]) => [...new Set(lines.map((l) => /"reconcileID": "([^"]+)"/.exec(l)?.[1] ?? l))];

export const tally = (lines: string[]): Tally => ({
  reconciles: lines.filter((l) => l.includes('Reconciling ScaledObject')).length,
  interrupted: reconcileIds(lines.filter((l) => l.includes(FAILED) && CANCELED.test(l))),
  failed: lines.filter((l) => l.includes(FAILED) && !CANCELED.test(l)),
});

/** ScaledObjects of APPS, each with a Deployment to scale, a cron trigger that never fires here. */
export interface Load {
  /** How many were created. */
  created(): number;
  /** One more. */
  scaled(): Promise<void>;
  /** BATCH at once. */
  batch(): Promise<void>;
  /** How many are reconciled: KEDA's finalizer, their HPA, Ready True. */
  done(): Promise<number>;
  /**
   * ScaledObjects created one after another from before STOP until the pod NAMESPACE/FROM is being deleted, and
   * `after` more then (at most `max` in all): the operator's stop signal lands while reconciles are queued and
   * running. STOP is called once the operator reconciled 3 of the stream. Until the stop, at most `window` of them
   * wait unreconciled at a time (the next is created when fewer do): the queue never runs dry, nor grows without
   * bound. Resolves with when the stop signal went, once the stream ended.
   */
  through(what: string, namespace: string, from: string, stop: () => Promise<void>, stream: Stream): Promise<number>;
}

export interface Stream {
  readonly after: number;
  readonly max: number;
  readonly window?: number;
}

export function scaledObjects(c: TestCluster, apps: string, tail: () => string): Load {
  let created = 0;
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
  return {
    created: () => created,
    scaled,
    batch: async () => void (await Promise.all(Array.from({ length: BATCH }, scaled))),
    done,
    async through(what, namespace, from, stop, { after, max, window = Infinity }) {
      let left = Infinity;
      const before = created;
      const stream = (async () => {
        for (let i = 0; i < max && left-- > 0; i++) {
          // Only before the stop is seen: after it, the operator that reconciles may be gone until the next one leads.
          if (window < Infinity && left === Infinity)
            await c.waitFor(
              async () => left !== Infinity || created - (await done()) < window,
              60_000,
              `fewer than ${window} ScaledObjects waiting`,
              tail,
            );
          await scaled();
        }
      })();
      await c.waitFor(async () => (await done()) >= before + 3, 30_000, `the leader reconciling before the ${what}`, tail);
      await stop();
      // deletionTimestamp is when the grace period ends: the stop signal went deletionGracePeriodSeconds before.
      const stopped = await c.waitFor(
        async () => {
          const m = (await c.api.get(`/api/v1/namespaces/${namespace}/pods/${from}`))?.metadata;
          return m?.deletionTimestamp && Date.parse(m.deletionTimestamp) - m.deletionGracePeriodSeconds * 1000;
        },
        60_000,
        `${from} being deleted`,
        tail,
      );
      left = after;
      await stream;
      return stopped;
    },
  };
}

/** Every ScaledObject of APPS deleted, and finalized by the operator itself. */
export async function finalizeAll(c: TestCluster, apps: string, tail: () => string): Promise<void> {
  for (const so of await c.api.list(`${KEDA_API}/namespaces/${apps}/scaledobjects`))
    await c.api.delete(`${KEDA_API}/namespaces/${apps}/scaledobjects/${so.metadata.name}`);
  await c.waitFor(async () => (await c.api.list(`${KEDA_API}/namespaces/${apps}/scaledobjects`)).length === 0, 60_000, 'finalized', tail);
}
