// One uninstall of KubeRay on a real node, with or without drainguard: its
// kustomize install (config/default under the test's overlay, or the overlay
// `drainguard adopt` wrote over that) applied with `kubectl apply -k`, a RayJob
// the operator took on (its finalizer on it, its RayCluster created), then
// the uninstall, and what it left once nothing can change any more (the
// command exited and no pod of the operator's namespace is left: nobody
// remains who could remove a finalizer).
//
// No Ray image is to be had here: the RayCluster's pods are never bound to
// the node (no scheduler runs; bindPods binds the operator's pods alone) and
// the Ray job never starts. That is all the RayJob's finalizer needs: on its
// deletion the operator calls StopJob on a dashboard whose address its status
// never got (rayjob_controller.go: `http://` and an empty host, refused by Go's
// HTTP client before any connection) and removes the finalizer "no matter
// StopJob() succeeds or not", with an Update of the RayJob: the operator's
// RBAC. Used by test/shipped/kuberay-*.test.ts.

import type { TestCluster } from '../cluster/index.ts';
import { freePort } from '../free-port.ts';
import type { RealNode } from '../node/index.ts';
import { apiServerCleaning } from './external-secrets-uninstall.ts';
import { OPERATOR, RAYJOB_FINALIZER, adoptKubeRay, writeKubeRayOverlay } from './kuberay.ts';
import { bindPods, hostNetworkPolicy } from './node-network.ts';
import { followPodLogs } from './pod-logs.ts';
import { RBAC, refusedLine, type ShippedRelease, describeObject, kubectl, releaseLeftovers, unstickRelease } from './release-objects.ts';

export type KubeRayWay =
  /** `kubectl delete -k` of the kustomize directory it was applied from: kustomize's order, CRDs and RBAC before the Deployment. */
  | 'kubectl delete -k'
  /** `kubectl delete namespace` of the operator's namespace, the RayJob in it. */
  | 'kubectl delete namespace';

export interface KubeRayUninstalled {
  readonly guarded: boolean;
  readonly way: KubeRayWay;
  /** The uninstall command's exit code and output. */
  readonly code: number;
  readonly output: string;
  /** From `kubectl apply -k` until the operator took on the RayJob (and drainguard held what it guards). */
  readonly tookOnMs: number;
  /** How long the uninstall command took. */
  readonly commandMs: number;
  /** From the uninstall's start until nothing was left, or undefined when something was. */
  readonly cleanMs: number | undefined;
  /** From the start until the RayJob was gone, or undefined. */
  readonly rayJobGoneMs: number | undefined;
  /** From the start until the state below was reached (clean, or nothing left that could change it). */
  readonly settledMs: number;
  /** What is left: KIND/[NS/]NAME, with its finalizers and whether it is being deleted. */
  readonly left: string[];
  /** The operator's log said it removed the RayJob's finalizer and its Update did not fail (see finalizedInLog). */
  readonly finalizedByOperator: boolean;
  /** How long the operator's reconcile took from "RayJob is being deleted" to its finalizer's removal, by its log's times. */
  readonly finalizerMs: number | undefined;
  /** The operator's log lines (not drainguard's) that say 401 or 403, but for the API server's ADMISSION_REFUSALS. */
  readonly refused: string[];
  /** The operator's log, for a failure's message. */
  readonly log: string[];
  /** What adopt printed (guarded runs). */
  readonly adopt?: string;
}

const SETTLE_MS = 75_000;
/** How long a CRD that no custom resource holds is given to go once nothing else can change (see external-secrets-uninstall.ts). */
const CLEANUP_MS = 20_000;
const RAY = '/apis/ray.io/v1';
const RAYJOB = 'ray-job';
/** The operator's pods (config/manager's labels); the Ray pods it creates say app.kubernetes.io/created-by=kuberay-operator. */
const OPERATOR_PODS = 'app.kubernetes.io/component=kuberay-operator';
/**
 * The API server's own refusals (403 Forbidden from its admission, not RBAC's), logged with drainguard as without,
 * whoever's RBAC is kept: the operator recreates the RayJob's RayCluster that the deletion of the rayclusters CRD took
 * before that of the rayjobs CRD reached the RayJob (kustomize's order deletes the CRDs one by one), and, in a
 * namespace being deleted, the head pod of a RayCluster not yet deleted.
 */
const ADMISSION_REFUSALS = [
  'is forbidden: create not allowed while custom resource definition is terminating',
  /is forbidden: unable to create new content in namespace \S+ because it is being terminated/g,
];
const notAdmission = (l: string) => ADMISSION_REFUSALS.reduce<string>((x, p) => x.replaceAll(p, ''), l);

/** The release in NS, its custom resources in APPS. */
const release = (ns: string, apps: string): ShippedRelease => ({
  ns,
  customResources: [
    { kind: 'rayjob', path: `${RAY}/namespaces/${apps}/rayjobs` },
    { kind: 'raycluster', path: `${RAY}/namespaces/${apps}/rayclusters` },
  ],
  crdGroup: 'ray.io',
  clusterRbac: (name) => name.startsWith(OPERATOR),
});

/** What the release and its custom resources left: every object of theirs still there. */
export const kubeRayLeftovers = (c: TestCluster, ns: string, apps: string): Promise<string[]> => releaseLeftovers(c, release(ns, apps));

/** What a deletion of the namespace NS left: the namespace while it is there, and every object of the release's that is stuck. */
async function namespaceLeftovers(c: TestCluster, ns: string): Promise<string[]> {
  const namespace = await c.api.get(`/api/v1/namespaces/${ns}`);
  // Its cluster-scoped objects stay (the deletion was not theirs): only what is being deleted or holds a finalizer counts.
  const left = (await kubeRayLeftovers(c, ns, ns)).filter((l) => l.includes(' (being deleted)') || l.includes(' finalizers '));
  return namespace ? [`${describeObject('namespace', namespace)} phase ${namespace.status?.phase}`, ...left] : left;
}

/**
 * The namespace's NamespaceFinalizersRemaining condition names a finalizer other than the garbage collector's ("Some
 * content in the namespace has finalizers remaining: ray.io/rayjob-finalizer in 1 resource instances").
 */
function waitsOnFinalizer(namespace: any): boolean {
  const remaining = namespace?.status?.conditions?.find((x: any) => x.type === 'NamespaceFinalizersRemaining' && x.status === 'True');
  const named = [...String(remaining?.message ?? '').matchAll(/(\S+) in \d+ resource instances/g)].map((m) => m[1]);
  return named.some((f) => f !== 'foregroundDeletion' && f !== 'orphan');
}

/** The operator's JSON log lines, parsed; drainguard's own (wrap mode: the same container) and anything else skipped. */
const records = (log: readonly string[]): any[] =>
  log.flatMap((l) => {
    try {
      const r = JSON.parse(l);
      return r && typeof r === 'object' && typeof r.reconcileID === 'string' ? [r] : [];
    } catch {
      return [];
    }
  });

/**
 * The operator removed NAME's finalizer: a reconcile that logged "Remove the finalizer no matter StopJob() succeeds or
 * not." (logged before its Update) and not "Failed to remove finalizer for RayJob" (its Update refused): the same
 * reconcileID. Returns how long that reconcile took from "RayJob is being deleted" to the removal, or undefined.
 */
export function finalizedInLog(log: readonly string[], name: string): { ms: number } | undefined {
  const rs = records(log).filter((r) => r.RayJob?.name === name);
  const failed = new Set(rs.filter((r) => r.msg === 'Failed to remove finalizer for RayJob').map((r) => r.reconcileID));
  const removed = rs.find((r) => r.msg === 'Remove the finalizer no matter StopJob() succeeds or not.' && !failed.has(r.reconcileID));
  if (!removed) return undefined;
  const started = rs.find((r) => r.reconcileID === removed.reconcileID && r.msg === 'RayJob is being deleted');
  return { ms: started ? Date.parse(removed.ts) - Date.parse(started.ts) : Number.NaN };
}

export interface KubeRayRun {
  readonly c: TestCluster;
  readonly node: RealNode;
}

/** Installs KubeRay (drainguard added when GUARDED), has it take on a RayJob, uninstalls it WAY, and says what was left. */
export async function uninstallKubeRay(run: KubeRayRun, guarded: boolean, way: KubeRayWay): Promise<KubeRayUninstalled> {
  const { c, node } = run;
  const ns = (await c.namespace(guarded ? 'kuberay-dg' : 'kuberay')).name;
  // A namespace deletion finalizes what is in the namespace: there the RayJob lives beside the operator.
  const namespaced = way === 'kubectl delete namespace';
  const apps = namespaced ? ns : (await c.namespace('kuberay-apps')).name;
  await hostNetworkPolicy(c, ns);
  // The operator's pods alone: the RayCluster's (in APPS, or beside it) are never run. Both are app.kubernetes.io/name=kuberay.
  const stopBinding = bindPods(c, ns, node, OPERATOR_PODS);
  const logs = followPodLogs(node, ns);
  const container = guarded ? 'manager' : OPERATOR;
  const operatorLog = () => logs.lines(OPERATOR, container);
  try {
    const overlay = writeKubeRayOverlay(ns, { metrics: await freePort(), probe: await freePort() });
    const adopted = guarded ? adoptKubeRay(overlay) : undefined;
    const dir = adopted?.dir ?? overlay;
    const applying = Date.now();
    const applied = await kubectl(c, ['apply', '--server-side', '-k', dir]);
    if (applied.code !== 0) throw new Error(`kubectl apply -k: ${applied.output}`);
    // The operator at work, not its readiness (its probe's 10 s delay is no sign of anything): the RayJob taken on, and
    // with drainguard its holder's finalizer on the Deployment (the hold) and on the operator's ClusterRole (the guard).
    await tookOn(c, apps, () => `${operatorLog().slice(-20).join('\n')}\n${node.tail()}`);
    if (guarded) await holding(c, ns, operatorLog);
    const tookOnMs = Date.now() - applying;

    const t0 = Date.now();
    const done = await (namespaced
      ? kubectl(c, ['delete', 'namespace', ns, '--wait=false'])
      : kubectl(c, ['delete', '-k', dir, '--wait=false']));
    const commandMs = Date.now() - t0;
    let cleanMs: number | undefined;
    let rayJobGoneMs: number | undefined;
    let seen: string[] = [];
    let podsGoneAt: number | undefined;
    const what = () => (namespaced ? namespaceLeftovers(c, ns) : kubeRayLeftovers(c, ns, apps));
    await c.waitFor(
      async () => {
        const left = (seen = await what());
        if (!left.some((l) => l.startsWith('rayjob/'))) rayJobGoneMs ??= Date.now() - t0;
        if (left.length === 0) return (cleanMs = Date.now() - t0);
        // Settled: no pod of the operator's namespace left to change anything (the operator and its drainguard), and
        // no CRD left but those a custom resource holds, or the API server's own cleanup has had CLEANUP_MS.
        if ((await c.api.list(`/api/v1/namespaces/${ns}/pods`).catch(() => [])).length > 0) return false;
        // A namespace deletion deletes the rest once the pods are gone: settled when it waits on a finalizer nobody left removes.
        if (namespaced) return waitsOnFinalizer(await c.api.get(`/api/v1/namespaces/${ns}`));
        podsGoneAt ??= Date.now();
        return left.every((l) => !apiServerCleaning(left, l)) || Date.now() - podsGoneAt > CLEANUP_MS;
      },
      SETTLE_MS,
      `the uninstall (${way}) settled`,
      () => `left:\n  ${seen.join('\n  ')}\noperator log (last 30):\n${operatorLog().slice(-30).join('\n')}\n` + node.tail(),
    );
    const settledMs = Date.now() - t0;
    const left = await what();
    const log = operatorLog();
    const finalized = finalizedInLog(log, RAYJOB);
    return {
      guarded,
      way,
      code: done.code,
      output: done.output,
      tookOnMs,
      commandMs,
      cleanMs: left.length === 0 ? (cleanMs ?? settledMs) : undefined,
      rayJobGoneMs,
      settledMs,
      left,
      finalizedByOperator: finalized !== undefined,
      finalizerMs: finalized?.ms,
      refused: log.filter((l) => refusedLine(notAdmission(l))),
      log,
      ...(adopted && { adopt: `${adopted.refusal}\n${adopted.output}` }),
    };
  } finally {
    stopBinding();
    logs.stop();
    await unstick(c, ns, apps);
  }
}

/** A RayJob in APPS, taken on by the operator: its finalizer on it, Initializing, its RayCluster created. */
async function tookOn(c: TestCluster, apps: string, story: () => string): Promise<void> {
  const rayJob = {
    apiVersion: 'ray.io/v1',
    kind: 'RayJob',
    metadata: { name: RAYJOB },
    spec: {
      entrypoint: 'python -c "print(1)"',
      rayClusterSpec: {
        rayVersion: '2.46.0',
        headGroupSpec: {
          rayStartParams: {},
          template: { spec: { containers: [{ name: 'ray-head', image: 'rayproject/ray:2.46.0' }] } },
        },
      },
    },
  };
  // Created once its CRD is served: `kubectl apply` returns before the API server establishes it.
  await c.waitFor(
    async () => [201, 409].includes((await c.api.request('POST', `${RAY}/namespaces/${apps}/rayjobs`, rayJob)).status),
    60_000,
    'the RayJob created',
  );
  await c.waitFor(
    async () => {
      const job = await c.api.get(`${RAY}/namespaces/${apps}/rayjobs/${RAYJOB}`);
      const cluster =
        job?.status?.rayClusterName && (await c.api.get(`${RAY}/namespaces/${apps}/rayclusters/${job.status.rayClusterName}`));
      return job?.metadata.finalizers?.includes(RAYJOB_FINALIZER) && job.status.jobDeploymentStatus === 'Initializing' && cluster;
    },
    120_000,
    'the operator took on the RayJob (its finalizer, Initializing, its RayCluster created)',
    story,
  );
}

/** drainguard's holder finalizer on the operator's Deployment (the hold) and on its ClusterRole (the guard). */
async function holding(c: TestCluster, ns: string, operatorLog: () => string[]): Promise<void> {
  const held = (o: any) => o?.metadata.finalizers?.some((f: string) => f.startsWith('drainguard.dev/holder-'));
  await c.waitFor(
    async () =>
      held(await c.api.get(`/apis/apps/v1/namespaces/${ns}/deployments/${OPERATOR}`)) &&
      held(await c.api.get(`${RBAC}/clusterroles/${OPERATOR}`)),
    60_000,
    "drainguard's holder finalizer on the Deployment and the operator's ClusterRole",
    () => operatorLog().slice(-20).join('\n'),
  );
}

/** After a run: what it left removed by force (finalizers stripped), so that the next run starts clean. */
async function unstick(c: TestCluster, ns: string, apps: string): Promise<void> {
  await unstickRelease(c, release(ns, apps), 'KubeRay');
}
