// The operator's leader Lease, given up once the operator has exited, as
// client-go's LeaderElector does with ReleaseOnCancel (which controller-runtime
// leaves off by default): holderIdentity emptied, leaseDurationSeconds 1,
// acquireTime and renewTime now, leaseTransitions kept. The successor then
// takes it at its next retry (2 s by default) instead of waiting out the lease
// duration (15 s).
//
// Only a Lease this pod's operator holds: client-go's identity is
// `<hostname>_<uuid>` and a pod's hostname is its name (cut to 63 characters), so
// the holder must start with that and `_`. The write is a PUT with the
// resourceVersion read, so a successor that took the Lease meanwhile wins (409),
// and it needs the `update` right the operator's own election uses. Nothing is
// retried past the release deadline, and nothing here ever throws: the guard's
// release runs beside it, undelayed.

import { type Clock, systemClock } from '../clock.ts';
import type { LeaderLeaseSetting } from '../config/options.ts';
import type { KubeClient } from '../kube/client.ts';
import { KubeApiError, isConflict, isNotFound, isStatus } from '../kube/errors.ts';
import { type KubeObject, RESOURCES, microTime, objectPath } from '../kube/objects.ts';
import type { Logger } from '../log/logger.ts';

export interface LeaseSpec {
  holderIdentity?: string | null;
  leaseDurationSeconds?: number | null;
  acquireTime?: string | null;
  renewTime?: string | null;
  leaseTransitions?: number | null;
  [field: string]: unknown;
}

export interface LeaderLease extends KubeObject {
  spec?: LeaseSpec;
}

export interface LeaderReleaseOptions {
  readonly pod: { readonly name: string; readonly namespace: string };
  readonly lease: Exclude<LeaderLeaseSetting, 'off'>;
  /** The API client, opened on first use; undefined when no API is configured. */
  readonly client: () => Promise<KubeClient | undefined>;
  readonly logger: Logger;
  /** What the Lease's new times and the deadline are read on (the stop procedure's clock); the wall clock by default. */
  readonly clock?: Pick<Clock, 'now'>;
  /**
   * False where drainguard cannot tell that the operator has exited (a sidecar
   * without DRAINGUARD_OPERATOR_CONTAINER): the Lease is only looked for, and
   * one held by this pod is logged as left.
   */
  readonly mayWrite?: boolean;
}

/** What the release did, for the log and the tests. */
export type LeaderReleaseOutcome =
  | { readonly outcome: 'released'; readonly leases: readonly string[] }
  | { readonly outcome: 'none' | 'no-api' | 'taken' | 'left' | 'refused' | 'failed' | 'deadline' };

/** The hostname the kubelet gives a pod: its name, cut to 63 characters without a trailing '-' or '.'. */
export function podHostname(podName: string): string {
  return podName.length <= 63 ? podName : podName.slice(0, 63).replace(/[-.]+$/, '');
}

/** Whether `holder` is client-go's identity of a process in this pod: `<hostname>_<anything>`. */
export function heldByPod(holder: string | null | undefined, podName: string): boolean {
  return typeof holder === 'string' && holder.startsWith(`${podHostname(podName)}_`);
}

/** The Lease as client-go's release leaves it: nobody holds it, and it expires a second from now. */
export function released(lease: LeaderLease, at: number): LeaderLease {
  const now = microTime(at);
  return { ...lease, spec: { ...lease.spec, holderIdentity: '', leaseDurationSeconds: 1, acquireTime: now, renewTime: now } };
}

/**
 * Gives up the leader Lease(s) this pod's operator still holds, by `deadline`
 * (epoch ms). Call only once the operator has exited. Never throws.
 */
export async function releaseLeaderLease(options: LeaderReleaseOptions, deadline: number): Promise<LeaderReleaseOutcome> {
  const { pod, logger: log, clock = systemClock } = options;
  const identity = `${podHostname(pod.name)}_`;
  const fields = { namespace: pod.namespace, holder: `${identity}*` };
  try {
    const client = await options.client();
    if (!client) return { outcome: 'no-api' };
    const call = { deadline };
    let held: LeaderLease[];
    if (options.lease === 'auto') {
      let list;
      try {
        list = await client.list<LeaderLease>(RESOURCES.lease, pod.namespace, call);
      } catch (err) {
        if (!isStatus(err, 403)) throw err;
        // An operator that elects no leader needs no rights on Leases: not worth a warning.
        log.info('cannot list the Leases of this namespace: no leader Lease looked for (DRAINGUARD_LEADER_LEASE=off says none is wanted)', {
          namespace: pod.namespace,
          status: 403,
        });
        return { outcome: 'refused' };
      }
      held = list.items.filter((l) => heldByPod(l.spec?.holderIdentity, pod.name));
    } else {
      const one = await client
        .get<LeaderLease>({ ...RESOURCES.lease, namespace: pod.namespace, name: options.lease.name }, call)
        .catch((err: unknown) => {
          if (isNotFound(err)) return undefined;
          throw err;
        });
      held = one && heldByPod(one.spec?.holderIdentity, pod.name) ? [one] : [];
      if (one && held.length === 0)
        log.info('leader Lease not held by this pod: left as it is', {
          lease: `${pod.namespace}/${options.lease.name}`,
          holder: one.spec?.holderIdentity ?? '',
        });
    }
    if (held.length === 0) {
      log.debug('no leader Lease held by this pod', fields);
      return { outcome: 'none' };
    }
    if (options.mayWrite === false) {
      log.info(
        'leader Lease held by this pod left as it is: ' +
          'drainguard cannot tell that the operator has stopped ' +
          '(a sidecar needs DRAINGUARD_OPERATOR_CONTAINER, and the API to report that container terminated)',
        {
          leases: held.map((l) => `${pod.namespace}/${l.metadata.name}`),
        },
      );
      return { outcome: 'left' };
    }
    const done: string[] = [];
    let taken = false;
    for (const lease of held) {
      const ref = { ...RESOURCES.lease, namespace: pod.namespace, name: lease.metadata.name! };
      try {
        // PUT with the resourceVersion read: a successor that took the Lease since wins (409).
        await client.request('PUT', objectPath(ref), {
          what: `lease/${pod.namespace}/${ref.name}`,
          body: released(lease, clock.now()),
          ...call,
        });
        done.push(ref.name);
        log.info('leader Lease released: the next leader can take it at once', {
          lease: `${pod.namespace}/${ref.name}`,
          holder: lease.spec?.holderIdentity,
        });
      } catch (err) {
        if (!isConflict(err) && !isNotFound(err)) throw err;
        // Taken over (or deleted) since it was read: the successor's, not ours.
        taken = true;
        log.info('leader Lease changed since it was read: left to its new holder', { lease: `${pod.namespace}/${ref.name}` });
      }
    }
    return done.length > 0 ? { outcome: 'released', leases: done } : { outcome: taken ? 'taken' : 'none' };
  } catch (err) {
    if (isStatus(err, 401, 403)) {
      log.warn(
        'leader Lease not released: the API refused (the successor waits out its lease duration); ' +
          'drainguard uses the rights the operator has, get, list and update on leases in its namespace',
        {
          ...fields,
          status: (err as KubeApiError).status,
          error: err,
        },
      );
      return { outcome: 'refused' };
    }
    if (clock.now() >= deadline) {
      log.warn('leader Lease not released by the release deadline (the successor waits out its lease duration)', { ...fields, error: err });
      return { outcome: 'deadline' };
    }
    log.warn('leader Lease not released (the successor waits out its lease duration)', { ...fields, error: err });
    return { outcome: 'failed' };
  }
}
