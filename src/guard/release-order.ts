// The order of a release. Removing this pod's finalizer from an object being
// deleted deletes it, and with a role, binding or ServiceAccount go the
// permissions it gave drainguard itself: a removal that comes after the one
// that revoked its own permission is refused, and that finalizer stays.
//
// So objects are released in waves. An object whose existence lets drainguard
// patch another (a binding of drainguard's ServiceAccount, the role it binds,
// the ServiceAccount itself) goes no earlier than that other one; objects
// that keep each other (a role and its binding) go in the same wave, all at
// once, so that every request of the wave is authorised before any of them
// takes effect (the authorizer drops a deleted role 0.1–0.2 s later).

import type { GuardTarget } from '../config/guard-list.ts';
import type { KubeObject } from '../kube/objects.ts';
import { refOf } from './names.ts';

export interface Held {
  readonly target: GuardTarget;
  /** The last copy read; its rules, roleRef and subjects say what it grants. */
  readonly object?: KubeObject;
}

/** drainguard's own identity: the pod's ServiceAccount, when known. */
export interface Identity {
  readonly namespace: string;
  readonly serviceAccount?: string;
}

interface Rule {
  readonly verbs?: readonly string[];
  readonly apiGroups?: readonly string[];
  readonly resources?: readonly string[];
  readonly resourceNames?: readonly string[];
}

interface Subject {
  readonly kind?: string;
  readonly name?: string;
  readonly namespace?: string;
}

const covers = (list: readonly string[] | undefined, value: string) => (list ?? []).includes('*') || (list ?? []).includes(value);

function rulesAllowPatch(rules: readonly Rule[], target: GuardTarget): boolean {
  const ref = refOf(target);
  return rules.some(
    (r) =>
      covers(r.verbs, 'patch') &&
      covers(r.apiGroups, ref.group) &&
      covers(r.resources, ref.resource) &&
      ((r.resourceNames ?? []).length === 0 || r.resourceNames!.includes(target.name)),
  );
}

function bindsMe(subjects: readonly Subject[], bindingNamespace: string | undefined, me: Identity): boolean {
  const groups = ['system:authenticated', 'system:serviceaccounts', `system:serviceaccounts:${me.namespace}`];
  return subjects.some((s) => {
    if (s.kind === 'Group') return groups.includes(s.name ?? '');
    // Without the ServiceAccount's name, any binding of one in this namespace may be ours.
    const sameAccount = (ns: string | undefined, name: string | undefined) => ns === me.namespace && (me.serviceAccount === undefined || name === me.serviceAccount);
    if (s.kind === 'ServiceAccount') return sameAccount(s.namespace ?? bindingNamespace, s.name);
    if (s.kind === 'User') {
      const m = /^system:serviceaccount:([^:]+):([^:]+)$/.exec(s.name ?? '');
      return m !== null && sameAccount(m[1], m[2]);
    }
    return false;
  });
}

/** For each object, the indexes of the objects whose removal drainguard may patch only while it exists. */
function supports(held: readonly Held[], me: Identity): Set<number>[] {
  const out = held.map(() => new Set<number>());
  const find = (kind: string, name: string, namespace?: string) =>
    held.findIndex((h) => h.target.kind === kind && h.target.name === name && (namespace === undefined || h.target.namespace === namespace));
  held.forEach((h, i) => {
    const spec = h.object as (KubeObject & { subjects?: Subject[]; roleRef?: { kind?: string; name?: string } }) | undefined;
    if (h.target.kind === 'serviceaccount') {
      // Its tokens are what drainguard authenticates with.
      if (h.target.namespace === me.namespace && (me.serviceAccount === undefined || h.target.name === me.serviceAccount)) held.forEach((_, j) => out[i]!.add(j));
      return;
    }
    if (h.target.kind !== 'clusterrolebinding' && h.target.kind !== 'rolebinding') return;
    if (!spec || !bindsMe(spec.subjects ?? [], h.target.namespace, me)) return;
    const roleKind = spec.roleRef?.kind === 'ClusterRole' ? 'clusterrole' : 'role';
    const role = find(roleKind, spec.roleRef?.name ?? '', roleKind === 'role' ? h.target.namespace : undefined);
    const rules = (held[role]?.object as { rules?: Rule[] } | undefined)?.rules;
    if (role === -1 || !rules) return;
    held.forEach((x, j) => {
      // A RoleBinding grants only in its own namespace, whatever role it binds.
      const inScope = h.target.kind === 'clusterrolebinding' || x.target.namespace === h.target.namespace;
      if (!inScope || !rulesAllowPatch(rules, x.target)) return;
      out[i]!.add(j);
      out[role]!.add(j);
    });
  });
  return out;
}

/** The objects in waves: each wave is released at once, after the waves before it. */
export function releaseWaves<T extends Held>(held: readonly T[], me: Identity): T[][] {
  const edges = supports(held, me);
  // reach[i]: every object whose removal needs i, directly or through others.
  const reach = edges.map((s) => new Set(s));
  for (let changed = true; changed; ) {
    changed = false;
    for (const r of reach) {
      for (const j of [...r]) {
        for (const k of reach[j]!) {
          if (!r.has(k)) {
            r.add(k);
            changed = true;
          }
        }
      }
    }
  }
  const waves: T[][] = [];
  const released = new Set<number>();
  while (released.size < held.length) {
    // Ready: everything it is needed for is released already, or needs it back (the same wave).
    const ready = held.flatMap((_, i) => (!released.has(i) && [...reach[i]!].every((j) => j === i || released.has(j) || reach[j]!.has(i)) ? [i] : []));
    for (const i of ready) released.add(i);
    waves.push(ready.map((i) => held[i]!));
  }
  return waves;
}
