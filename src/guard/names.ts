// The names the guard writes, fixed by the spec, and the objects it guards.

import type { GuardTarget } from '../config/guard-list.ts';
import { type ObjectRef, RESOURCES } from '../kube/objects.ts';

export const FINALIZER_PREFIX = 'drainguard.dev/holder-';
export const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';
export const MANAGED_BY = 'drainguard';
/** On the holder Lease: what this holder guards, for `drainguard status`. */
export const GUARDS_ANNOTATION = 'drainguard.dev/guards';

export const finalizerFor = (podUid: string): string => `${FINALIZER_PREFIX}${podUid}`;
export const leaseNameFor = (podUid: string): string => `drainguard-${podUid}`;
/** This pod's release anchor (anchor.ts), a Lease beside its holder Lease. */
export const anchorNameFor = (podUid: string): string => `drainguard-${podUid}-anchor`;
/** Whether a Lease's name is a release anchor's. */
export const isAnchorName = (name: string): boolean => /^drainguard-.+-anchor$/.test(name);

/** The pod UID a holder finalizer names, or undefined for other finalizers. */
export const holderOf = (finalizer: string): string | undefined =>
  finalizer.startsWith(FINALIZER_PREFIX) && finalizer.length > FINALIZER_PREFIX.length
    ? finalizer.slice(FINALIZER_PREFIX.length)
    : undefined;

/** What a guard holds: the guarded objects, the hold's Deployment (src/hold), and its release anchor (a Lease). */
export type HeldTarget =
  | GuardTarget
  | { readonly kind: 'deployment'; readonly namespace: string; readonly name: string }
  | { readonly kind: 'lease'; readonly namespace: string; readonly name: string };

export function refOf(target: HeldTarget): ObjectRef {
  return { ...RESOURCES[target.kind], namespace: target.namespace, name: target.name };
}
