// RBAC as the API server evaluates it: bindings and roles read from the store,
// terminating ones included (they grant until they are really gone), with
// resourceNames honoured, plus the escalation check on writes to roles and bindings.

import { isDeepStrictEqual } from 'node:util';
import type { KubeObject } from './store.ts';

export interface UserInfo {
  readonly name: string;
  readonly groups: readonly string[];
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

/** What the authorizer sees: every role and binding, terminating or not. */
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

function ruleAllows(rule: PolicyRule, a: Attributes): boolean {
  if (!has(rule.verbs, a.verb)) return false;
  if (a.resource === undefined) {
    return (rule.nonResourceURLs ?? []).some((u) => u === '*' || u === a.path || (u.endsWith('*') && a.path.startsWith(u.slice(0, -1))));
  }
  if (!has(rule.apiGroups, a.apiGroup ?? '')) return false;
  const combined = a.subresource ? `${a.resource}/${a.subresource}` : a.resource;
  const resources = rule.resources ?? [];
  const resourceOk =
    resources.includes('*') ||
    resources.includes(combined) ||
    (a.subresource !== undefined && (resources.includes(`*/${a.subresource}`) || resources.includes(`${a.resource}/*`)));
  if (!resourceOk) return false;
  const names = rule.resourceNames ?? [];
  return names.length === 0 || (a.name !== undefined && names.includes(a.name));
}

/** The rules that apply to `user` in `namespace` (undefined: cluster-wide rules only). */
export function rulesFor(view: RbacView, user: UserInfo, namespace?: string): PolicyRule[] {
  const rules: PolicyRule[] = [];
  const clusterRole = (name: string) => view.clusterRoles().find((r) => r.metadata.name === name);
  for (const b of view.clusterRoleBindings()) {
    if (b.roleRef?.kind !== 'ClusterRole' || !(b.subjects ?? []).some((s: any) => subjectMatches(s, user, undefined))) continue;
    rules.push(...(clusterRole(b.roleRef.name)?.rules ?? []));
  }
  if (namespace !== undefined) {
    for (const b of view.roleBindings(namespace)) {
      if (!(b.subjects ?? []).some((s: any) => subjectMatches(s, user, namespace))) continue;
      const role = b.roleRef?.kind === 'Role' ? view.roles(namespace).find((r) => r.metadata.name === b.roleRef.name) : clusterRole(b.roleRef?.name);
      rules.push(...(role?.rules ?? []));
    }
  }
  return rules;
}

export function isSuperuser(user: UserInfo): boolean {
  return user.groups.includes('system:masters');
}

export function authorize(view: RbacView, user: UserInfo, a: Attributes): boolean {
  if (isSuperuser(user)) return true;
  return rulesFor(view, user, a.namespace).some((r) => ruleAllows(r, a));
}

/** Each single (verb, group, resource, name) a rule grants; `covers` checks them one by one, as upstream does. */
function breakdown(rule: PolicyRule): PolicyRule[] {
  const out: PolicyRule[] = [];
  for (const verb of rule.verbs ?? []) {
    for (const url of rule.nonResourceURLs ?? []) out.push({ verbs: [verb], nonResourceURLs: [url] });
    for (const group of rule.apiGroups ?? []) {
      for (const resource of rule.resources ?? []) {
        const names = rule.resourceNames?.length ? rule.resourceNames : [undefined];
        for (const name of names) out.push({ verbs: [verb], apiGroups: [group], resources: [resource], ...(name !== undefined && { resourceNames: [name] }) });
      }
    }
  }
  return out;
}

function covered(owner: PolicyRule, one: PolicyRule): boolean {
  const covers = (list: string[] | undefined, value: string) => (list ?? []).includes('*') || (list ?? []).includes(value);
  if (!covers(owner.verbs, one.verbs![0]!)) return false;
  if (one.nonResourceURLs) {
    const url = one.nonResourceURLs[0]!;
    return (owner.nonResourceURLs ?? []).some((u) => u === '*' || u === url || (u.endsWith('*') && url.startsWith(u.slice(0, -1))));
  }
  if (!covers(owner.apiGroups, one.apiGroups![0]!) || !covers(owner.resources, one.resources![0]!)) return false;
  if (!owner.resourceNames?.length) return true;
  return one.resourceNames !== undefined && owner.resourceNames.includes(one.resourceNames[0]!);
}

/** The parts of `wanted` that `owned` does not cover (empty: no escalation). */
export function uncovered(owned: PolicyRule[], wanted: PolicyRule[]): PolicyRule[] {
  return wanted.flatMap(breakdown).filter((one) => !owned.some((o) => covered(o, one)));
}

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

const GC_FIELDS = ['finalizers', 'ownerReferences'];
const SERVER_FIELDS = ['resourceVersion', 'managedFields', 'generation', 'uid', 'creationTimestamp', 'deletionTimestamp', 'deletionGracePeriodSeconds', 'selfLink'];

/**
 * True when `next` differs from `old` only in metadata.finalizers and
 * metadata.ownerReferences (upstream IsOnlyMutatingGCFields): such writes skip
 * the escalation and bind checks.
 */
export function onlyGcFieldsChanged(old: KubeObject, next: KubeObject): boolean {
  const strip = (o: KubeObject, dropGc: boolean) => {
    const copy = structuredClone(o);
    for (const f of SERVER_FIELDS) delete copy.metadata[f];
    if (dropGc) for (const f of GC_FIELDS) delete copy.metadata[f];
    if (copy.metadata.labels && Object.keys(copy.metadata.labels).length === 0) delete copy.metadata.labels;
    if (copy.metadata.annotations && Object.keys(copy.metadata.annotations).length === 0) delete copy.metadata.annotations;
    return copy;
  };
  return isDeepStrictEqual(strip(old, true), strip(next, true));
}

export { isDeepStrictEqual };
