// One uninstall of KEDA on a real node, with or without drainguard: the
// release installed with Helm (or its render applied with kubectl), a
// ScaledObject in an application namespace reconciled by the operator (its
// finalizer on it, the HPA made, the target's original replica count
// recorded, the target then scaled as an HPA would), then the uninstall, and
// what it left once nothing can change any more (the command exited and no
// pod of the operator's namespace is left: nobody remains who could remove a
// finalizer). Used by test/shipped/keda.test.ts and test/tooling/bench/shipped.ts.

import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TestCluster } from '../cluster/index.ts';
import { freePort } from '../free-port.ts';
import { helm, helmRun } from '../helm.ts';
import type { RealNode } from '../node/index.ts';
import { LIBRARY } from '../../helm/support/charts.ts';
import { refusedLine, type ShippedRelease, describeObject, kubectl, releaseLeftovers, unstickRelease } from './release-objects.ts';
import { OPERATOR, SCALEDOBJECT_FINALIZER, addDrainguard, addNamespaceDeletionRights, kedaCertificates, writeKedaChart } from './keda.ts';
import { bindPods, hostNetworkPolicy } from './node-network.ts';
import { type PodLogs, followPodLogs } from './pod-logs.ts';

export type Way =
  /** `helm uninstall` (drainguard's post-delete hook runs). */
  | 'helm'
  /** `helm uninstall --wait`. */
  | 'helm --wait'
  /** `helm uninstall --no-hooks --wait`. */
  | 'helm --no-hooks --wait'
  /** `kubectl delete -f` of the whole render it was applied from, drainguard's own RBAC included. */
  | 'kubectl delete -f'
  /** `kubectl delete -k` of a kustomize directory holding the render: kustomize's order (CRDs and RBAC before the Deployment). */
  | 'kubectl delete -k'
  /**
   * `kubectl delete namespace` of the operator's namespace, the render applied with kubectl and the ScaledObject in that
   * namespace: what is cluster-scoped stays by design, so only what is stuck counts as left.
   */
  | 'kubectl delete namespace';

export interface Uninstalled {
  readonly guarded: boolean;
  readonly way: Way;
  /** The uninstall command's exit code and output. */
  readonly code: number;
  readonly output: string;
  /** From the uninstall's start until nothing was left, or undefined when something was. */
  readonly cleanMs: number | undefined;
  /** From the start until no custom resource and no CRD of the operator's was left, or undefined. */
  readonly finalizedMs: number | undefined;
  /** From the start until the state below was reached (clean, or nothing left that could change it). */
  readonly settledMs: number;
  /** What is left: KIND/[NS/]NAME, with its finalizers and whether it is being deleted. */
  readonly left: string[];
  /** The operator's log said it finalized the ScaledObject. */
  readonly finalizedByOperator: boolean;
  /**
   * The target's replicas after the uninstall (the operator restores the original, 2, at finalization); when the
   * uninstall deleted the target (a namespace deletion), the last seen before it went.
   */
  readonly targetReplicas: number;
  /** The operator's log lines that say 401 or 403 (not the NamespaceLifecycle admission's, see TERMINATING). */
  readonly refused: string[];
  /** The operator's log, for a failure's message. */
  readonly log: string[];
}

export const ORIGINAL_REPLICAS = 2;
/** What the test scales the target to once KEDA recorded the original, as an HPA acting on a metric would. */
export const SCALED_REPLICAS = 5;
const HELM_MS = 180_000;
/**
 * helm uninstall's --timeout (its default is 5 m): what --wait waits at most for the release's objects to go.
 * With drainguard they are gone in 15 s; without, they never are, and helm fails at it.
 */
export const UNINSTALL_TIMEOUT_S = 45;
const SETTLE_MS = 180_000;
/** How long an HPA whose owner's CRD is gone is given before it counts as kept for good by the garbage collector. */
const ORPHAN_MS = 10_000;
const KEDA = '/apis/keda.sh/v1alpha1';

/**
 * The NamespaceLifecycle admission's 403 on anything created in a namespace being deleted (KEDA's Events of the
 * finalization, in a namespace deletion): no right lost, the same for every client; not a refusal to count.
 */
const TERMINATING = /unable to create new content in namespace \S+ because it is being terminated/;

/** A leftover that nothing will remove by itself: being deleted, or held by a finalizer. */
const stuck = (l: string) => l.includes(' (being deleted)') || l.includes(' finalizers ');

/** The release in NS, its ScaledObjects in APPS. */
const release = (ns: string, apps: string): ShippedRelease => ({
  ns,
  customResources: [{ kind: 'scaledobject', path: `${KEDA}/namespaces/${apps}/scaledobjects` }],
  crdGroup: 'keda.sh',
  clusterRbac: (name) => name === OPERATOR,
});

/** What the release and its custom resources left: every object of theirs still there. */
export const leftovers = (c: TestCluster, ns: string, apps: string): Promise<string[]> =>
  // The HPA KEDA made is owned by the ScaledObject: the garbage collector takes it once that is gone.
  releaseLeftovers(c, release(ns, apps), [
    { kind: 'horizontalpodautoscaler', path: `/apis/autoscaling/v2/namespaces/${apps}/horizontalpodautoscalers` },
  ]);

/**
 * What a deletion of the namespace NS left stuck: the namespace itself while it is there, and every object of the
 * release's (its cluster-scoped ones stay: the deletion was not theirs) being deleted or with a finalizer.
 */
async function namespaceLeftovers(c: TestCluster, ns: string): Promise<string[]> {
  const namespace = await c.api.get(`/api/v1/namespaces/${ns}`);
  const left = (await leftovers(c, ns, ns)).filter(stuck);
  return namespace ? [`${describeObject('namespace', namespace)} phase ${namespace.status?.phase}`, ...left] : left;
}

/**
 * The namespace's NamespaceFinalizersRemaining condition names a finalizer other than the garbage collector's
 * ("Some content in the namespace has finalizers remaining: finalizer.keda.sh in 1 resource instances").
 */
function waitsOnFinalizer(namespace: any): boolean {
  const remaining = namespace?.status?.conditions?.find((x: any) => x.type === 'NamespaceFinalizersRemaining' && x.status === 'True');
  const named = [...String(remaining?.message ?? '').matchAll(/(\S+) in \d+ resource instances/g)].map((m) => m[1]);
  return named.some((f) => f !== 'foregroundDeletion' && f !== 'orphan');
}

/** A kustomize directory beside CHART holding RENDER, as a kustomize user keeps a rendered chart; returns it. */
function kustomization(chart: string, render: string): string {
  const dir = join(chart, '..', 'kustomize');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'keda.yaml'), render);
  writeFileSync(
    join(dir, 'kustomization.yaml'),
    'apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - keda.yaml\n',
  );
  return dir;
}

export interface KedaRun {
  readonly c: TestCluster;
  readonly node: RealNode;
}

/** Installs KEDA (drainguard added when GUARDED), reconciles a ScaledObject, uninstalls it WAY, and says what was left. */
export async function uninstallKeda(run: KedaRun, guarded: boolean, way: Way): Promise<Uninstalled> {
  const { c, node } = run;
  const ns = (await c.namespace(guarded ? 'keda-dg' : 'keda')).name;
  // A namespace deletion finalizes what is in the namespace: there the ScaledObject lives beside the operator.
  const namespaced = way === 'kubectl delete namespace';
  const apps = namespaced ? ns : (await c.namespace('keda-apps')).name;
  await hostNetworkPolicy(c, ns);
  // Only the operator's pods (and the hooks'): the target's are never run, KEDA only scales it.
  const stopBinding = bindPods(c, ns, node, namespaced ? `app=${OPERATOR}` : undefined);
  const logs = followPodLogs(node, ns);
  try {
    await c.api.create(`/api/v1/namespaces/${ns}/secrets`, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'kedaorg-certs' },
      data: kedaCertificates(ns),
    });
    const chart = writeKedaChart();
    if (guarded) addDrainguard(chart, LIBRARY);
    if (guarded && namespaced) addNamespaceDeletionRights(chart);
    const set = {
      'prometheus.operator.port': await freePort(),
      'operator.healthPort': await freePort(),
      'service.portGrpc': await freePort(),
    };
    const setArgs = Object.entries(set).flatMap(([k, v]) => ['--set-json', `${k}=${JSON.stringify(v)}`]);
    const kube = ['--kubeconfig', c.adminKubeconfig];
    let render = '';
    let manifests: string[] = [];
    let stdin: string | undefined;
    if (way.startsWith('kubectl')) {
      // A manifest from the chart, as a kubectl user makes one: no hooks (kubectl would run them as plain Jobs at once).
      render = helm(['template', 'keda', chart, '--namespace', ns, '--no-hooks', ...setArgs]);
      manifests = way === 'kubectl delete -k' ? ['-k', kustomization(chart, render)] : ['-f', '-'];
      // kubectl reads no stdin with -k (and closes it: writing there would fail, EPIPE).
      stdin = manifests[0] === '-f' ? render : undefined;
      const applied = await kubectl(c, ['apply', '--server-side', '-n', ns, ...manifests], stdin);
      if (applied.code !== 0) throw new Error(`kubectl apply: ${applied.output}`);
    } else {
      const installed = await helmRun(
        ['install', 'keda', chart, '--namespace', ns, '--wait', '--timeout', '150s', ...setArgs, ...kube],
        HELM_MS,
      );
      if (installed.code !== 0) throw new Error(`helm install: ${installed.stderr}${installed.stdout}\n${node.tail()}`);
    }
    await c.waitFor(
      async () => (await c.api.list(`/api/v1/namespaces/${ns}/pods?labelSelector=app%3D${OPERATOR}`)).some(ready),
      120_000,
      'the operator pod Ready',
      () => `${logs.lines(OPERATOR, OPERATOR).slice(-20).join('\n')}\n${node.tail()}`,
    );
    await reconciled(c, apps, logs);

    const t0 = Date.now();
    const command = namespaced
      ? kubectl(c, ['delete', 'namespace', ns, '--wait=false'])
      : way.startsWith('kubectl')
        ? kubectl(c, ['delete', '-n', ns, ...manifests, '--wait=false'], stdin)
        : helmRun(
            ['uninstall', 'keda', '--namespace', ns, ...way.split(' ').slice(1), '--timeout', `${UNINSTALL_TIMEOUT_S}s`, ...kube],
            HELM_MS,
          ).then((r) => ({ code: r.code, output: `${r.stdout}${r.stderr}` }));
    const done = await command;
    // Settled: clean, or no pod of the operator's namespace left to change anything (the operator, its drainguard, the hooks)
    // and nothing left for the garbage collector.
    let cleanMs: number | undefined;
    let finalizedMs: number | undefined;
    const targetPath = `/apis/apps/v1/namespaces/${apps}/deployments/app`;
    let targetReplicas: number | undefined;
    // What the last look saw: for the message when the uninstall never settles.
    let seen: string[] = [];
    let crdGoneAt: number | undefined;
    const what = async () => {
      const target = await c.api.get(targetPath);
      if (target) targetReplicas = target.spec.replicas;
      const left = await (namespaced ? namespaceLeftovers(c, ns) : leftovers(c, ns, apps));
      // leftovers() lists the pods; namespaceLeftovers() only those stuck.
      const pods = namespaced ? (await c.api.list(`/api/v1/namespaces/${ns}/pods`)).map((p) => describeObject('pod', p)) : [];
      seen = [...left, ...pods];
      return left;
    };
    await c.waitFor(
      async () => {
        const left = await what();
        if (!left.some((l) => /^(scaledobject|customresourcedefinition)\//.test(l))) finalizedMs ??= Date.now() - t0;
        if (left.length === 0) return (cleanMs = Date.now() - t0);
        // A namespace deletion is settled when it is gone, or once its pods are gone and the namespace controller says
        // it waits on a finalizer that nobody left can remove (not the garbage collector's), on an object still there:
        // the controller's condition lags (before 1.33 it names the ScaledObject's finalizer from its first pass, when
        // everything was deleted at once, until its next pass after the operator finalized it).
        if (namespaced)
          return (
            (await c.api.list(`/api/v1/namespaces/${ns}/pods`)).length === 0 &&
            left.some((l) => !l.startsWith('namespace/')) &&
            waitsOnFinalizer(await c.api.get(`/api/v1/namespaces/${ns}`))
          );
        // The HPA of a ScaledObject that is gone is the garbage collector's to take, a moment later: not settled yet. Unless
        // the ScaledObject's CRD went first: the collector can then no longer tell its owner is gone and keeps it for good
        // (kubernetes/kubernetes#102641), a leftover. No event says the collector gave up: one already deleting it has
        // done so within ORPHAN_MS of the CRD's going.
        const orphan = left.some((l) => l.startsWith('horizontalpodautoscaler/')) && !left.some((l) => l.startsWith('scaledobject/'));
        const crd = left.some((l) => l.startsWith('customresourcedefinition/scaledobjects.keda.sh'));
        if (orphan && !crd) crdGoneAt ??= Date.now();
        const collecting = orphan && (crd || Date.now() - crdGoneAt! < ORPHAN_MS);
        return !collecting && left.every((l) => !l.startsWith('pod/')) && (await c.api.list(`/api/v1/namespaces/${ns}/pods`)).length === 0;
      },
      SETTLE_MS,
      `the uninstall (${way}) settled`,
      () =>
        `left:\n  ${seen.join('\n  ')}\noperator log (last 30):\n${logs.lines(OPERATOR, OPERATOR).slice(-30).join('\n')}\n` + node.tail(),
    );
    const settledMs = Date.now() - t0;
    const left = await what();
    const log = logs.lines(OPERATOR, OPERATOR);
    if (targetReplicas === undefined) throw new Error(`the target ${apps}/app was never seen after the uninstall started`);
    return {
      guarded,
      way,
      code: done.code,
      output: done.output,
      cleanMs: left.length === 0 ? (cleanMs ?? settledMs) : undefined,
      settledMs,
      finalizedMs,
      left,
      finalizedByOperator: log.some((l) => l.includes('Successfully finalized ScaledObject') && l.includes(apps)),
      targetReplicas,
      refused: log.filter((l) => refusedLine(l) && !TERMINATING.test(l)),
      log,
    };
  } finally {
    stopBinding();
    logs.stop();
    await unstick(c, ns, apps);
  }
}

const ready = (p: any) => p.status?.conditions?.some((x: any) => x.type === 'Ready' && x.status === 'True');

/** The target Deployment and its ScaledObject, reconciled by the operator: its finalizer, the HPA, the original count; then scaled. */
async function reconciled(c: TestCluster, apps: string, logs: PodLogs): Promise<void> {
  await c.api.create(`/apis/apps/v1/namespaces/${apps}/deployments`, {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'app' },
    spec: {
      // Its pods are never bound to a node (no scheduler): KEDA only reads and writes its scale subresource.
      replicas: ORIGINAL_REPLICAS,
      selector: { matchLabels: { app: 'app' } },
      template: { metadata: { labels: { app: 'app' } }, spec: { containers: [{ name: 'app', image: 'app' }] } },
    },
  });
  await c.api.create(`${KEDA}/namespaces/${apps}/scaledobjects`, {
    apiVersion: 'keda.sh/v1alpha1',
    kind: 'ScaledObject',
    metadata: { name: 'app' },
    spec: {
      scaleTargetRef: { name: 'app' },
      minReplicaCount: 1,
      maxReplicaCount: 10,
      advanced: { restoreToOriginalReplicaCount: true },
      // UTC needs no zoneinfo (the image has none, as KEDA's distroless one has little).
      triggers: [{ type: 'cron', metadata: { timezone: 'UTC', start: '0 0 * * *', end: '1 0 * * *', desiredReplicas: '3' } }],
    },
  });
  await c.waitFor(
    async () => {
      const so = await c.api.get(`${KEDA}/namespaces/${apps}/scaledobjects/app`);
      const hpa = await c.api.get(`/apis/autoscaling/v2/namespaces/${apps}/horizontalpodautoscalers/keda-hpa-app`);
      return so?.metadata.finalizers?.includes(SCALEDOBJECT_FINALIZER) && so.status?.originalReplicaCount === ORIGINAL_REPLICAS && hpa;
    },
    60_000,
    'the operator reconciled the ScaledObject (its finalizer, the original replica count, the HPA)',
    () => logs.lines(OPERATOR, OPERATOR).slice(-20).join('\n'),
  );
  await c.api.patch(`/apis/apps/v1/namespaces/${apps}/deployments/app/scale`, { spec: { replicas: SCALED_REPLICAS } });
}

/** After a run: what it left removed by force (finalizers stripped), so that the next run starts clean. */
export const unstick = (c: TestCluster, ns: string, apps: string): Promise<void> => unstickRelease(c, release(ns, apps), 'KEDA');
