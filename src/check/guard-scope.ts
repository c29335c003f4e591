// What the guard must hold for one operator pod: every binding of its
// ServiceAccount among the manifests, in any namespace and whatever role it
// binds; each role those bindings bind that the manifests define (a built-in
// role, `cluster-admin` or `view`, is not theirs to delete and is never
// guarded); and the ClusterRoles aggregated into a guarded one, whose rules
// the aggregation controller strips from it once they are deleted. An
// uninstall deletes whatever of these the guard leaves out, and the operator
// loses that permission while it cleans up. Objects the uninstall keeps
// (helm.sh/resource-policy: keep, drainguard's own RBAC) need no guard.

import { type GuardTarget, guardTargetKey } from '../config/guard-list.ts';
import type { GuardKind } from '../config/guard-kinds.ts';
import type { Found, Manifest } from './finding.ts';
import { type LabelSelector, selects } from './label-selector.ts';

export type GuardScopeCode = 'binding-not-guarded' | 'role-not-guarded' | 'aggregation-source-not-guarded';

export interface GuardScopeContext {
  readonly namespace: string;
  readonly serviceAccount: string;
  /** The container that holds the guard, for the fix. */
  readonly where: string;
  /** Whether the uninstall leaves this object (helm.sh/resource-policy: keep). */
  readonly kept: (o: Manifest) => boolean;
}

/** The entry of OBJECT in DRAINGUARD_GUARD's forms. */
export function guardEntry(o: Manifest): GuardTarget {
  const kind = o.kind.toLowerCase() as GuardKind;
  return o.metadata.namespace && (o.kind === 'Role' || o.kind === 'RoleBinding' || o.kind === 'ServiceAccount')
    ? { kind, namespace: o.metadata.namespace, name: o.metadata.name }
    : { kind, name: o.metadata.name };
}

/** The chart's value that names an entry of KIND (roles and role bindings as NAMESPACE/NAME). */
const CHART_VALUE: Record<string, string> = {
  clusterrole: 'clusterRoles',
  clusterrolebinding: 'clusterRoleBindings',
  role: 'roles',
  rolebinding: 'roleBindings',
  serviceaccount: 'serviceAccount',
};
const howToAdd = (t: GuardTarget): string =>
  `the Helm library chart: drainguard.guard.${CHART_VALUE[t.kind]}: [${t.namespace ? `${t.namespace}/` : ''}${t.name}]; ` +
  `the kustomize components: ${guardTargetKey(t)} in data.guard and ${t.name} in data.guardNames of the drainguard ConfigMap, ` +
  'with the guard-more component';

const TEXT = {
  'binding-not-guarded': {
    message: (binding: string, account: string, role: string) =>
      `${binding} binds ServiceAccount ${account} to ${role}, and DRAINGUARD_GUARD does not hold it: ` +
      'an uninstall deletes it while the operator still cleans up, and with it that permission',
  },
  'role-not-guarded': {
    message: (role: string, binding: string) =>
      `${role}, which ${binding} binds to the operator's ServiceAccount, ` +
      'is in these manifests and DRAINGUARD_GUARD does not hold it: ' +
      'an uninstall deletes it while the operator still cleans up, and the binding then grants nothing',
  },
  'aggregation-source-not-guarded': {
    message: (source: string, aggregated: string) =>
      `${source} is aggregated into the guarded ${aggregated} (its labels match the aggregationRule), ` +
      'and DRAINGUARD_GUARD does not hold it: ' +
      `once an uninstall deletes it, the aggregation controller strips its rules from ${aggregated} while that is still held`,
  },
  fix: (entry: string, where: string, how: string) =>
    `add ${entry} to DRAINGUARD_GUARD in ${where}, with get and patch on it in drainguard's RBAC (${how}; both renders add the RBAC)`,
};

const isBinding = (o: Manifest): boolean => o.kind === 'ClusterRoleBinding' || o.kind === 'RoleBinding';

/** Whether binding B names ServiceAccount NAMESPACE/NAME as a subject of its own (not through a group). */
function bindsAccount(b: Manifest, namespace: string, name: string): boolean {
  const own = b.kind === 'RoleBinding' ? b.metadata.namespace : undefined;
  return ((b.subjects ?? []) as { kind: string; name: string; namespace?: string }[]).some(
    (s) =>
      (s.kind === 'ServiceAccount' && s.name === name && (s.namespace || own) === namespace) ||
      (s.kind === 'User' && s.name === `system:serviceaccount:${namespace}:${name}`),
  );
}

/** The API server's own roles (cluster-admin, view, system:…), as read from a cluster: labelled so by its RBAC bootstrap. */
const isBuiltIn = (o: Manifest): boolean =>
  (o.metadata.labels as Record<string, string> | undefined)?.['kubernetes.io/bootstrapping'] === 'rbac-defaults';

/** The role BINDING binds, when the manifests define it and it is not built in. */
function boundRole(binding: Manifest, objects: readonly Manifest[]): Manifest | undefined {
  const ref = binding.roleRef as { kind?: string; name?: string } | undefined;
  if (!ref) return undefined;
  const role = objects.find(
    (o) =>
      o.kind === ref.kind &&
      o.metadata.name === ref.name &&
      (o.kind === 'ClusterRole' || o.metadata.namespace === binding.metadata.namespace),
  );
  return role && !isBuiltIn(role) ? role : undefined;
}

/** The ClusterRoles among OBJECTS that AGGREGATED's selectors match, and theirs in turn (each once). */
function aggregationSources(
  aggregated: Manifest,
  objects: readonly Manifest[],
  reached = new Set<string>([aggregated.metadata.name]),
): Manifest[] {
  const selectors = aggregated.aggregationRule?.clusterRoleSelectors as LabelSelector[] | undefined;
  if (aggregated.kind !== 'ClusterRole' || !Array.isArray(selectors)) return [];
  const direct = objects.filter(
    (c) =>
      c.kind === 'ClusterRole' &&
      !reached.has(c.metadata.name) &&
      selectors.some((s) => selects(s, (c.metadata.labels ?? {}) as Record<string, string>)),
  );
  for (const c of direct) reached.add(c.metadata.name);
  return [...direct, ...direct.flatMap((c) => aggregationSources(c, objects, reached))];
}

const objectText = (o: Manifest): string => `${o.kind} ${o.metadata.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata.name}`;
const roleRefText = (b: Manifest): string => `${b.roleRef?.kind ?? 'a role'} ${b.roleRef?.name ?? ''}`.trim();

/** What OBJECTS show the guard must hold for the pod of CONTEXT, and GUARD lacks. */
export function checkGuardScope(guard: readonly GuardTarget[], objects: readonly Manifest[], c: GuardScopeContext): Found[] {
  const held = new Set(guard.map(guardTargetKey));
  const out: Found[] = [];
  const reported = new Set<string>();
  const account = `${c.namespace}/${c.serviceAccount}`;
  const report = (o: Manifest, code: GuardScopeCode, message: string): void => {
    const entry = guardEntry(o);
    const key = guardTargetKey(entry);
    if (held.has(key) || reported.has(key) || c.kept(o)) return;
    reported.add(key);
    out.push({ code, severity: 'error', message, fix: TEXT.fix(guardTargetKey(entry), c.where, howToAdd(entry)) });
  };
  const bindings = objects.filter((o) => isBinding(o) && bindsAccount(o, c.namespace, c.serviceAccount));
  const roles: Manifest[] = [];
  for (const b of bindings) {
    report(b, 'binding-not-guarded', TEXT['binding-not-guarded'].message(objectText(b), account, roleRefText(b)));
    const role = boundRole(b, objects);
    if (!role) continue; // built in, or installed apart: not the release's to delete
    roles.push(role);
    report(role, 'role-not-guarded', TEXT['role-not-guarded'].message(objectText(role), objectText(b)));
  }
  // The sources of every aggregated role the guard holds, or should hold.
  const aggregated = [
    ...roles,
    ...objects.filter((o) => o.kind === 'ClusterRole' && !isBuiltIn(o) && held.has(guardTargetKey(guardEntry(o)))),
  ];
  for (const role of aggregated) {
    for (const source of aggregationSources(role, objects)) {
      report(
        source,
        'aggregation-source-not-guarded',
        TEXT['aggregation-source-not-guarded'].message(objectText(source), objectText(role)),
      );
    }
  }
  return out;
}

/**
 * The objects among OBJECTS the guard of ServiceAccount NAMESPACE/NAME must hold, as checkGuardScope
 * reads them: its bindings, the roles they bind that the manifests define, and those roles' aggregation
 * sources. For adopt, which writes the guard list that check then finds complete.
 */
export function guardScope(objects: readonly Manifest[], namespace: string, serviceAccount: string): Manifest[] {
  const bindings = objects.filter((o) => isBinding(o) && bindsAccount(o, namespace, serviceAccount));
  const roles = bindings.flatMap((b) => boundRole(b, objects) ?? []);
  const sources = roles.flatMap((r) => aggregationSources(r, objects));
  const seen = new Set<string>();
  return [...bindings, ...roles, ...sources].filter((o) => {
    const key = guardTargetKey(guardEntry(o));
    return !seen.has(key) && seen.add(key) !== undefined;
  });
}
