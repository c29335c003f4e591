// One uninstall of the External Secrets Operator on a real node, with or
// without drainguard: the release installed with Helm (or its render applied
// with kubectl), in an application namespace a SecretStore of the fake
// provider and a PushSecret with `deletionPolicy: Delete` that the operator
// pushed (its finalizer on it, the store in its status), then the uninstall,
// and what it left once nothing can change any more (the command exited and
// no pod of the operator's namespace is left: nobody remains who could remove
// a finalizer). The PushSecret's finalizer is the operator's cleanup: it reads
// the SecretStore, deletes what it pushed from the provider and updates the
// PushSecret, all with the operator's RBAC. Used by
// test/shipped/external-secrets-*.test.ts and test/tooling/bench/shipped.ts.

import type { TestCluster } from '../cluster/index.ts';
import { freePort } from '../free-port.ts';
import { helm, helmRun } from '../helm.ts';
import type { RealNode } from '../node/index.ts';
import { LIBRARY } from '../../helm/support/charts.ts';
import { PUSHSECRET_FINALIZER, RELEASE, addDrainguard, writeEsoChart } from './external-secrets.ts';
import { bindPods, hostNetworkPolicy } from './node-network.ts';
import { type PodLogs, followPodLogs } from './pod-logs.ts';
import { refusedLine, type ShippedRelease, kubectl, releaseLeftovers, unstickRelease } from './release-objects.ts';

export type EsoWay =
  /** `helm uninstall` (drainguard's post-delete hook runs). */
  | 'helm'
  /** `kubectl delete -f` of the whole render it was applied from, drainguard's own RBAC included. */
  | 'kubectl delete -f';

export interface EsoUninstalled {
  readonly guarded: boolean;
  readonly way: EsoWay;
  /** The uninstall command's exit code and output. */
  readonly code: number;
  readonly output: string;
  /** From the uninstall's start until nothing was left, or undefined when something was. */
  readonly cleanMs: number | undefined;
  /** From the start until no custom resource was left, nor a CRD but those in the API server's own cleanup; or undefined. */
  readonly finalizedMs: number | undefined;
  /** From the start until the state below was reached (clean, or nothing left that could change it). */
  readonly settledMs: number;
  /** What is left: KIND/[NS/]NAME, with its finalizers and whether it is being deleted. */
  readonly left: string[];
  /** The operator's log said that the PushSecret vanished under its own finalizer's update (see FINALIZED). */
  readonly finalizedByOperator: boolean;
  /** The operator's log lines that say 401 or 403. */
  readonly refused: string[];
  /**
   * When the operator's ClusterRoleBinding was deleted (its DELETED event), whether an operator pod was not yet even
   * being deleted: the operator ran on without its rights. Undefined when the binding outlived the settle.
   */
  readonly rightsGoneWhileRunning: boolean | undefined;
  /** The operator's log, for a failure's message. */
  readonly log: string[];
}

const HELM_MS = 180_000;
/** helm uninstall's --timeout, as for KEDA (keda-uninstall.ts). */
const UNINSTALL_TIMEOUT_S = 45;
const SETTLE_MS = 75_000;
/**
 * How long a CRD that no custom resource holds is given to go once nothing else can change (the API server deletes
 * its instances and removes its own finalizer; under load, with the operator's 20 CRDs deleted at once, one of them
 * was seen Terminating past 75 s).
 */
const CLEANUP_MS = 20_000;
const CLEANUP_FINALIZER = 'customresourcecleanup.apiextensions.k8s.io';

/**
 * A CRD being deleted that only the API server's own cleanup holds (its one finalizer, no custom resource of its left):
 * the API server's to finish, not stuck by anyone's finalizer on an object.
 */
export function apiServerCleaning(left: readonly string[], l: string): boolean {
  const m = /^customresourcedefinition\/([^. ]+)\.\S+ \(being deleted\) finalizers (\S+)$/.exec(l);
  return !!m && m[2] === CLEANUP_FINALIZER && !left.some((x) => x.startsWith(`${m[1]!.replace(/s$/, '')}/`));
}

/** The render holds the operator's 22 CRDs, 1.5 MB: more than execFileSync's 1 MiB default. */
const RENDER_BYTES = 64 << 20;
const ES = '/apis/external-secrets.io';
/** The chart's binding of the operator's ClusterRole: its rights. */
const BINDING = `${RELEASE}-controller`;

/**
 * The operator's reconcile that removed the last finalizer deletes the PushSecret with that update; the status patch
 * it defers then finds nothing (pushsecret_controller.go: `errPatchStatus`, "error merging", and the API's "not found").
 * The operator writes it only when the object went in its own reconcile: the sign that its finalizer ran.
 */
const FINALIZED = (name: string) => (l: string) =>
  l.includes('"error merging"') && l.includes(`pushsecrets.external-secrets.io \\"${name}\\" not found`);

/** The release in NS, its custom resources in APPS. */
const release = (ns: string, apps: string): ShippedRelease => ({
  ns,
  customResources: [
    { kind: 'pushsecret', path: `${ES}/v1alpha1/namespaces/${apps}/pushsecrets` },
    { kind: 'secretstore', path: `${ES}/v1/namespaces/${apps}/secretstores` },
  ],
  crdGroup: 'external-secrets.io',
  clusterRbac: (name) => name.startsWith(RELEASE),
});

/** What the release and its custom resources left: every object of theirs still there. */
export const esoLeftovers = (c: TestCluster, ns: string, apps: string): Promise<string[]> => releaseLeftovers(c, release(ns, apps));

export interface EsoRun {
  readonly c: TestCluster;
  readonly node: RealNode;
}

/** Installs the operator (drainguard added when GUARDED), pushes a secret, uninstalls it WAY, and says what was left. */
export async function uninstallEso(run: EsoRun, guarded: boolean, way: EsoWay): Promise<EsoUninstalled> {
  const { c, node } = run;
  const ns = (await c.namespace(guarded ? 'eso-dg' : 'eso')).name;
  const apps = (await c.namespace('eso-apps')).name;
  await hostNetworkPolicy(c, ns);
  const stopBinding = bindPods(c, ns, node);
  const logs = followPodLogs(node, ns);
  const operatorLog = () => logs.lines(RELEASE, RELEASE);
  try {
    const chart = writeEsoChart();
    if (guarded) addDrainguard(chart, LIBRARY);
    const setArgs = ['--set-json', `metrics.listen.port=${await freePort()}`];
    const kube = ['--kubeconfig', c.adminKubeconfig];
    let render = '';
    if (way === 'kubectl delete -f') {
      // A manifest from the chart, as a kubectl user makes one: no hooks (kubectl would run them as plain Jobs at once).
      render = helm(['template', RELEASE, chart, '--namespace', ns, '--no-hooks', ...setArgs], { maxBuffer: RENDER_BYTES });
      const applied = await kubectl(c, ['apply', '--server-side', '-n', ns, '-f', '-'], render);
      if (applied.code !== 0) throw new Error(`kubectl apply: ${applied.output}`);
    } else {
      const installed = await helmRun(
        ['install', RELEASE, chart, '--namespace', ns, '--wait', '--timeout', '150s', ...setArgs, ...kube],
        HELM_MS,
      );
      if (installed.code !== 0) throw new Error(`helm install: ${installed.stderr}${installed.stdout}\n${node.tail()}`);
    }
    await c.waitFor(
      async () => (await c.api.list(`/api/v1/namespaces/${ns}/pods?labelSelector=app.kubernetes.io%2Fname%3D${RELEASE}`)).some(ready),
      120_000,
      'the operator pod Ready',
      () => `${operatorLog().slice(-20).join('\n')}\n${node.tail()}`,
    );
    await pushed(c, apps, logs);

    const rights = watchRightsGone(c, ns);
    await rights.ready;
    const t0 = Date.now();
    const done = await (way === 'kubectl delete -f'
      ? kubectl(c, ['delete', '-n', ns, '-f', '-', '--wait=false'], render)
      : helmRun(['uninstall', RELEASE, '--namespace', ns, '--timeout', `${UNINSTALL_TIMEOUT_S}s`, ...kube], HELM_MS).then((r) => ({
          code: r.code,
          output: `${r.stdout}${r.stderr}`,
        })));
    let cleanMs: number | undefined;
    let finalizedMs: number | undefined;
    let seen: string[] = [];
    let podsGoneAt: number | undefined;
    await c.waitFor(
      async () => {
        const left = (seen = await esoLeftovers(c, ns, apps));
        const held = (l: string) =>
          /^(pushsecret|secretstore)\//.test(l) || (l.startsWith('customresourcedefinition/') && !apiServerCleaning(left, l));
        if (!left.some(held)) finalizedMs ??= Date.now() - t0;
        if (left.length === 0) return (cleanMs = Date.now() - t0);
        // Settled: no pod of the operator's namespace left to change anything (the operator, its drainguard, the hooks),
        // and no CRD left but those a custom resource holds, or the API server's own cleanup has had CLEANUP_MS.
        const pods = left.some((l) => l.startsWith('pod/')) || (await c.api.list(`/api/v1/namespaces/${ns}/pods`)).length > 0;
        if (pods) return false;
        podsGoneAt ??= Date.now();
        return left.every((l) => !apiServerCleaning(left, l)) || Date.now() - podsGoneAt > CLEANUP_MS;
      },
      SETTLE_MS,
      `the uninstall (${way}) settled`,
      () => `left:\n  ${seen.join('\n  ')}\noperator log (last 30):\n${operatorLog().slice(-30).join('\n')}\n` + node.tail(),
    );
    const settledMs = Date.now() - t0;
    rights.stop();
    const left = await esoLeftovers(c, ns, apps);
    const log = operatorLog();
    return {
      guarded,
      way,
      code: done.code,
      output: done.output,
      cleanMs: left.length === 0 ? (cleanMs ?? settledMs) : undefined,
      settledMs,
      finalizedMs,
      left,
      finalizedByOperator: log.some(FINALIZED('pushed')),
      refused: log.filter(refusedLine),
      rightsGoneWhileRunning: rights.whileRunning(),
      log,
    };
  } finally {
    stopBinding();
    logs.stop();
    await unstick(c, ns, apps);
  }
}

/**
 * Watches the operator's ClusterRoleBinding: at its DELETED event, reads the operator's pods at once. `ready` resolves
 * once the watch has seen the binding there (its first event), so that no deletion can come before it.
 */
function watchRightsGone(c: TestCluster, ns: string) {
  let whileRunning: boolean | undefined;
  let seen: () => void = () => {};
  const ready = new Promise<void>((resolve) => (seen = resolve));
  const stop = c.api.watch(`/apis/rbac.authorization.k8s.io/v1/clusterrolebindings?fieldSelector=metadata.name%3D${BINDING}`, (e) => {
    if (e.type === 'ADDED') seen();
    if (e.type !== 'DELETED') return;
    void c.api.list(`/api/v1/namespaces/${ns}/pods?labelSelector=app.kubernetes.io%2Fname%3D${RELEASE}`).then((pods) => {
      whileRunning = pods.some((p: any) => !p.metadata.deletionTimestamp);
    });
  });
  return { ready, stop, whileRunning: () => whileRunning };
}

const ready = (p: any) => p.status?.conditions?.some((x: any) => x.type === 'Ready' && x.status === 'True');

/** The source Secret, a SecretStore of the fake provider and the PushSecret, pushed by the operator: its finalizer, the store synced. */
async function pushed(c: TestCluster, apps: string, logs: PodLogs): Promise<void> {
  await c.api.create(`/api/v1/namespaces/${apps}/secrets`, {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'source' },
    stringData: { token: 'pushed by the operator' },
  });
  await c.api.create(`${ES}/v1/namespaces/${apps}/secretstores`, {
    apiVersion: 'external-secrets.io/v1',
    kind: 'SecretStore',
    metadata: { name: 'fake' },
    spec: { provider: { fake: { data: [] } } },
  });
  await c.api.create(`${ES}/v1alpha1/namespaces/${apps}/pushsecrets`, {
    apiVersion: 'external-secrets.io/v1alpha1',
    kind: 'PushSecret',
    metadata: { name: 'pushed' },
    spec: {
      deletionPolicy: 'Delete',
      refreshInterval: '1h',
      secretStoreRefs: [{ name: 'fake', kind: 'SecretStore' }],
      selector: { secret: { name: 'source' } },
      data: [{ match: { secretKey: 'token', remoteRef: { remoteKey: 'pushed-token' } } }],
    },
  });
  await c.waitFor(
    async () => {
      const ps = await c.api.get(`${ES}/v1alpha1/namespaces/${apps}/pushsecrets/pushed`);
      const synced = ps?.status?.conditions?.some((x: any) => x.type === 'Ready' && x.status === 'True');
      return ps?.metadata.finalizers?.includes(PUSHSECRET_FINALIZER) && synced && ps.status.syncedPushSecrets?.['SecretStore/fake'];
    },
    60_000,
    'the operator pushed the PushSecret (its finalizer, Ready, the store in its status)',
    () => logs.lines(RELEASE, RELEASE).slice(-20).join('\n'),
  );
}

/** After a run: what it left removed by force (finalizers stripped), so that the next run starts clean. */
const unstick = (c: TestCluster, ns: string, apps: string): Promise<void> => unstickRelease(c, release(ns, apps), 'the operator');
