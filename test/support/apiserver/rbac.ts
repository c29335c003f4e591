// RBAC as kube-apiserver evaluates it (plugin/pkg/auth/authorizer/rbac):
// bindings and roles, terminating ones included, with resourceNames,
// subresources and non-resource URLs; the escalation and bind checks on
// writes to roles and bindings; and the bootstrap policy a fresh cluster has.

import { isDeepStrictEqual } from 'node:util';
import type { KubeObject } from './store.ts';

export interface UserInfo {
  readonly name: string;
  readonly uid?: string;
  readonly groups: readonly string[];
  readonly extra?: Readonly<Record<string, readonly string[]>>;
}

export interface Attributes {
  readonly verb: string;
  /** Resource requests; undefined for non-resource paths such as /version. */
  readonly resource?: string;
  readonly subresource?: string;
  readonly apiGroup?: string;
  readonly namespace?: string;
  readonly name?: string;
  readonly path: string;
}

export interface PolicyRule {
  verbs?: string[];
  apiGroups?: string[];
  resources?: string[];
  resourceNames?: string[];
  nonResourceURLs?: string[];
}

/** What the authorizer sees (an informer's view of the store: it lags). */
export interface RbacView {
  clusterRoles(): KubeObject[];
  clusterRoleBindings(): KubeObject[];
  roles(namespace: string): KubeObject[];
  roleBindings(namespace: string): KubeObject[];
}

const has = (list: readonly string[] | undefined, value: string): boolean => (list ?? []).includes('*') || (list ?? []).includes(value);

function subjectMatches(subject: Record<string, any>, user: UserInfo, bindingNamespace: string | undefined): boolean {
  switch (subject.kind) {
    case 'User':
      return subject.name === user.name;
    case 'Group':
      return user.groups.includes(subject.name);
    case 'ServiceAccount':
      return user.name === `system:serviceaccount:${subject.namespace || bindingNamespace}:${subject.name}`;
    default:
      return false;
  }
}

function urlMatches(patterns: readonly string[] | undefined, path: string): boolean {
  return (patterns ?? []).some((u) => u === '*' || u === path || (u.endsWith('*') && path.startsWith(u.slice(0, -1))));
}

export function ruleAllows(rule: PolicyRule, a: Attributes): boolean {
  if (!has(rule.verbs, a.verb)) return false;
  if (a.resource === undefined) return urlMatches(rule.nonResourceURLs, a.path);
  if (!has(rule.apiGroups, a.apiGroup ?? '')) return false;
  const combined = a.subresource ? `${a.resource}/${a.subresource}` : a.resource;
  const resources = rule.resources ?? [];
  const resourceOk = resources.includes('*') || resources.includes(combined) || (a.subresource !== undefined && resources.includes(`*/${a.subresource}`));
  if (!resourceOk) return false;
  const names = rule.resourceNames ?? [];
  return names.length === 0 || (a.name !== undefined && names.includes(a.name));
}

/** The rules that apply to `user` in `namespace` (undefined: the cluster-wide ones only). */
export function rulesFor(view: RbacView, user: UserInfo, namespace?: string): PolicyRule[] {
  const rules: PolicyRule[] = [];
  const clusterRole = (name: string) => view.clusterRoles().find((r) => r.metadata.name === name);
  for (const b of view.clusterRoleBindings()) {
    if (b.roleRef?.kind !== 'ClusterRole' || !(b.subjects ?? []).some((s: any) => subjectMatches(s, user, undefined))) continue;
    rules.push(...(clusterRole(b.roleRef.name)?.rules ?? []));
  }
  if (namespace !== undefined && namespace !== '') {
    for (const b of view.roleBindings(namespace)) {
      if (!(b.subjects ?? []).some((s: any) => subjectMatches(s, user, namespace))) continue;
      const role = b.roleRef?.kind === 'Role' ? view.roles(namespace).find((r) => r.metadata.name === b.roleRef.name) : clusterRole(b.roleRef?.name);
      rules.push(...(role?.rules ?? []));
    }
  }
  return rules;
}

export const isSuperuser = (user: UserInfo): boolean => user.groups.includes('system:masters');

export function authorize(view: RbacView, user: UserInfo, a: Attributes): boolean {
  if (isSuperuser(user)) return true;
  return rulesFor(view, user, a.namespace).some((r) => ruleAllows(r, a));
}

/** Each single (verb, group, resource, name) a rule grants; covered one by one, as upstream's escalation check does. */
function breakdown(rule: PolicyRule): PolicyRule[] {
  const out: PolicyRule[] = [];
  for (const verb of rule.verbs ?? []) {
    for (const url of rule.nonResourceURLs ?? []) out.push({ verbs: [verb], nonResourceURLs: [url] });
    for (const group of rule.apiGroups ?? []) {
      for (const resource of rule.resources ?? []) {
        const names = rule.resourceNames?.length ? rule.resourceNames : [undefined];
        for (const name of names) out.push({ apiGroups: [group], resources: [resource], ...(name !== undefined && { resourceNames: [name] }), verbs: [verb] });
      }
    }
  }
  return out;
}

function covered(owner: PolicyRule, one: PolicyRule): boolean {
  if (!has(owner.verbs, one.verbs![0]!)) return false;
  if (one.nonResourceURLs) return urlMatches(owner.nonResourceURLs, one.nonResourceURLs[0]!);
  if (!has(owner.apiGroups, one.apiGroups![0]!)) return false;
  const resource = one.resources![0]!;
  const resources = owner.resources ?? [];
  if (!resources.includes('*') && !resources.includes(resource) && !(resource.includes('/') && resources.includes(`*/${resource.split('/')[1]}`))) return false;
  if (!owner.resourceNames?.length) return true;
  return one.resourceNames !== undefined && owner.resourceNames.includes(one.resourceNames[0]!);
}

/** The parts of `wanted` that `owned` does not cover (empty: no escalation). */
export function uncovered(owned: PolicyRule[], wanted: PolicyRule[]): PolicyRule[] {
  return wanted.flatMap(breakdown).filter((one) => !owned.some((o) => covered(o, one)));
}

/** A rule as upstream's rbac.CompactString prints it in the escalation message. */
export function formatRule(r: PolicyRule): string {
  const list = (xs: string[]) => `[${xs.map((x) => JSON.stringify(x)).join(' ')}]`;
  const parts: string[] = [];
  if (r.apiGroups) parts.push(`APIGroups:${list(r.apiGroups)}`);
  if (r.resources) parts.push(`Resources:${list(r.resources)}`);
  if (r.resourceNames) parts.push(`ResourceNames:${list(r.resourceNames)}`);
  if (r.nonResourceURLs) parts.push(`NonResourceURLs:${list(r.nonResourceURLs)}`);
  parts.push(`Verbs:${list(r.verbs ?? [])}`);
  return `{${parts.join(', ')}}`;
}

const SERVER_FIELDS = ['resourceVersion', 'managedFields', 'generation', 'uid', 'creationTimestamp', 'deletionTimestamp', 'deletionGracePeriodSeconds', 'selfLink'];

/**
 * True when `next` differs from `old` only in metadata.finalizers and
 * metadata.ownerReferences (upstream IsOnlyMutatingGCFields): such writes skip
 * the escalation and bind checks.
 */
export function onlyGcFieldsChanged(old: KubeObject, next: KubeObject): boolean {
  const strip = (o: KubeObject) => {
    const copy = structuredClone(o);
    copy.metadata = { ...copy.metadata };
    for (const f of [...SERVER_FIELDS, 'finalizers', 'ownerReferences']) delete copy.metadata[f];
    for (const f of ['labels', 'annotations']) if (copy.metadata[f] && Object.keys(copy.metadata[f]).length === 0) delete copy.metadata[f];
    delete copy.apiVersion;
    delete copy.kind;
    return copy;
  };
  return isDeepStrictEqual(strip(old), strip(next));
}

// ---- the bootstrap policy (plugin/pkg/auth/authorizer/rbac/bootstrappolicy) ------

const DISCOVERY_URLS = ['/api', '/api/*', '/apis', '/apis/*', '/healthz', '/livez', '/openapi', '/openapi/*', '/readyz', '/version', '/version/'];
const RBAC_GROUP = 'rbac.authorization.k8s.io';
const READ = ['get', 'list', 'watch'];
const WRITE = ['create', 'delete', 'deletecollection', 'patch', 'update'];
const AGGREGATE = 'rbac.authorization.k8s.io/aggregate-to-';

function clusterRole(name: string, rules: PolicyRule[], labels: Record<string, string> = {}): KubeObject {
  return { apiVersion: `${RBAC_GROUP}/v1`, kind: 'ClusterRole', metadata: { name, labels: { 'kubernetes.io/bootstrapping': 'rbac-defaults', ...labels }, annotations: { 'rbac.authorization.kubernetes.io/autoupdate': 'true' } }, rules };
}

function binding(name: string, role: string, subjects: Record<string, string>[]): KubeObject {
  return {
    apiVersion: `${RBAC_GROUP}/v1`,
    kind: 'ClusterRoleBinding',
    metadata: { name, labels: { 'kubernetes.io/bootstrapping': 'rbac-defaults' }, annotations: { 'rbac.authorization.kubernetes.io/autoupdate': 'true' } },
    roleRef: { apiGroup: RBAC_GROUP, kind: 'ClusterRole', name: role },
    subjects: subjects.map((s) => ({ apiGroup: RBAC_GROUP, ...s })),
  };
}

const WORKLOADS: PolicyRule[] = [
  { apiGroups: [''], resources: ['pods', 'pods/attach', 'pods/exec', 'pods/portforward', 'pods/proxy', 'configmaps', 'events', 'persistentvolumeclaims', 'replicationcontrollers', 'replicationcontrollers/scale', 'secrets', 'serviceaccounts', 'services', 'services/proxy', 'endpoints'] },
  { apiGroups: ['apps'], resources: ['daemonsets', 'deployments', 'deployments/rollback', 'deployments/scale', 'replicasets', 'replicasets/scale', 'statefulsets', 'statefulsets/scale'] },
  { apiGroups: ['batch'], resources: ['cronjobs', 'jobs'] },
  { apiGroups: ['policy'], resources: ['poddisruptionbudgets'] },
  { apiGroups: ['coordination.k8s.io'], resources: ['leases'] },
];

/** The ClusterRoles and ClusterRoleBindings a fresh cluster starts with (the ones tests and tools rely on). */
export function bootstrapPolicy(): KubeObject[] {
  return [
    clusterRole('cluster-admin', [{ apiGroups: ['*'], resources: ['*'], verbs: ['*'] }, { nonResourceURLs: ['*'], verbs: ['*'] }]),
    clusterRole('admin', [...WORKLOADS.map((r) => ({ ...r, verbs: [...READ, ...WRITE] })), { apiGroups: [RBAC_GROUP], resources: ['roles', 'rolebindings'], verbs: [...READ, ...WRITE] }, { apiGroups: [''], resources: ['serviceaccounts/token'], verbs: ['create'] }, { apiGroups: ['authorization.k8s.io'], resources: ['localsubjectaccessreviews'], verbs: ['create'] }]),
    clusterRole('edit', [...WORKLOADS.map((r) => ({ ...r, verbs: [...READ, ...WRITE] })), { apiGroups: [''], resources: ['pods/eviction', 'serviceaccounts/token'], verbs: ['create'] }], { [`${AGGREGATE}admin`]: 'true' }),
    clusterRole('view', [...WORKLOADS.map((r) => ({ ...r, resources: r.resources!.filter((x) => x !== 'secrets' && !/\/(attach|exec|portforward|proxy)$/.test(x)), verbs: READ })), { apiGroups: [''], resources: ['namespaces', 'pods/log', 'pods/status'], verbs: READ }], { [`${AGGREGATE}edit`]: 'true' }),
    clusterRole('system:discovery', [{ nonResourceURLs: DISCOVERY_URLS, verbs: ['get'] }]),
    clusterRole('system:public-info-viewer', [{ nonResourceURLs: ['/healthz', '/livez', '/readyz', '/version', '/version/'], verbs: ['get'] }]),
    clusterRole('system:basic-user', [
      { apiGroups: ['authorization.k8s.io'], resources: ['selfsubjectaccessreviews', 'selfsubjectrulesreviews'], verbs: ['create'] },
      { apiGroups: ['authentication.k8s.io'], resources: ['selfsubjectreviews'], verbs: ['create'] },
    ]),
    clusterRole('system:auth-delegator', [{ apiGroups: ['authentication.k8s.io'], resources: ['tokenreviews'], verbs: ['create'] }, { apiGroups: ['authorization.k8s.io'], resources: ['subjectaccessreviews'], verbs: ['create'] }]),
    binding('cluster-admin', 'cluster-admin', [{ kind: 'Group', name: 'system:masters' }]),
    binding('system:discovery', 'system:discovery', [{ kind: 'Group', name: 'system:authenticated' }]),
    binding('system:basic-user', 'system:basic-user', [{ kind: 'Group', name: 'system:authenticated' }]),
    binding('system:public-info-viewer', 'system:public-info-viewer', [{ kind: 'Group', name: 'system:authenticated' }, { kind: 'Group', name: 'system:unauthenticated' }]),
  ];
}
