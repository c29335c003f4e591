// This pod's release anchor: what lets a release end with nothing stuck when no
// order of removals is safe. When drainguard's own RBAC is deleted with the rest
// (`kubectl delete -f` of the whole manifest), every object that authorises a
// removal is being deleted too, and the removal of the last of them takes the
// permission for the others: whichever goes first, one finalizer stays, and no
// drainguard is left to sweep it (release-order.ts).
//
// The anchor is a Lease beside the holder Lease, `drainguard-<POD_UID>-anchor`,
// carrying this pod's finalizer and an ownerReference with blockOwnerDeletion to
// each guarded object of its namespace and of the cluster. A release that finds
// no safe order pins those objects first: a DELETE with propagationPolicy
// Foreground on an object already being deleted gives it the garbage
// collector's `foregroundDeletion` finalizer, which the collector removes only
// once no blocking dependent is left, the anchor being one. This pod's
// finalizers then come off in any order (nothing goes), and last, alone, the
// anchor's: the anchor goes, and the garbage collector, which outlives the pod,
// deletes the rest. No permission is needed after that last request.
//
// The anchor is deleted as soon as it is made, so that it is being deleted long
// before any release: the garbage collector never judges the owners of an
// object being deleted (it would drop the references to owners deleted in the
// foreground while another owner stands), and its graph has the references long
// before a pin needs them. Until the release it costs nothing: a deletion in the
// background, as Helm and kubectl do, ignores it; a foreground one waits for it,
// as it waits for this pod's finalizer. A holder that dies leaves its anchor
// with a stale holder's finalizer, swept as any other (inspect.ts, guard.ts).

import type { CallOptions, KubeClient } from '../kube/client.ts';
import { isNotFound, isStatus } from '../kube/errors.ts';
import { type KubeObject, RESOURCES, apiVersion } from '../kube/objects.ts';
import type { PodRef } from '../kube/pod.ts';
import { isGuardKind } from '../config/guard-kinds.ts';
import { MANAGED_BY, MANAGED_BY_LABEL, type HeldTarget, anchorNameFor, refOf } from './names.ts';

/** The garbage collector's finalizer of a deletion in the foreground. */
export const FOREGROUND = 'foregroundDeletion';

interface OwnerReference {
  readonly apiVersion: string;
  readonly kind: string;
  readonly name: string;
  readonly uid: string;
  readonly blockOwnerDeletion: true;
}

/** A guarded object as last read. */
export interface Owned {
  readonly target: HeldTarget;
  readonly object?: KubeObject;
}

export class ReleaseAnchor {
  readonly #client: KubeClient;
  readonly #pod: PodRef;
  readonly #finalizer: string;
  /** The owners the anchor was last written with, as a key; undefined: not made (or not known to exist). */
  #written?: string;
  /** The UIDs of its owners, as last written. */
  #owners = new Set<string>();
  readonly target: HeldTarget;

  constructor(client: KubeClient, pod: PodRef, finalizer: string) {
    this.#client = client;
    this.#pod = pod;
    this.#finalizer = finalizer;
    this.target = { kind: 'lease', namespace: pod.namespace, name: anchorNameFor(pod.uid) };
  }

  /** Whether it was made: only then may the release pin, and must it release the anchor. */
  get made(): boolean {
    return this.#written !== undefined;
  }

  /** Whether the anchor holds `object` (this very object, by UID) in a deletion in the foreground. */
  owns(object: KubeObject | undefined): boolean {
    return object?.metadata.uid !== undefined && this.#owners.has(object.metadata.uid);
  }

  /** The references it can carry: guarded objects of its namespace or of the cluster (a namespaced object's owners are). */
  #references(objects: readonly Owned[]): OwnerReference[] {
    return objects.flatMap(({ target, object }) => {
      const uid = object?.metadata.uid;
      if (!isGuardKind(target.kind) || uid === undefined) return [];
      const resource = RESOURCES[target.kind];
      if (resource.namespaced && target.namespace !== this.#pod.namespace) return [];
      return [{ apiVersion: apiVersion(resource), kind: resource.kind, name: target.name, uid, blockOwnerDeletion: true as const }];
    });
  }

  /**
   * Makes the anchor own `objects` (those it can), being deleted and kept by this pod's finalizer;
   * nothing is sent when that is already so. Throws when the API refuses.
   */
  async hold(objects: readonly Owned[], options: CallOptions): Promise<void> {
    const ownerReferences = this.#references(objects);
    const key = JSON.stringify(ownerReferences.map((r) => r.uid).sort());
    if (key === this.#written || (ownerReferences.length === 0 && this.#written === undefined)) return;
    const ref = refOf(this.target);
    if (this.#written !== undefined) {
      try {
        await this.#client.patch(ref, { metadata: { ownerReferences } }, 'application/merge-patch+json', options);
      } catch (err) {
        if (!isNotFound(err)) throw err;
        // Someone removed its finalizer (and it went): made again below.
        this.#written = undefined;
      }
    }
    if (this.#written === undefined) {
      const body = {
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: {
          name: ref.name,
          namespace: ref.namespace,
          labels: { [MANAGED_BY_LABEL]: MANAGED_BY },
          finalizers: [this.#finalizer],
          ownerReferences,
        },
        spec: { holderIdentity: this.#pod.name },
      };
      try {
        await this.#client.create(RESOURCES.lease, ref.namespace, body, options);
      } catch (err) {
        // Left by an earlier run of this pod's container: being deleted, with this pod's finalizer.
        if (!isStatus(err, 409)) throw err;
        await this.#client.patch(ref, { metadata: { ownerReferences } }, 'application/merge-patch+json', options);
      }
      await this.#client.delete(ref, { ...options, body: { propagationPolicy: 'Background' } });
    }
    this.#written = key;
    this.#owners = new Set(ownerReferences.map((r) => r.uid));
  }

  /**
   * Pins `object`, being deleted and owned by the anchor: a DELETE in the foreground adds the garbage
   * collector's finalizer, so it stays until the anchor goes. Resolves with whether it is pinned now.
   */
  async pin(target: HeldTarget, object: KubeObject, options: CallOptions): Promise<boolean> {
    const uid = object.metadata.uid;
    const after = (await this.#client.delete(refOf(target), {
      ...options,
      body: { propagationPolicy: 'Foreground', preconditions: { uid } },
    })) as Partial<KubeObject> | undefined;
    const meta = after?.metadata;
    return meta !== undefined && meta.uid === uid && (meta.finalizers ?? []).includes(FOREGROUND);
  }
}
