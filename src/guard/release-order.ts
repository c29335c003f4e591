// The order of a release. Removing this pod's finalizer from an object that is
// being deleted deletes it, and with a role or binding goes the permission it
// gave drainguard (the authorizer drops it a moment later), with drainguard's
// own ServiceAccount its credential. A removal sent after the one that took its
// permission away is refused, and that finalizer stays. So every removal must be
// authorised by objects that no earlier removal can take away:
//
// - an object that is not being deleted stays when its finalizer goes: its
//   removal takes nothing away, and a binding and role that both stay (drainguard's
//   own RBAC, kept through the uninstall) authorise a removal at any time;
// - a removal that only objects being deleted authorise goes no later than them;
// - drainguard's ServiceAccount, being deleted, is every request's credential: it
//   goes last, in a wave of its own, once everything else is answered (release-held.ts).
//
// Objects being deleted that authorise each other's removal, with nothing that
// stays beside them, have no such order: they go in one wave, all at once, and
// the plan names them (racing).

import type { KubeObject } from '../kube/objects.ts';
import { type HeldTarget, refOf } from './names.ts';

export interface Held {
  readonly target: HeldTarget;
  /** The last copy read: its rules, roleRef and subjects say what it grants. undefined: gone. */
  readonly object?: KubeObject;
  /** Removing this pod's finalizer may delete it: it is being deleted (or that could not be read). */
  readonly deleting: boolean;
}

/** drainguard's own identity: the pod's ServiceAccount, when known. */
export interface Identity {
  readonly namespace: string;
  readonly serviceAccount?: string;
}

export interface ReleasePlan<T extends Held> {
  /** Each wave is released at once, after the waves before it. */
  readonly waves: T[][];
  /** The index of the wave that ends drainguard's own access (its ServiceAccount's removal), if one does. */
  readonly last?: number;
  /** Objects released together because no order authorises them one by one. */
  readonly racing: T[][];
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

function rulesAllowPatch(rules: readonly Rule[], target: HeldTarget): boolean {
  const ref = refOf(target);
  return rules.some(
    (r) =>
      covers(r.verbs, 'patch') &&
      covers(r.apiGroups, ref.group) &&
      covers(r.resources, ref.resource) &&
      ((r.resourceNames ?? []).length === 0 || r.resourceNames!.includes(target.name)),
  );
}

// Without the ServiceAccount's name, any one in drainguard's namespace may be its own.
const isMe = (namespace: string | undefined, name: string | undefined, me: Identity) =>
  namespace === me.namespace && (me.serviceAccount === undefined || name === me.serviceAccount);

function bindsMe(subjects: readonly Subject[], bindingNamespace: string | undefined, me: Identity): boolean {
  const groups = ['system:authenticated', 'system:serviceaccounts', `system:serviceaccounts:${me.namespace}`];
  return subjects.some((s) => {
    if (s.kind === 'Group') return groups.includes(s.name ?? '');
    if (s.kind === 'ServiceAccount') return isMe(s.namespace ?? bindingNamespace, s.name, me);
    if (s.kind === 'User') {
      const m = /^system:serviceaccount:([^:]+):([^:]+)$/.exec(s.name ?? '');
      return m !== null && isMe(m[1], m[2], me);
    }
    return false;
  });
}

/** A binding of drainguard's and the role it binds, both held: the removals they authorise together. */
interface Grant {
  readonly members: readonly [number, number];
  readonly allows: ReadonlySet<number>;
}

function grants(held: readonly Held[], me: Identity): Grant[] {
  const find = (kind: string, name: string, namespace?: string) =>
    held.findIndex(
      (h) => h.target.kind === kind && h.target.name === name && (namespace === undefined || h.target.namespace === namespace),
    );
  return held.flatMap((h, i) => {
    if (h.target.kind !== 'clusterrolebinding' && h.target.kind !== 'rolebinding') return [];
    const spec = h.object as (KubeObject & { subjects?: Subject[]; roleRef?: { kind?: string; name?: string } }) | undefined;
    if (!spec || !bindsMe(spec.subjects ?? [], h.target.namespace, me)) return [];
    const roleKind = spec.roleRef?.kind === 'ClusterRole' ? 'clusterrole' : 'role';
    const role = find(roleKind, spec.roleRef?.name ?? '', roleKind === 'role' ? h.target.namespace : undefined);
    const rules = (held[role]?.object as { rules?: Rule[] } | undefined)?.rules;
    if (role === -1 || !rules) return [];
    // A RoleBinding grants only in its own namespace, whatever role it binds.
    const allows = new Set(
      held.flatMap((x, j) =>
        (h.target.kind === 'clusterrolebinding' || x.target.namespace === h.target.namespace) && rulesAllowPatch(rules, x.target)
          ? [j]
          : [],
      ),
    );
    return [{ members: [i, role] as const, allows }];
  });
}

/** For each object, the objects whose removal must come no later than its own (it may take their permission away). */
function supports(held: readonly Held[], me: Identity): Set<number>[] {
  const out = held.map(() => new Set<number>());
  const all = grants(held, me);
  held.forEach((_, k) => {
    const mine = all.filter((g) => g.allows.has(k));
    // Authorised by a grant that stays, or by nothing drainguard holds: no removal of its own takes that away.
    if (mine.length === 0 || mine.some((g) => g.members.every((m) => !held[m]!.deleting))) return;
    for (const g of mine) for (const m of g.members) if (held[m]!.deleting) out[m]!.add(k);
  });
  // The credential of every request: the ServiceAccount's tokens stop working once it is gone.
  held.forEach((h, i) => {
    if (h.target.kind === 'serviceaccount' && h.deleting && isMe(h.target.namespace, h.target.name, me))
      held.forEach((_, j) => j !== i && out[i]!.add(j));
  });
  return out;
}

/** The waves of a release, the one that ends drainguard's access, and what no order makes safe. */
export function planRelease<T extends Held>(held: readonly T[], me: Identity): ReleasePlan<T> {
  const edges = supports(held, me);
  // reach[i]: every object whose removal needs i, directly or through others.
  const reach = edges.map((s) => new Set(s));
  for (let changed = true; changed;) {
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
  const mutual = (i: number, j: number) => i === j || (reach[i]!.has(j) && reach[j]!.has(i));
  const waves: number[][] = [];
  const released = new Set<number>();
  while (released.size < held.length) {
    // Ready: everything it is needed for is released already, or needs it back (the same wave).
    const ready = held.flatMap((_, i) => (!released.has(i) && [...reach[i]!].every((j) => released.has(j) || mutual(i, j)) ? [i] : []));
    for (const i of ready) released.add(i);
    waves.push(ready);
  }
  const racing = waves.flatMap((wave) => {
    const groups: number[][] = [];
    for (const i of wave) {
      const group = groups.find((g) => mutual(g[0]!, i));
      if (group) group.push(i);
      else groups.push([i]);
    }
    return groups.filter((g) => g.length > 1);
  });
  const ends = (i: number) =>
    held[i]!.target.kind === 'serviceaccount' && held[i]!.deleting && isMe(held[i]!.target.namespace, held[i]!.target.name, me);
  const last = waves.findIndex((w) => w.some(ends));
  const pick = (is: number[]) => is.map((i) => held[i]!);
  return { waves: waves.map(pick), racing: racing.map(pick), ...(last !== -1 && { last }) };
}
