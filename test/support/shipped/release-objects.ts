// What a shipped operator's release puts in the cluster, for every operator of the tier: the
// objects of its that are still there after an uninstall (KIND/[NS/]NAME, its finalizers,
// whether it is being deleted), the same removed by force after a run, kubectl on the
// cluster, and the operator's log lines that say it was refused.

import { execFile } from 'node:child_process';
import type { TestCluster } from '../cluster/index.ts';

/** One release of a shipped operator: where its objects are, and which cluster-scoped ones are its. */
export interface ShippedRelease {
  /** The operator's namespace. */
  readonly ns: string;
  /** Its custom resources' collections (in the application namespace), first in the list of what is left. */
  readonly customResources: readonly { readonly kind: string; readonly path: string }[];
  /** The API groups of its CRDs end with this. */
  readonly crdGroup: string;
  /** Its ClusterRoles and ClusterRoleBindings, by name (drainguard's own are `drainguard:NS:…`). */
  readonly clusterRbac: (name: string) => boolean;
}

export const RBAC = '/apis/rbac.authorization.k8s.io/v1';
export const CRDS = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';
const ADMISSION = '/apis/admissionregistration.k8s.io/v1';
const REFUSED = /\b(forbidden|unauthorized)\b|\b40[13]\b/i;

/**
 * drainguard's own lines: in wrap mode it writes to the operator's container's log. Not the operator's, and a bare
 * 401 or 403 matches their numbers: its `"durationMs":401` was once counted as a refusal.
 */
const drainguards = (l: string): boolean => {
  try {
    return JSON.parse(l)?.component === 'drainguard';
  } catch {
    return false;
  }
};

/** A line of the operator's own (not drainguard's, in the same container log) that says the API server refused it. */
export const refusedLine = (l: string): boolean => !drainguards(l) && REFUSED.test(l);
const HELM_MS = 180_000;

const ofGroup = (r: ShippedRelease) => (o: any) => o.spec.group.endsWith(r.crdGroup);
const clusterRbacOf = (r: ShippedRelease) => (o: any) => r.clusterRbac(o.metadata.name) || o.metadata.name.includes(`:${r.ns}:`);

/** kubectl as the cluster's admin, INPUT on its stdin; its exit code and output, never a rejection. */
export function kubectl(c: TestCluster, args: readonly string[], input?: string): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    const child = execFile(
      'kubectl',
      ['--kubeconfig', c.adminKubeconfig, ...args],
      { encoding: 'utf8', timeout: HELM_MS, killSignal: 'SIGKILL' },
      (err, stdout, stderr) => resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, output: `${stdout}${stderr}` }),
    );
    child.stdin!.end(input);
  });
}

export const describeObject = (kind: string, o: any): string =>
  `${kind}/${o.metadata.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata.name}` +
  `${o.metadata.deletionTimestamp ? ' (being deleted)' : ''}${o.metadata.finalizers?.length ? ` finalizers ${o.metadata.finalizers.join(',')}` : ''}`;

/** What the release and its custom resources left: every object of theirs still there; `after`: more collections, listed last. */
export async function releaseLeftovers(
  c: TestCluster,
  r: ShippedRelease,
  after: readonly { readonly kind: string; readonly path: string }[] = [],
): Promise<string[]> {
  const { ns } = r;
  const out: string[] = [];
  const add = async (kind: string, path: string, keep: (o: any) => boolean = () => true) => {
    for (const o of await c.api.list(path).catch(() => [])) if (keep(o)) out.push(describeObject(kind, o));
  };
  for (const cr of r.customResources) await add(cr.kind, cr.path);
  await add('customresourcedefinition', CRDS, ofGroup(r));
  await add('clusterrole', `${RBAC}/clusterroles`, clusterRbacOf(r));
  await add('clusterrolebinding', `${RBAC}/clusterrolebindings`, clusterRbacOf(r));
  await add('validatingadmissionpolicy', `${ADMISSION}/validatingadmissionpolicies`, (o) => o.metadata.name.includes(ns));
  await add('validatingadmissionpolicybinding', `${ADMISSION}/validatingadmissionpolicybindings`, (o) => o.metadata.name.includes(ns));
  await add('role', `${RBAC}/namespaces/${ns}/roles`);
  await add('rolebinding', `${RBAC}/namespaces/${ns}/rolebindings`);
  await add('serviceaccount', `/api/v1/namespaces/${ns}/serviceaccounts`, (o) => o.metadata.name !== 'default');
  await add('deployment', `/apis/apps/v1/namespaces/${ns}/deployments`);
  await add('job', `/apis/batch/v1/namespaces/${ns}/jobs`);
  await add('pod', `/api/v1/namespaces/${ns}/pods`);
  for (const x of after) await add(x.kind, x.path);
  return out;
}

/** After a run: what it left removed by force (finalizers stripped), so that the next run starts clean. */
export async function unstickRelease(c: TestCluster, r: ShippedRelease, what: string): Promise<void> {
  const strip = async (path: string) => {
    const o = await c.api.get(path).catch(() => undefined);
    if (o?.metadata.finalizers?.length) await c.api.patch(path, { metadata: { finalizers: null } }).catch(() => {});
  };
  for (const cr of r.customResources)
    for (const o of await c.api.list(cr.path).catch(() => [])) await strip(`${cr.path}/${o.metadata.name}`);
  for (const kind of ['clusterroles', 'clusterrolebindings'])
    for (const o of (await c.api.list(`${RBAC}/${kind}`)).filter(clusterRbacOf(r))) {
      await strip(`${RBAC}/${kind}/${o.metadata.name}`);
      await c.api.delete(`${RBAC}/${kind}/${o.metadata.name}`);
    }
  for (const crd of (await c.api.list(CRDS)).filter(ofGroup(r))) await c.api.delete(`${CRDS}/${crd.metadata.name}`);
  await c.waitFor(async () => !(await c.api.list(CRDS)).some(ofGroup(r)), 60_000, `${what}'s CRDs gone`);
  for (const path of ['validatingadmissionpolicies', 'validatingadmissionpolicybindings'])
    for (const o of await c.api.list(`${ADMISSION}/${path}`))
      if (o.metadata.name.includes(r.ns)) await c.api.delete(`${ADMISSION}/${path}/${o.metadata.name}`);
}
