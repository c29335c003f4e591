// What the RBAC in a set of manifests lets a ServiceAccount do, as the API
// server's RBAC authorizer evaluates it: the bindings with a subject that is
// the account (kind ServiceAccount, its user name, or one of its groups), the
// roles they bind, and their rules (a rule without resourceNames covers every
// name; one for nonResourceURLs grants no resource). An aggregated ClusterRole
// grants what the aggregation controller fills into its rules: those of the
// ClusterRoles its selectors match. A render has them empty.
//
// The objects are placed in their namespaces first (namespace.ts): a Role or
// RoleBinding that names none grants nothing here.

import type { Manifest } from './finding.ts';
import { type LabelSelector, selects } from './label-selector.ts';

interface Rule {
  apiGroups?: string[];
  resources?: string[];
  verbs?: string[];
  resourceNames?: string[];
}

interface Subject {
  kind: string;
  name: string;
  namespace?: string;
}

export interface Request {
  readonly verb: string;
  readonly group: string;
  readonly resource: string;
  /** undefined: no particular name (create, list). */
  readonly name?: string;
  /** undefined: cluster-scoped. */
  readonly namespace?: string;
}

const covers = (list: string[] | undefined, value: string): boolean => (list ?? []).some((x) => x === '*' || x === value);

function matches(rule: Rule, r: Request): boolean {
  if (!covers(rule.apiGroups, r.group) || !covers(rule.resources, r.resource) || !covers(rule.verbs, r.verb)) return false;
  if (rule.resourceNames === undefined || rule.resourceNames.length === 0) return true;
  return r.name !== undefined && rule.resourceNames.includes(r.name);
}

/** Whether SUBJECT of a binding in BINDING_NAMESPACE (undefined: a ClusterRoleBinding) is ServiceAccount NAMESPACE/NAME. */
function isAccount(s: Subject, bindingNamespace: string | undefined, namespace: string, name: string): boolean {
  switch (s.kind) {
    // A ServiceAccount subject that names no namespace is in the binding's (upstream appliesToUser).
    case 'ServiceAccount':
      return s.name === name && (s.namespace || bindingNamespace) === namespace;
    case 'User':
      return s.name === `system:serviceaccount:${namespace}:${name}`;
    // The groups the API server puts every ServiceAccount token in.
    case 'Group':
      return s.name === 'system:serviceaccounts' || s.name === `system:serviceaccounts:${namespace}` || s.name === 'system:authenticated';
    default:
      return false;
  }
}

/** ROLE's rules, an aggregated ClusterRole's from the CLUSTER_ROLES it selects (each reached once: cycles end). */
function rulesOf(role: Manifest, clusterRoles: readonly Manifest[], reached = new Set<string>([role.metadata.name])): Rule[] {
  const selectors = role.aggregationRule?.clusterRoleSelectors as LabelSelector[] | undefined;
  if (role.kind !== 'ClusterRole' || !Array.isArray(selectors)) return (role.rules ?? []) as Rule[];
  return clusterRoles
    .filter((c) => !reached.has(c.metadata.name) && selectors.some((s) => selects(s, (c.metadata.labels ?? {}) as Record<string, string>)))
    .flatMap((c) => {
      reached.add(c.metadata.name);
      return rulesOf(c, clusterRoles, reached);
    });
}

export interface Authorizer {
  allows(r: Request): boolean;
}

/** The rules bound to ServiceAccount NAMESPACE/NAME by the (Cluster)RoleBindings in OBJECTS. */
export function authorizerFor(objects: readonly Manifest[], namespace: string, name: string): Authorizer {
  const clusterRoles = objects.filter((o) => o.kind === 'ClusterRole');
  const roles = new Map(
    objects
      .filter((o) => o.kind === 'ClusterRole' || o.kind === 'Role')
      .map((o) => [`${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`, o]),
  );
  const bound: { rules: Rule[]; clusterWide: boolean; namespace?: string }[] = [];
  for (const b of objects.filter((o) => o.kind === 'ClusterRoleBinding' || o.kind === 'RoleBinding')) {
    const clusterWide = b.kind === 'ClusterRoleBinding';
    const bindingNamespace = clusterWide ? undefined : b.metadata.namespace;
    if (!((b.subjects ?? []) as Subject[]).some((s) => isAccount(s, bindingNamespace, namespace, name))) continue;
    const ref = b.roleRef as { kind: string; name: string } | undefined;
    const role = ref && roles.get(`${ref.kind}/${ref.kind === 'Role' ? (bindingNamespace ?? '') : ''}/${ref.name}`);
    if (role) bound.push({ rules: rulesOf(role, clusterRoles), clusterWide, namespace: bindingNamespace });
  }
  return {
    allows: (r) =>
      bound.some(
        (b) => (b.clusterWide || (r.namespace !== undefined && b.namespace === r.namespace)) && b.rules.some((rule) => matches(rule, r)),
      ),
  };
}
