// The kinds of object the guard holds: the one table every other place reads
// (DRAINGUARD_GUARD's parser, its help text and error messages, the guard's
// API paths, `drainguard status` and `check`).

import { RESOURCES } from '../kube/objects.ts';

/** As DRAINGUARD_GUARD names them, in the order help texts list them. */
export const GUARD_KINDS = ['clusterrole', 'clusterrolebinding', 'role', 'rolebinding', 'serviceaccount'] as const;

export type GuardKind = (typeof GUARD_KINDS)[number];

export const isGuardKind = (kind: string): kind is GuardKind => (GUARD_KINDS as readonly string[]).includes(kind);

/** `clusterrole/NAME`, `role/NAMESPACE/NAME`: how one object of the kind is named. */
export const guardForm = (kind: GuardKind | PolicyKind): string => (RESOURCES[kind].namespaced ? `${kind}/NAMESPACE/NAME` : `${kind}/NAME`);

/** Every form, `a, b, … or e`: for help texts and messages. */
export const GUARD_FORMS = `${GUARD_KINDS.slice(0, -1).map(guardForm).join(', ')} or ${guardForm(GUARD_KINDS.at(-1)!)}`;

/** What `release --delete` deletes besides guarded kinds: drainguard's admission policy and its binding (never guarded). */
export const POLICY_KINDS = ['validatingadmissionpolicy', 'validatingadmissionpolicybinding'] as const;

export type PolicyKind = (typeof POLICY_KINDS)[number];

/** `validatingadmissionpolicy/NAME, …`: the forms `release --delete` takes besides the guard's. */
export const POLICY_FORMS = POLICY_KINDS.map(guardForm).join(', ');

export const isPolicyKind = (kind: string): kind is PolicyKind => (POLICY_KINDS as readonly string[]).includes(kind);
