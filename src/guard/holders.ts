// Who holds what: holder Leases, and which holders are live.
//
// A holder is live only on the word of a Lease that its pod can have written
// and the garbage collector will delete with it: in the guard's own namespace,
// named `drainguard-<POD_UID>`, owned by the Pod (v1) with that UID, renewed
// within its lease duration and not in the future. Anything else counts for
// nothing, and the holder is stale: its finalizer may be swept.
//
// Which way each doubt falls, and why that way is safe:
// - A Lease of that name in another namespace is never read (only the own
//   namespace is listed, and a Lease from elsewhere is ignored all the same).
//   Anyone who may create a Lease somewhere could otherwise keep a dead
//   holder's finalizer for ever (nothing deletes a Lease that no Pod owns), or
//   shadow a live holder's Lease with an expired one and have its finalizer
//   swept in the middle of an uninstall. The price: holders of one object must
//   live in one namespace (one Deployment's pods do); a holder elsewhere is
//   swept and puts its finalizer back on its next renewal.
// - A Lease without the ownerReference to the holder's Pod is not one the
//   garbage collector ties to that pod: it would keep a finalizer after the pod
//   is gone. Stale. A live holder whose Lease was edited puts the owner back on
//   its next renewal, and its finalizer with it (unless the object is being
//   deleted: then the holder was live, and edited, at the worst moment).
// - A renewTime more than CLOCK_SKEW_MS ahead of the sweeper's clock is not a
//   renewal a holder can have made (its clock would be off by more than the
//   API server itself tolerates): stale, or a far-future time would keep a dead
//   holder live for as long as its Pod object stays.
// - No Lease, an unreadable time, or an expired one: stale, as before.

import type { CallOptions, KubeClient } from '../kube/client.ts';
import { RESOURCES, type KubeObject } from '../kube/objects.ts';
import { MANAGED_BY, MANAGED_BY_LABEL, isAnchorName, leaseNameFor } from './names.ts';

export interface LeaseObject extends KubeObject {
  spec?: { holderIdentity?: string; leaseDurationSeconds?: number; acquireTime?: string; renewTime?: string };
}

/**
 * How far ahead of the sweeper's clock a renewTime may be and still count: the
 * leeway kube-apiserver gives between clocks when it checks a token's times
 * (pkg/serviceaccount/claims.go, one minute). Nodes kept by NTP are within
 * milliseconds; a minute is also the default lease duration, so a holder that
 * is off by that much is swept at most as soon as it would be if it were late.
 */
export const CLOCK_SKEW_MS = 60_000;

/** Why a holder is stale. */
export type StaleReason = 'gone' | 'not-owned' | 'expired' | 'future';

/** Each reason as the reports say it. */
export const STALE_TEXT: Readonly<Record<StaleReason, string>> = {
  gone: 'Lease gone',
  'not-owned': 'Lease not owned by its Pod',
  expired: 'Lease expired',
  future: 'Lease renewed in the future',
};

export interface HolderState {
  readonly uid: string;
  readonly live: boolean;
  /** 'gone': no Lease in the namespace; 'not-owned': no ownerReference to the Pod; 'expired'; 'future': renewed too far ahead. */
  readonly staleBecause?: StaleReason;
  readonly lease?: LeaseObject;
}

export interface HolderIndex {
  /** The state of the holder with this pod UID. */
  state(uid: string): HolderState;
  /** The holder Leases of the namespace. */
  readonly leases: readonly LeaseObject[];
  /** The release anchors of the namespace (anchor.ts): Leases too, but no holder's word. */
  readonly anchors: readonly LeaseObject[];
  /** The namespace Leases were looked for in: the guard's own. */
  readonly scope: string;
}

function isExpired(lease: LeaseObject, now: number): boolean {
  const renewed = renewedAt(lease);
  const duration = (lease.spec?.leaseDurationSeconds ?? 0) * 1000;
  return Number.isNaN(renewed) || now > renewed + duration;
}

function renewedAt(lease: LeaseObject): number {
  return Date.parse(lease.spec?.renewTime ?? lease.spec?.acquireTime ?? lease.metadata.creationTimestamp ?? '');
}

/** The Lease has an ownerReference to the Pod with this UID. */
function ownedByPod(lease: LeaseObject, uid: string): boolean {
  return (lease.metadata.ownerReferences ?? []).some((r) => r.apiVersion === 'v1' && r.kind === 'Pod' && r.uid === uid);
}

/** Judges the holder `uid` from the Leases at hand: only its own, in `namespace`, counts. */
export function holderState(uid: string, leases: readonly LeaseObject[], namespace: string, now: number): HolderState {
  const name = leaseNameFor(uid);
  const lease = leases.find((l) => l.metadata.name === name && l.metadata.namespace === namespace);
  if (!lease) return { uid, live: false, staleBecause: 'gone' };
  if (!ownedByPod(lease, uid)) return { uid, live: false, staleBecause: 'not-owned', lease };
  if (isExpired(lease, now)) return { uid, live: false, staleBecause: 'expired', lease };
  if (renewedAt(lease) > now + CLOCK_SKEW_MS) return { uid, live: false, staleBecause: 'future', lease };
  return { uid, live: true, lease };
}

/**
 * Lists drainguard's holder Leases in `namespace`, the guard's own (the pod's;
 * `--pod-namespace` of `release` and `status`), and judges holders by them.
 * Never across the cluster: a Lease elsewhere counts for nothing, so there is
 * no reason to read it, nor to hold the right to.
 */
export async function listHolders(
  client: KubeClient,
  namespace: string,
  now: () => number,
  options: CallOptions = {},
): Promise<HolderIndex> {
  const query = { labelSelector: `${MANAGED_BY_LABEL}=${MANAGED_BY}` };
  const listed = (await client.list<LeaseObject>(RESOURCES.lease, namespace, { ...options, query })).items;
  const own = listed.filter((l) => l.metadata.namespace === namespace);
  const leases = own.filter((l) => !isAnchorName(l.metadata.name));
  const anchors = own.filter((l) => isAnchorName(l.metadata.name));
  const at = now();
  return { leases, anchors, scope: namespace, state: (uid) => holderState(uid, leases, namespace, at) };
}
