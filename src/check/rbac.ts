// What the RBAC in a set of manifests lets a ServiceAccount do: the bindings
// that name it, the roles they bind, and their rules, as the RBAC authorizer
// evaluates them (a rule without resourceNames covers every name).

import type { Manifest } from './finding.ts';

interface Rule {
  apiGroups?: string[];
  resources?: string[];
  verbs?: string[];
  resourceNames?: string[];
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

export interface Authorizer {
  allows(r: Request): boolean;
}

/** The rules bound to ServiceAccount NAMESPACE/NAME by the (Cluster)RoleBindings in OBJECTS. */
export function authorizerFor(objects: readonly Manifest[], namespace: string, name: string): Authorizer {
  const roles = new Map(objects.filter((o) => o.kind === 'ClusterRole' || o.kind === 'Role').map((o) => [`${o.kind}/${o.kind === 'Role' ? (o.metadata.namespace ?? namespace) : ''}/${o.metadata.name}`, o]));
  const bound: { rules: Rule[]; namespace?: string }[] = [];
  for (const b of objects.filter((o) => o.kind === 'ClusterRoleBinding' || o.kind === 'RoleBinding')) {
    const bindingNamespace = b.kind === 'RoleBinding' ? (b.metadata.namespace ?? namespace) : undefined;
    const names = ((b.subjects ?? []) as { kind: string; name: string; namespace?: string }[]).some(
      (s) => s.kind === 'ServiceAccount' && s.name === name && (s.namespace ?? bindingNamespace) === namespace,
    );
    if (!names) continue;
    const ref = b.roleRef as { kind: string; name: string } | undefined;
    const role = ref && roles.get(`${ref.kind}/${ref.kind === 'Role' ? bindingNamespace : ''}/${ref.name}`);
    if (role) bound.push({ rules: (role.rules ?? []) as Rule[], namespace: bindingNamespace });
  }
  return {
    allows: (r) => bound.some((b) => (b.namespace === undefined || b.namespace === r.namespace) && b.rules.some((rule) => matches(rule, r))),
  };
}
