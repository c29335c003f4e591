// Who holds what: holder Leases, and which holders are live. A holder is stale
// when its Lease is gone (the garbage collector deletes it with the Pod) or
// has not been renewed within its lease duration.

import type { CallOptions, KubeClient } from '../kube/client.ts';
import { isStatus } from '../kube/errors.ts';
import { RESOURCES, type KubeObject } from '../kube/objects.ts';
import { MANAGED_BY, MANAGED_BY_LABEL, leaseNameFor } from './names.ts';

export interface LeaseObject extends KubeObject {
  spec?: { holderIdentity?: string; leaseDurationSeconds?: number; acquireTime?: string; renewTime?: string };
}

export interface HolderState {
  readonly uid: string;
  readonly live: boolean;
  /** Why it is stale: 'gone' (no Lease) or 'expired'. */
  readonly staleBecause?: 'gone' | 'expired';
  readonly lease?: LeaseObject;
}

export interface HolderIndex {
  /** The state of the holder with this pod UID. */
  state(uid: string): HolderState;
  readonly leases: readonly LeaseObject[];
  /** Where Leases were looked for: 'cluster', or the one namespace drainguard may list. */
  readonly scope: string;
}

export function isExpired(lease: LeaseObject, now: number): boolean {
  const renewed = Date.parse(lease.spec?.renewTime ?? lease.spec?.acquireTime ?? lease.metadata.creationTimestamp ?? '');
  const duration = (lease.spec?.leaseDurationSeconds ?? 0) * 1000;
  return Number.isNaN(renewed) || now > renewed + duration;
}

/**
 * Lists drainguard's holder Leases: across the cluster when allowed, else in
 * `fallbackNamespace` (where holders of the same objects normally live: one Deployment).
 */
export async function listHolders(client: KubeClient, fallbackNamespace: string | undefined, now: () => number, options: CallOptions = {}): Promise<HolderIndex> {
  const query = { labelSelector: `${MANAGED_BY_LABEL}=${MANAGED_BY}` };
  let leases: LeaseObject[];
  let scope = 'cluster';
  try {
    leases = (await client.list<LeaseObject>(RESOURCES.lease, undefined, { ...options, query })).items;
  } catch (err) {
    if (!isStatus(err, 403) || fallbackNamespace === undefined) throw err;
    leases = (await client.list<LeaseObject>(RESOURCES.lease, fallbackNamespace, { ...options, query })).items;
    scope = fallbackNamespace;
  }
  const byName = new Map(leases.map((l) => [l.metadata.name, l]));
  const at = now();
  return {
    leases,
    scope,
    state(uid) {
      const lease = byName.get(leaseNameFor(uid));
      if (!lease) return { uid, live: false, staleBecause: 'gone' };
      if (isExpired(lease, at)) return { uid, live: false, staleBecause: 'expired', lease };
      return { uid, live: true, lease };
    },
  };
}
