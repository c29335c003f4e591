// An operator install on the real control plane (test/support/cluster), for
// guard tests, laid out as deploy/components/rbac and the library chart ship
// it: its own namespace and ServiceAccount, the operator's ClusterRole and
// binding (nothing of drainguard's in them), drainguard's own ClusterRole,
// Role and bindings as the component renders them (granting by resourceNames,
// kept through the uninstall), all seven guarded; Pods bound to a Node, and `drainguard run` as one of
// those Pods with a pod-bound token. With `{ proxy: true }` drainguard reaches
// the API through the fault proxy (test/support/faultproxy), which also
// records its requests.
//
// There is no kubelet here (yet): where a Pod must finally go, the test plays
// the kubelet's last step itself, a delete with grace 0 (finishPod). The
// kubelet stand-in (test/support/kubelet) takes that over.

import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { type TestCluster, resourcePath, useCluster } from '../support/cluster/index.ts';
import { drainguardRbac } from '../support/drainguard-rbac.ts';
import { type FaultProxy, startFaultProxy } from '../support/faultproxy/index.ts';
import { NODE, type Proc, drainguard } from '../support/proc.ts';

export const RBAC_V1 = 'rbac.authorization.k8s.io/v1';
export const OPERATOR = join(import.meta.dirname, 'fixtures', 'k8s-operator.ts');

export interface Pod {
  readonly name: string;
  readonly uid: string;
}

/** One guarded object: how DRAINGUARD_GUARD names it and where it is in the API. */
export interface GuardedObject {
  readonly guard: string;
  readonly path: string;
}

export interface Install {
  readonly cluster: TestCluster;
  /** The operator's namespace (unique). */
  readonly ns: string;
  /** The name of its ClusterRole and ClusterRoleBinding (unique: they are cluster-scoped). */
  readonly name: string;
  /** The name of drainguard's own ClusterRole, ClusterRoleBinding, Role and RoleBinding. */
  readonly own: string;
  /** DRAINGUARD_GUARD for the seven objects. */
  readonly guard: string;
  /** drainguard's own four, as `release --delete` names them. */
  readonly ownList: string;
  readonly objects: readonly GuardedObject[];
  readonly proxy?: FaultProxy;
  /** The admin's kubeconfig (client certificate). */
  readonly adminKubeconfig: string;
  /** A Pod of the operator, bound to the file's Node. */
  pod(name: string, terminationGracePeriodSeconds?: number): Promise<Pod>;
  /** A kubeconfig with a token bound to `pod` (through the fault proxy when there is one). */
  kubeconfig(pod: Pod): Promise<string>;
  /** `drainguard run -- operator fixture` as `pod`, with a token bound to it. */
  run(pod: Pod, env?: NodeJS.ProcessEnv, command?: string[]): Promise<Proc>;
  /** A graceful delete of the Pod (it stays Terminating: there is no kubelet). */
  deletePod(name: string, options?: Record<string, unknown>): Promise<void>;
  /** The kubelet's last step, played by the test: delete with grace 0 once the containers stopped. */
  finishPod(name: string): Promise<void>;
  /** Guarded objects that still exist. */
  remaining(): Promise<string[]>;
  /** Holder finalizers on the guarded objects that exist. */
  holders(): Promise<Record<string, string[]>>;
  /** The holder Lease of `pod`, if it exists. */
  lease(pod: Pod): Promise<any>;
  /** The release anchor of `pod` (a Lease), if it exists. */
  anchor(pod: Pod): Promise<any>;
  /**
   * `helm uninstall`: the operator's ClusterRole, binding and ServiceAccount deleted with background
   * propagation, drainguard's own RBAC kept (helm.sh/resource-policy: keep); `{ own: true }` deletes
   * that too, as an uninstall that ignores the annotation does.
   */
  uninstall(options?: { own?: boolean }): Promise<void>;
  /** The post-delete hook as an admin: `drainguard release --guard ... --wait WAIT --delete OWN`. */
  postDelete(wait?: string): Proc;
  /** The processes started by run(), SIGKILLed with their operators. */
  readonly procs: Proc[];
}

async function install(cluster: TestCluster, options: { proxy?: boolean }): Promise<Install> {
  const { name: ns } = await cluster.namespace('op');
  const name = `op-${randomBytes(4).toString('hex')}`;
  const node = await cluster.node();
  const proxy = options.proxy ? await startFaultProxy(cluster) : undefined;
  await cluster.serviceAccount(ns, 'op');
  // What the operator needs, and nothing of drainguard's.
  await cluster.grant(
    ns,
    'op',
    name,
    [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'create', 'update', 'patch', 'delete'] }],
    { clusterWide: true },
  );
  // drainguard's own, as deploy/components/rbac renders it: get/patch on exactly the guarded objects, kept through the uninstall.
  const rbac = drainguardRbac({ namespace: ns, deployment: 'op', serviceAccount: 'op', clusterRole: name, clusterRoleBinding: name });
  for (const object of rbac) await cluster.create(object);
  const own = rbac[0]!.metadata.name;
  const objects: GuardedObject[] = [
    { guard: `clusterrole/${name}`, path: resourcePath(RBAC_V1, 'clusterroles', undefined, name) },
    { guard: `clusterrolebinding/${name}`, path: resourcePath(RBAC_V1, 'clusterrolebindings', undefined, name) },
    { guard: `serviceaccount/${ns}/op`, path: resourcePath('v1', 'serviceaccounts', ns, 'op') },
    { guard: `clusterrole/${own}`, path: resourcePath(RBAC_V1, 'clusterroles', undefined, own) },
    { guard: `clusterrolebinding/${own}`, path: resourcePath(RBAC_V1, 'clusterrolebindings', undefined, own) },
    { guard: `role/${ns}/${own}`, path: resourcePath(RBAC_V1, 'roles', ns, own) },
    { guard: `rolebinding/${ns}/${own}`, path: resourcePath(RBAC_V1, 'rolebindings', ns, own) },
  ];
  const ownObjects = objects.slice(3);
  const guard = objects.map((o) => o.guard).join(',');
  const ownList = ownObjects.map((o) => o.guard).join(',');
  const api = cluster.api;
  const procs: Proc[] = [];

  return {
    cluster,
    ns,
    name,
    own,
    guard,
    ownList,
    objects,
    proxy,
    adminKubeconfig: cluster.adminKubeconfig,
    procs,
    async pod(pod, grace = 30) {
      const created = await cluster.create({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: pod, namespace: ns },
        spec: {
          nodeName: node,
          serviceAccountName: 'op',
          terminationGracePeriodSeconds: grace,
          containers: [{ name: 'manager', image: 'example.com/operator' }],
        },
      });
      return { name: pod, uid: created.metadata.uid as string };
    },
    async kubeconfig(pod) {
      return cluster.kubeconfigFor(await cluster.token(ns, 'op', { pod }), { server: proxy?.url ?? cluster.url });
    },
    async run(pod, env = {}, command = [NODE, OPERATOR]) {
      const token = await cluster.token(ns, 'op', { pod });
      const server = proxy?.url ?? cluster.url;
      const p = drainguard(['run', '--', ...command], {
        KUBECONFIG: cluster.kubeconfigFor(token, { server }),
        DRAINGUARD_GUARD: guard,
        DRAINGUARD_POD_NAME: pod.name,
        DRAINGUARD_POD_NAMESPACE: ns,
        DRAINGUARD_POD_UID: pod.uid,
        DRAINGUARD_LOG_LEVEL: 'debug',
        FIXTURE_API: server,
        FIXTURE_TOKEN: token,
        FIXTURE_CA: cluster.caFile,
        FIXTURE_NAMESPACE: ns,
        ...env,
      });
      procs.push(p);
      return p;
    },
    deletePod: (pod, options = {}) => api.delete(resourcePath('v1', 'pods', ns, pod), options),
    finishPod: (pod) => api.delete(resourcePath('v1', 'pods', ns, pod), { gracePeriodSeconds: 0 }),
    async remaining() {
      const found = await Promise.all(objects.map(async (o) => ((await api.get(o.path)) ? o.guard : undefined)));
      return found.filter((g): g is string => g !== undefined);
    },
    async holders() {
      const out: Record<string, string[]> = {};
      for (const o of objects) {
        const obj = await api.get(o.path);
        if (obj) out[o.guard] = ((obj.metadata.finalizers ?? []) as string[]).filter((f) => f.startsWith('drainguard.dev/holder-'));
      }
      return out;
    },
    lease: (pod) => api.get(resourcePath('coordination.k8s.io/v1', 'leases', ns, `drainguard-${pod.uid}`)),
    anchor: (pod) => api.get(resourcePath('coordination.k8s.io/v1', 'leases', ns, `drainguard-${pod.uid}-anchor`)),
    async uninstall({ own: all = false } = {}) {
      for (const o of objects) if (all || !ownObjects.includes(o)) await api.delete(o.path, { propagationPolicy: 'Background' });
    },
    postDelete: (wait = '30s') =>
      drainguard(['release', '--pod-namespace', ns, '--guard', guard, '--wait', wait, '--delete', ownList], {
        KUBECONFIG: cluster.adminKubeconfig,
      }),
  };
}

/** A fresh install for the length of `fn`; its processes killed afterwards whatever happens (the namespace goes at the end of the file). */
export async function withCluster(
  fn: (c: Install) => Promise<void>,
  options: { proxy?: boolean; cluster?: TestCluster } = {},
): Promise<void> {
  const c = await install(options.cluster ?? (await useCluster()), options);
  const t0 = Date.now();
  try {
    await fn(c);
  } finally {
    if (process.env.TEST_VERBOSE) console.log(`  ${Date.now() - t0} ms`);
    for (const p of c.procs) p.killAll();
    await c.proxy?.close();
  }
}

/** The guard finalizer of `pod`. */
export const finalizer = (pod: { uid: string }): string => `drainguard.dev/holder-${pod.uid}`;

/** Every guarded object that exists carries the holder finalizers of `pods`, and no other. */
export async function allHeldBy(c: Install, ...pods: { uid: string }[]): Promise<boolean> {
  const want = JSON.stringify(pods.map(finalizer).sort());
  return Object.values(await c.holders()).every((h) => JSON.stringify([...h].sort()) === want);
}

export async function nothingHeld(c: Install): Promise<boolean> {
  return Object.values(await c.holders()).every((h) => h.length === 0);
}

/** Waits until allHeldBy(c, ...pods). */
export const waitHeld = (c: Install, pods: { uid: string }[], what: string, ms = 10_000) =>
  c.cluster.waitFor(() => allHeldBy(c, ...pods), ms, what);

/** `drainguard run` as `pod` (`env` on top), once it is ready and its guard alone holds every object. */
export async function runHeld(c: Install, pod: Pod, env?: NodeJS.ProcessEnv): Promise<Proc> {
  const p = await c.run(pod, env);
  await p.line('ready');
  await waitHeld(c, [pod], `the guard of ${pod.name} set`);
  return p;
}
