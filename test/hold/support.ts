// The example operator installed from deploy/rendered/hold.yaml as it stands
// (its Namespace, CRDs, RBAC, drainguard's own RBAC, the Deployment in native
// sidecar mode with DRAINGUARD_HOLD), renamed for a cluster other test files
// share, then its Installation and APIServer (custom-resources.yaml, as
// tigera's docs have it), which the operator adopts with its finalizer. Its
// pods run by the kubelet stand-in: drainguard's image is the built
// executable, the operator's the chart's fixture (test/fixtures/cr-operator.ts).
// The tests uninstall it the ways people do.

import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { parseAllDocuments, stringify } from 'yaml';
import { exampleImages } from '../helm/support/example.ts';
import type { KubeletCluster } from '../support/kubelet/cluster.ts';
import { Kubelet } from '../support/kubelet/index.ts';
import { DRAINGUARD_IMAGE, drainguardImage } from '../support/kubelet/runners.ts';
import type { Proc } from '../support/proc.ts';

const RENDERED = 'deploy/rendered/hold.yaml';
/** ConfigMaps the controller-manager publishes in every namespace (the second: OpenShift's fork of it). */
const PUBLISHED = ['kube-root-ca.crt', 'openshift-service-ca.crt'];

export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; finalizers?: string[] };
  [key: string]: any;
}

export interface OperatorSet {
  readonly ns: string;
  /** The operator's name: its Deployment, ClusterRole, ClusterRoleBinding, ServiceAccount. */
  readonly name: string;
  /** The CRDs' API group. */
  readonly group: string;
  /** DRAINGUARD_HOLD as rendered: the Installation and APIServer kinds. */
  readonly kinds: string;
  /** The rendered manifests (renamed), and the custom resources applied after them. */
  readonly objects: readonly KubeObject[];
  readonly customResources: readonly KubeObject[];
  /** DRAINGUARD_GUARD as rendered. */
  readonly guard: string;
  /** drainguard's own RBAC (label app.kubernetes.io/name=drainguard), in `drainguard release --delete` form. */
  readonly own: string;
  readonly kubelet: Kubelet;
  /** Onto the timeline, now or at `time` (a drainguard log line's). */
  at(what: string, time?: unknown): void;
  readonly timeline: string[];
}

export interface OperatorOptions {
  /** false: DRAINGUARD_HOLD emptied in the rendered Deployment (the hold off, all else the same). */
  readonly hold?: boolean;
  /** Added to the drainguard container's env (DRAINGUARD_HOLD_SETTLE, ...). */
  readonly env?: Readonly<Record<string, string>>;
  readonly replicas?: number;
  /** How long the operator's cleanup of a deleted custom resource takes (default 3 s, a teardown's time). */
  readonly finalizeAfterMs?: number;
}

const yaml = (objects: readonly KubeObject[]) => objects.map((o) => stringify(o)).join('---\n');

export const pathOf = (o: KubeObject): string => {
  const base = o.apiVersion === 'v1' ? '/api/v1' : `/apis/${o.apiVersion}`;
  return `${base}${o.metadata.namespace ? `/namespaces/${o.metadata.namespace}` : ''}/${o.kind.toLowerCase()}s/${o.metadata.name}`;
};

const key = (o: KubeObject) => `${o.kind.toLowerCase()}/${o.metadata.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata.name}`;

/** deploy/rendered/hold.yaml with a namespace, an operator name and an API group of its own. */
function rendered(id: string): KubeObject[] {
  const text = readFileSync(RENDERED, 'utf8')
    .replaceAll('operator.example.io', `operator.${id}.example.io`)
    .replaceAll('example-hold', `${id}-hold`)
    .replaceAll('example-operator', id);
  return parseAllDocuments(text)
    .map((d) => d.toJS() as KubeObject | null)
    .filter((o): o is KubeObject => o !== null);
}

const drainguardContainer = (deployment: KubeObject) =>
  deployment.spec.template.spec.initContainers.find((c: any) => c.name === 'drainguard');

/** `kubectl apply -f` of the rendered manifests, then of the custom resources once their CRDs are served; the kubelet running the pods. */
export async function operatorSet(c: KubeletCluster, o: OperatorOptions = {}): Promise<OperatorSet> {
  const id = `op-${randomBytes(3).toString('hex')}`;
  const objects = rendered(id);
  const ns = objects.find((x) => x.kind === 'Namespace')!.metadata.name;
  const deployment = objects.find((x) => x.kind === 'Deployment')!;
  const sidecar = drainguardContainer(deployment);
  const env: { name: string; value?: string }[] = sidecar.env;
  const holdVar = env.find((e) => e.name === 'DRAINGUARD_HOLD')!;
  const kinds = holdVar.value!;
  const first = kinds.split(',')[0]!;
  const group = first.slice(first.indexOf('.') + 1);
  if (o.hold === false) holdVar.value = '';
  for (const [name, value] of Object.entries(o.env ?? {})) env.push({ name, value });
  if (o.replicas !== undefined) deployment.spec.replicas = o.replicas;
  const guard = env.find((e) => e.name === 'DRAINGUARD_GUARD')!.value!;
  const own = objects
    .filter((x) => x.metadata.labels?.['app.kubernetes.io/name'] === 'drainguard')
    .map(key)
    .join(',');
  const customResources: KubeObject[] = ['Installation', 'APIServer'].map((kind) => ({
    apiVersion: `${group}/v1`,
    kind,
    metadata: { name: 'default' },
  }));

  const t0 = Date.now();
  const timeline: string[] = [];
  const at = (what: string, time?: unknown) => {
    const when = typeof time === 'string' ? Date.parse(time) : Date.now();
    timeline.push(`${String(when - t0).padStart(6)} ms  ${what}`);
    timeline.sort((a, b) => parseInt(a) - parseInt(b));
  };

  const applied = await kubectl(c, ['apply', '-f', '-'], yaml(objects));
  if (applied.code !== 0) throw new Error(`kubectl apply -f ${RENDERED}: ${applied.stderr}`);
  at(
    `kubectl apply -f ${RENDERED}${o.hold === false ? ' (DRAINGUARD_HOLD emptied)' : ''}: ${applied.stdout.trim().split('\n').length} objects`,
  );
  for (const plural of ['installations', 'apiservers']) {
    await c.poll(`/apis/${group}/v1/${plural}`, (_b, st) => st === 200, 20_000, `the ${plural} CRD served`);
  }
  const crs = await kubectl(c, ['apply', '-f', '-'], yaml(customResources));
  if (crs.code !== 0) throw new Error(`kubectl apply -f custom-resources.yaml: ${crs.stderr}`);
  at('kubectl apply -f custom-resources.yaml: Installation, APIServer');

  const operatorImage = exampleImages({
    FIXTURE_GROUP: group,
    FIXTURE_NAME: id,
    FIXTURE_FINALIZE_AFTER_MS: String(o.finalizeAfterMs ?? 3000),
  })['example.com/example-operator'];
  const kubelet = await Kubelet.start({
    cluster: c.access,
    namespaces: [ns],
    images: { [DRAINGUARD_IMAGE]: drainguardImage(), [`example.com/${id}`]: operatorImage },
  });
  return { ns, name: id, group, kinds, objects, customResources, guard, own, kubelet, at, timeline };
}

/**
 * The uninstall docs/guard.md gives for kubectl: every object of the manifests
 * and the custom resources but the Namespace (its deletion stops the pods
 * directly: nothing can hold them) and drainguard's own RBAC (left out by its
 * label, deleted by `drainguard release` once no holder is left).
 */
export function uninstallArgs(s: OperatorSet, ...extra: string[]): [string[], string] {
  const objects = [...s.objects.filter((o) => o.kind !== 'Namespace'), ...s.customResources];
  return [['delete', '-l', 'app.kubernetes.io/name!=drainguard', '-f', '-', ...extra], yaml(objects)];
}

/** `kubectl ARGS` as the admin, without blocking the event loop (the kubelet stand-in runs in it). */
export function kubectl(
  c: KubeletCluster,
  args: readonly string[],
  input?: string,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile('kubectl', ['--kubeconfig', c.cluster.adminKubeconfig, ...args], { encoding: 'utf8' }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
    child.stdin!.end(input);
  });
}

export interface OperatorPod {
  readonly pod: any;
  /** The operator (container manager). */
  readonly operator: Proc;
  /** Its drainguard (the native sidecar). */
  readonly drainguard: Proc;
}

/** The operator's pods, running and Ready, once the operator has adopted its custom resources. */
export async function operatorPods(c: KubeletCluster, s: OperatorSet, count = 1): Promise<OperatorPod[]> {
  const pods = await c.poll(
    `/api/v1/namespaces/${s.ns}/pods?labelSelector=app.kubernetes.io%2Fname%3D${s.name}`,
    (b) => b.items?.length === count,
    60_000,
    `${count} operator pod(s)`,
  );
  const out = [];
  for (const pod of pods.items) {
    const drainguard = await s.kubelet.process(pod.metadata.name, 'drainguard', 60_000);
    const operator = await s.kubelet.process(pod.metadata.name, 'manager', 60_000);
    await operator.line('ready', 20_000);
    await c.poll(
      `/api/v1/namespaces/${s.ns}/pods/${pod.metadata.name}`,
      (b) => b.status?.conditions?.some((x: any) => x.type === 'Ready' && x.status === 'True'),
      30_000,
      'the operator pod Ready',
    );
    out.push({ pod, operator, drainguard });
  }
  for (const cr of s.customResources) {
    await c.poll(
      pathOf(cr),
      (b) => b.metadata?.finalizers?.includes(`${s.group}/cleanup`),
      20_000,
      `the operator's finalizer on ${key(cr)}`,
    );
  }
  return out;
}

/** What is left of the set and its pods (the objects that still exist), after waiting up to `ms` for them to go. */
export async function leftOf(c: KubeletCluster, s: OperatorSet, ms: number): Promise<string[]> {
  const lists = ['/apis/apps/v1/replicasets', '/api/v1/pods', '/apis/coordination.k8s.io/v1/leases', '/api/v1/configmaps'].map((l) =>
    l.replace(/\/([a-z]+)$/, `/namespaces/${s.ns}/$1`),
  );
  const deadline = Date.now() + ms;
  for (;;) {
    const left: string[] = [];
    for (const o of [...s.objects, ...s.customResources]) if ((await c.api.call('GET', pathOf(o))).status !== 404) left.push(key(o));
    for (const l of lists) {
      for (const o of (await c.api.call('GET', l)).body?.items ?? [])
        if (!PUBLISHED.includes(o.metadata.name)) left.push(`${l}/${o.metadata.name}`);
    }
    if (left.length === 0 || Date.now() > deadline) return left;
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Whatever a test left of the set: its pods killed, finalizers stripped, everything deleted (the Namespace last). */
export async function removeSet(c: KubeletCluster, s: OperatorSet): Promise<void> {
  await s.kubelet.stop();
  await c.freeAnchors(s.ns);
  for (const o of [...s.customResources, ...s.objects]) {
    await c.api.call('PATCH', pathOf(o), { metadata: { finalizers: null } }, 'application/merge-patch+json');
    await c.api.call('DELETE', pathOf(o));
  }
  for (const o of s.objects.filter((x) => x.kind === 'CustomResourceDefinition' || x.kind === 'Namespace')) {
    await c.poll(pathOf(o), (_b, st) => st === 404, 60_000, `${key(o)} gone`);
  }
}
