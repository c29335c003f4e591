// Whether drainguard's admission policy holds the operator's ServiceAccount to
// the finalizers of what the guard and the hold touch: RBAC alone lets that
// account rewrite them (add a subject to a binding of a role it holds, say),
// and drainguard's rights are bound to it.

import { RESOURCES } from '../kube/objects.ts';
import type { Manifest } from './finding.ts';

interface Rule {
  apiGroups?: string[];
  resources?: string[];
  operations?: string[];
  resourceNames?: string[];
}

/**
 * What the policies in OBJECTS leave uncovered of TARGETS for ServiceAccount NAMESPACE/NAME ('KIND/NAME' each);
 * undefined: no policy for it at all.
 */
export function uncoveredByPolicy(
  objects: readonly Manifest[],
  namespace: string,
  name: string,
  targets: readonly { kind: keyof typeof RESOURCES; name: string }[],
): string[] | undefined {
  const bound = new Set(
    objects
      .filter((o) => o.kind === 'ValidatingAdmissionPolicyBinding' && (o.spec?.validationActions ?? []).includes('Deny'))
      .map((o) => o.spec?.policyName as string),
  );
  const user = `system:serviceaccount:${namespace}:${name}`;
  const policies = objects.filter((o) => o.kind === 'ValidatingAdmissionPolicy' && bound.has(o.metadata.name) && forUser(o, user));
  if (policies.length === 0) return undefined;
  const rules: Rule[] = policies.flatMap((p) => p.spec?.matchConstraints?.resourceRules ?? []);
  const covers = (r: Rule, t: { kind: keyof typeof RESOURCES; name: string }) => {
    const { group, resource } = RESOURCES[t.kind];
    const has = (list: string[] | undefined, v: string) => (list ?? []).some((x) => x === '*' || x === v);
    return (
      has(r.apiGroups, group) &&
      has(r.resources, resource) &&
      has(r.operations, 'UPDATE') &&
      (!r.resourceNames?.length || r.resourceNames.includes(t.name))
    );
  };
  return targets.filter((t) => !rules.some((r) => covers(r, t))).map((t) => `${t.kind}/${t.name}`);
}

/** The policy applies to USER: its match conditions name that user (as drainguard's own policy does), or it has none. */
function forUser(policy: Manifest, user: string): boolean {
  const conditions: { expression?: string }[] = policy.spec?.matchConditions ?? [];
  if (conditions.length === 0) return true;
  // drainguard's own spells the name in pieces ('system:serviceaccount:' + 'NS' + ':' + 'SA'): compare without them.
  const plain = (s: string) => s.replace(/'\s*\+\s*'/g, '');
  return conditions.every((c) => plain(c.expression ?? '').includes(user));
}
