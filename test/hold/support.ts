// An operator installed from one manifest set, as `kubectl apply -f` does it: its
// Deployment (drainguard run wrapping the cr-operator fixture, with the hold and
// the guard), an Installation and an APIServer carrying the operator's
// finalizer, and its RBAC (drainguard's rights in it: one ClusterRole, as a
// plain kubectl manifest has it). The tests delete it the ways people do.

import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { stringify } from 'yaml';
import { CR_OPERATOR_IMAGE, crOperatorImage, stripCustomResources } from '../support/cr-operator.ts';
import type { KubeletCluster } from '../support/kubelet/cluster.ts';
import { Kubelet } from '../support/kubelet/index.ts';
import { DRAINGUARD_IMAGE, drainguardImage } from '../support/kubelet/runners.ts';
import type { Proc } from '../support/proc.ts';

const RBAC = 'rbac.authorization.k8s.io/v1';

export interface OperatorSet {
  readonly ns: string;
  readonly name: string;
  readonly group: string;
  /** The whole manifest set, in the order of a typical operator.yaml + custom-resources.yaml. */
  readonly manifest: string;
  readonly kubelet: Kubelet;
  /** Onto the timeline, now or at `time` (a drainguard log line's). */
  at(what: string, time?: unknown): void;
  readonly timeline: string[];
}

export interface OperatorOptions {
  /** DRAINGUARD_HOLD; undefined: no hold. */
  readonly hold?: string;
  readonly holdTimeout?: string;
  readonly holdSettle?: string;
  readonly replicas?: number;
  /** Custom resources in the manifest (default: the Installation and the APIServer, each with the operator's finalizer). */
  readonly customResources?: boolean;
  readonly drainguardEnv?: NodeJS.ProcessEnv;
  readonly httpAddr?: boolean;
  /** How long the operator's cleanup of a deleted custom resource takes (default 3 s, a teardown's time). */
  readonly finalizeAfterMs?: number;
}

export async function operatorSet(c: KubeletCluster, group: string, o: OperatorOptions = {}): Promise<OperatorSet> {
  const ns = await c.namespace('hold');
  const name = `op-${randomBytes(3).toString('hex')}`;
  const t0 = Date.now();
  const timeline: string[] = [];
  const at = (what: string, time?: unknown) => {
    const when = typeof time === 'string' ? Date.parse(time) : Date.now();
    timeline.push(`${String(when - t0).padStart(6)} ms  ${what}`);
    timeline.sort((a, b) => parseInt(a) - parseInt(b));
  };
  const kubelet = await Kubelet.start({
    cluster: c.access,
    namespaces: [ns],
    images: { [DRAINGUARD_IMAGE]: drainguardImage({ DRAINGUARD_LEASE_DURATION: '15s', ...o.drainguardEnv }), [CR_OPERATOR_IMAGE]: crOperatorImage({ FIXTURE_FINALIZE_AFTER_MS: String(o.finalizeAfterMs ?? 3000) }, group) },
  });
  const guard = [`clusterrole/${name}`, `clusterrolebinding/${name}`, `serviceaccount/${ns}/${name}`].join(',');
  const env = [
    ...['name', 'namespace', 'uid'].map((f) => ({ name: `DRAINGUARD_POD_${f.toUpperCase()}`, valueFrom: { fieldRef: { fieldPath: `metadata.${f}` } } })),
    { name: 'DRAINGUARD_GUARD', value: guard },
    ...(o.hold !== undefined ? [{ name: 'DRAINGUARD_HOLD', value: o.hold }] : []),
    ...(o.holdTimeout !== undefined ? [{ name: 'DRAINGUARD_HOLD_TIMEOUT', value: o.holdTimeout }] : []),
    ...(o.holdSettle !== undefined ? [{ name: 'DRAINGUARD_HOLD_SETTLE', value: o.holdSettle }] : []),
    ...(o.httpAddr ? [{ name: 'DRAINGUARD_HTTP_ADDR', value: ':9404' }] : []),
  ];
  const labels = { 'app.kubernetes.io/name': name };
  const deployment = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: ns },
    spec: {
      replicas: o.replicas ?? 1,
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: {
          serviceAccountName: name,
          terminationGracePeriodSeconds: 30,
          volumes: [{ name: 'drainguard', emptyDir: {} }],
          initContainers: [{ name: 'drainguard-install', image: `${DRAINGUARD_IMAGE}:0.1.0`, command: ['/drainguard/drainguard', 'install', '/shared'], volumeMounts: [{ name: 'drainguard', mountPath: '/shared' }] }],
          containers: [
            {
              name: 'manager',
              image: `${CR_OPERATOR_IMAGE}:1.0.0`,
              command: ['/drainguard/drainguard', 'run', '--', '/manager'],
              env,
              volumeMounts: [{ name: 'drainguard', mountPath: '/drainguard', readOnly: true }],
              ...(o.httpAddr && { ports: [{ name: 'health', containerPort: 9404 }], readinessProbe: { httpGet: { path: '/readyz', port: 9404 }, periodSeconds: 1 } }),
            },
          ],
        },
      },
    },
  };
  const crs = ['Installation', 'APIServer'].map((kind) => ({ apiVersion: `${group}/v1`, kind, metadata: { name: 'default', finalizers: [`${group}/cleanup`] } }));
  const rbac = [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace: ns } },
    {
      apiVersion: RBAC,
      kind: 'ClusterRole',
      metadata: { name },
      rules: [
        // The operator's.
        { apiGroups: [group], resources: ['apiservers', 'installations'], verbs: ['get', 'list', 'watch', 'patch', 'update'] },
        { apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'create', 'delete'] },
        // drainguard's guard: its finalizer on this RBAC, its Lease, its Pod, Events.
        { apiGroups: ['rbac.authorization.k8s.io'], resources: ['clusterroles', 'clusterrolebindings'], resourceNames: [name], verbs: ['get', 'patch'] },
        { apiGroups: [''], resources: ['serviceaccounts'], resourceNames: [name], verbs: ['get', 'patch'] },
        { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'list', 'create', 'update', 'patch', 'delete'] },
        { apiGroups: [''], resources: ['pods'], verbs: ['get'] },
        { apiGroups: [''], resources: ['events'], verbs: ['create'] },
        // The hold: the ReplicaSet (its name changes with each rollout), the Deployment by name
        // (list and watch with fieldSelector metadata.name are authorized by its name), the listed kinds.
        { apiGroups: ['apps'], resources: ['replicasets'], verbs: ['get'] },
        { apiGroups: ['apps'], resources: ['deployments'], resourceNames: [name], verbs: ['get', 'patch', 'list', 'watch'] },
      ],
    },
    { apiVersion: RBAC, kind: 'ClusterRoleBinding', metadata: { name }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name }, subjects: [{ kind: 'ServiceAccount', name, namespace: ns }] },
  ];
  // A typical order: the operator first, then its custom resources, then RBAC (kubectl deletes in this order).
  const docs = [deployment, ...(o.customResources === false ? [] : crs), ...rbac];
  const manifest = docs.map((d) => stringify(d)).join('---\n');
  return { ns, name, group, manifest, kubelet, at, timeline };
}

/** `kubectl ARGS` as the admin, without blocking the event loop (the kubelet stand-in runs in it). */
export function kubectl(c: KubeletCluster, args: readonly string[], input?: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile('kubectl', ['--kubeconfig', c.cluster.adminKubeconfig, ...args], { encoding: 'utf8' }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
    child.stdin!.end(input);
  });
}

/** The operator's pods, running and Ready; their manager processes. */
export async function operatorPods(c: KubeletCluster, s: OperatorSet, count = 1): Promise<{ proc: Proc; pod: any }[]> {
  const pods = await c.poll(`/api/v1/namespaces/${s.ns}/pods?labelSelector=app.kubernetes.io%2Fname%3D${s.name}`, (b) => b.items?.length === count, 60_000, `${count} operator pod(s)`);
  const out = [];
  for (const pod of pods.items) {
    const proc = await s.kubelet.process(pod.metadata.name, 'manager', 60_000);
    await proc.line('ready', 20_000);
    await c.poll(`/api/v1/namespaces/${s.ns}/pods/${pod.metadata.name}`, (b) => b.status?.conditions?.some((x: any) => x.type === 'Ready' && x.status === 'True'), 30_000, 'the operator pod Ready');
    out.push({ proc, pod });
  }
  return out;
}

/** What is left of the set (the objects that still exist), after waiting up to `ms` for them to go. */
export async function leftOf(c: KubeletCluster, s: OperatorSet, ms: number): Promise<string[]> {
  const paths = [
    `/apis/apps/v1/namespaces/${s.ns}/deployments/${s.name}`,
    `/apis/${s.group}/v1/installations/default`,
    `/apis/${s.group}/v1/apiservers/default`,
    `/apis/${RBAC}/clusterroles/${s.name}`,
    `/apis/${RBAC}/clusterrolebindings/${s.name}`,
    `/api/v1/namespaces/${s.ns}/serviceaccounts/${s.name}`,
    `/api/v1/namespaces/${s.ns}/configmaps/example-operator-state`,
  ];
  const lists = [`/apis/apps/v1/namespaces/${s.ns}/replicasets`, `/api/v1/namespaces/${s.ns}/pods`, `/apis/coordination.k8s.io/v1/namespaces/${s.ns}/leases`];
  const deadline = Date.now() + ms;
  for (;;) {
    const left: string[] = [];
    for (const p of paths) if ((await c.api.call('GET', p)).status !== 404) left.push(p);
    for (const l of lists) for (const o of (await c.api.must('GET', l)).items) left.push(`${l}/${o.metadata.name}`);
    if (left.length === 0 || Date.now() > deadline) return left;
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Whatever a failed test left of the set: finalizers stripped, objects deleted (the namespace goes at the end of the file). */
export async function removeSet(c: KubeletCluster, s: OperatorSet): Promise<void> {
  // Scaled to nothing first: the pods stop as in a rollout, each drainguard exits by itself.
  await c.api.call('PATCH', `/apis/apps/v1/namespaces/${s.ns}/deployments/${s.name}`, { spec: { replicas: 0 } }, 'application/merge-patch+json');
  await c.poll(`/api/v1/namespaces/${s.ns}/pods`, (b) => b.items?.length === 0, 30_000, 'the pods gone').catch(() => undefined);
  await s.kubelet.stop();
  for (const p of [`/apis/apps/v1/namespaces/${s.ns}/deployments/${s.name}`, `/apis/${RBAC}/clusterroles/${s.name}`, `/apis/${RBAC}/clusterrolebindings/${s.name}`, `/api/v1/namespaces/${s.ns}/serviceaccounts/${s.name}`]) {
    await c.api.call('PATCH', p, { metadata: { finalizers: null } }, 'application/merge-patch+json');
    await c.api.call('DELETE', p);
  }
  await stripCustomResources(c, s.group);
}
