// The fake API server for the API-fault tests still on it (being moved to the real control plane): a cluster with an operator's namespace,
// ServiceAccount, RBAC (the five objects the guard holds) and pods, and
// helpers to run `drainguard run` as that operator's pod.

import { join } from 'node:path';
import { type ApiServerOptions, type FakeApiServer, type KubeObject, startApiServer, writeKubeconfig } from '../../support/apiserver/index.ts';
import { NODE, Proc, drainguard, tempDir } from '../../support/proc.ts';
import { writeFileSync } from 'node:fs';

export const NS = 'op';
export const RBAC_V1 = 'rbac.authorization.k8s.io/v1';
/** The five objects of a typical operator install, as DRAINGUARD_GUARD names them. */
export const GUARD = ['clusterrole/op', 'clusterrolebinding/op', `role/${NS}/op-leases`, `rolebinding/${NS}/op-leases`, `serviceaccount/${NS}/op`].join(',');
export const OPERATOR = join(import.meta.dirname, '../../guard/fixtures/k8s-operator.ts');

export interface Cluster {
  readonly api: FakeApiServer;
  readonly dir: string;
  /** A kubeconfig with the operator ServiceAccount's token. */
  readonly kubeconfig: string;
  /** A scheduled Pod of the operator; returns its uid. */
  pod(name: string, terminationGracePeriodSeconds?: number): { name: string; uid: string };
  /** `drainguard run -- operator fixture` as pod `pod`. */
  run(pod: { name: string; uid: string }, env?: NodeJS.ProcessEnv, command?: string[]): Proc;
  /** Objects of the install that still exist. */
  remaining(): string[];
  /** Holder finalizers on the install's objects. */
  holders(): Record<string, string[]>;
  close(): Promise<void>;
}

const INSTALL: [string, string, string | undefined, string][] = [
  [RBAC_V1, 'clusterroles', undefined, 'op'],
  [RBAC_V1, 'clusterrolebindings', undefined, 'op'],
  [RBAC_V1, 'roles', NS, 'op-leases'],
  [RBAC_V1, 'rolebindings', NS, 'op-leases'],
  ['v1', 'serviceaccounts', NS, 'op'],
];

export async function startCluster(options: ApiServerOptions = {}): Promise<Cluster> {
  const api = await startApiServer(options);
  const dir = tempDir();
  api.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
  api.create({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'op', namespace: NS } });
  // What the operator needs, plus what drainguard needs: get/patch on exactly the guarded objects.
  api.create({
    apiVersion: RBAC_V1,
    kind: 'ClusterRole',
    metadata: { name: 'op' },
    rules: [
      { apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'create', 'update', 'patch', 'delete'] },
      { apiGroups: ['rbac.authorization.k8s.io'], resources: ['clusterroles'], resourceNames: ['op'], verbs: ['get', 'patch'] },
      { apiGroups: ['rbac.authorization.k8s.io'], resources: ['clusterrolebindings'], resourceNames: ['op'], verbs: ['get', 'patch'] },
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['list'] },
    ],
  });
  api.create({
    apiVersion: RBAC_V1,
    kind: 'ClusterRoleBinding',
    metadata: { name: 'op' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'op' },
    subjects: [{ kind: 'ServiceAccount', name: 'op', namespace: NS }],
  });
  api.create({
    apiVersion: RBAC_V1,
    kind: 'Role',
    metadata: { name: 'op-leases', namespace: NS },
    rules: [
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'list', 'create', 'patch', 'update', 'delete'] },
      { apiGroups: [''], resources: ['pods'], verbs: ['get'] },
      { apiGroups: [''], resources: ['events'], verbs: ['create'] },
      { apiGroups: [''], resources: ['serviceaccounts'], resourceNames: ['op'], verbs: ['get', 'patch'] },
      { apiGroups: ['rbac.authorization.k8s.io'], resources: ['roles', 'rolebindings'], resourceNames: ['op-leases'], verbs: ['get', 'patch'] },
    ],
  });
  api.create({
    apiVersion: RBAC_V1,
    kind: 'RoleBinding',
    metadata: { name: 'op-leases', namespace: NS },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'op-leases' },
    subjects: [{ kind: 'ServiceAccount', name: 'op', namespace: NS }],
  });
  const token = api.tokenFor(NS, 'op');
  const kubeconfig = writeKubeconfig(dir, api, token);
  writeFileSync(join(dir, 'ca.crt'), api.ca);

  return {
    api,
    dir,
    kubeconfig,
    pod(name, grace = 30) {
      const pod = api.create({ apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: NS }, spec: { nodeName: 'node-1', terminationGracePeriodSeconds: grace } });
      return { name, uid: pod.metadata.uid };
    },
    run(pod, env = {}, command = [NODE, OPERATOR]) {
      return drainguard(['run', '--', ...command], {
        KUBECONFIG: kubeconfig,
        DRAINGUARD_GUARD: GUARD,
        DRAINGUARD_POD_NAME: pod.name,
        DRAINGUARD_POD_NAMESPACE: NS,
        DRAINGUARD_POD_UID: pod.uid,
        DRAINGUARD_LOG_LEVEL: 'debug',
        FIXTURE_API: api.url,
        FIXTURE_TOKEN: token,
        FIXTURE_CA: join(dir, 'ca.crt'),
        ...env,
      });
    },
    remaining() {
      return INSTALL.filter(([v, r, ns, name]) => api.get(v, r, ns, name)).map(([, r, ns, name]) => `${r}/${ns ? `${ns}/` : ''}${name}`);
    },
    holders() {
      const out: Record<string, string[]> = {};
      for (const [v, r, ns, name] of INSTALL) {
        const obj: KubeObject | undefined = api.get(v, r, ns, name);
        if (obj) out[`${r}/${ns ? `${ns}/` : ''}${name}`] = (obj.metadata.finalizers ?? []).filter((f: string) => f.startsWith('drainguard.dev/holder-'));
      }
      return out;
    },
    close: () => api.close(),
  };
}

/** `helm uninstall`: every object of the install deleted with background propagation, Deployment (pods) first. */
export function uninstall(c: Cluster): void {
  for (const [v, r, ns, name] of INSTALL) c.api.delete(v, r, ns, name, { propagationPolicy: 'Background' });
}

/** A started cluster for the length of `fn`, closed afterwards whatever happens. */
export async function withCluster(fn: (c: Cluster) => Promise<void>, options: ApiServerOptions = {}): Promise<void> {
  const c = await startCluster(options);
  const t0 = Date.now();
  try {
    await fn(c);
  } finally {
    if (process.env.TEST_VERBOSE) console.log(`  ${Date.now() - t0} ms`);
    await c.close();
  }
}

/** The guard finalizer of `pod`. */
export const finalizer = (pod: { uid: string }): string => `drainguard.dev/holder-${pod.uid}`;

/** The holder Lease of `pod`, if it exists. */
export const lease = (c: Cluster, pod: { uid: string }): KubeObject | undefined => c.api.get('coordination.k8s.io/v1', 'leases', NS, `drainguard-${pod.uid}`);
