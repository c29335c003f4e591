// Conflict-safe writes of finalizers, and nothing else. Adding: a merge patch
// that carries the resourceVersion it was computed from, so a concurrent change
// makes it fail (409/422) and it is redone on fresh data. Removing: by value,
// in one request that cannot conflict (see removeFinalizers).

import type { CallOptions, KubeClient } from '../kube/client.ts';
import { isConflict, isNotFound, isStatus } from '../kube/errors.ts';
import type { KubeObject, ObjectRef } from '../kube/objects.ts';

/** Attempts of a write against concurrent changes before giving up until the next round. */
export const CONFLICT_ATTEMPTS = 5;

export type AddOutcome =
  | { readonly state: 'added' | 'present'; readonly object: KubeObject }
  | { readonly state: 'deleting'; readonly object: KubeObject }
  | { readonly state: 'missing' };

/** Adds `finalizer` unless present; an object being deleted cannot take a new one ('deleting'). */
export async function addFinalizer(
  client: KubeClient,
  ref: ObjectRef,
  finalizer: string,
  options: CallOptions = {},
  known?: KubeObject,
): Promise<AddOutcome> {
  let object = known;
  for (let attempt = 1; ; attempt++) {
    try {
      object ??= await client.get(ref, options);
    } catch (err) {
      if (isNotFound(err)) return { state: 'missing' };
      throw err;
    }
    const finalizers = object.metadata.finalizers ?? [];
    if (finalizers.includes(finalizer)) return { state: 'present', object };
    if (object.metadata.deletionTimestamp) return { state: 'deleting', object };
    try {
      const patch = { metadata: { resourceVersion: object.metadata.resourceVersion, finalizers: [...finalizers, finalizer] } };
      return { state: 'added', object: await client.patch(ref, patch, 'application/merge-patch+json', options) };
    } catch (err) {
      if (isNotFound(err)) return { state: 'missing' };
      // 422: it started being deleted between our read and our write.
      if ((isConflict(err) || isStatus(err, 422)) && attempt < CONFLICT_ATTEMPTS) {
        object = undefined;
        continue;
      }
      throw err;
    }
  }
}

export type RemoveOutcome =
  { readonly state: 'removed'; readonly object: KubeObject; readonly gone: boolean } | { readonly state: 'missing' };

/**
 * Removes `finalizers` from the object in one request: a strategic merge patch
 * with `$deleteFromPrimitiveList/finalizers` (the field's patch strategy is
 * merge on every built-in type the guard holds). It names the values, not
 * their places, so it needs no read, no resourceVersion and no retry on a
 * conflict: a release must not wait on a read whose permission the release of
 * another object may just have taken away. `gone` when that let a deleted
 * object go.
 */
export async function removeFinalizers(
  client: KubeClient,
  ref: ObjectRef,
  finalizers: readonly string[],
  options: CallOptions = {},
): Promise<RemoveOutcome> {
  const patch = { metadata: { '$deleteFromPrimitiveList/finalizers': finalizers } };
  for (let attempt = 1; ; attempt++) {
    try {
      const after = await client.patch(ref, patch, 'application/strategic-merge-patch+json', options);
      // The API answers with the object as written; a deleted object whose last finalizer went is gone.
      const gone = Boolean(after.metadata.deletionTimestamp) && (after.metadata.finalizers ?? []).length === 0;
      return { state: 'removed', object: after, gone };
    } catch (err) {
      if (isNotFound(err)) return { state: 'missing' };
      // The API server retries its own conflicts for a patch without a resourceVersion; one that
      // still says 409 (a webhook, a proxy) gets the same idempotent patch again.
      if (isConflict(err) && attempt < CONFLICT_ATTEMPTS) continue;
      throw err;
    }
  }
}
