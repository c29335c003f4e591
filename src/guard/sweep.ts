// The sweep: removing the finalizers of stale holders (Lease gone or expired)
// from guarded objects, so that nothing stays stuck once a holder pod is gone.
// Done by every running guard on each tick and by `drainguard release`.

import type { CallOptions, KubeClient } from '../kube/client.ts';
import type { KubeObject } from '../kube/objects.ts';
import { type RemoveOutcome, removeFinalizers } from './finalizers.ts';
import { type HolderIndex, type HolderState, STALE_TEXT } from './holders.ts';
import { type HeldTarget, holderOf, refOf } from './names.ts';

export interface HeldBy extends HolderState {
  readonly finalizer: string;
}

/** The holders whose finalizers `object` carries, live or stale. */
export function holdersOf(object: KubeObject | undefined, holders: HolderIndex): HeldBy[] {
  return (object?.metadata.finalizers ?? []).flatMap((finalizer) => {
    const uid = holderOf(finalizer);
    return uid === undefined ? [] : [{ ...holders.state(uid), finalizer }];
  });
}

/** Which of `held` a sweep removes: the stale ones, and with `all` the live ones too. */
export function toSweep(
  held: readonly HeldBy[],
  { all = false, except }: { all?: boolean; except?: string } = {},
): { remove: HeldBy[]; keep: HeldBy[] } {
  const mine = held.filter((h) => h.finalizer !== except);
  const remove = mine.filter((h) => !h.live || all);
  return { remove, keep: mine.filter((h) => !remove.includes(h)) };
}

/** Removes those finalizers from the object, in one request. */
export function sweep(
  client: KubeClient,
  target: HeldTarget,
  remove: readonly HeldBy[],
  options: CallOptions = {},
): Promise<RemoveOutcome> {
  return removeFinalizers(
    client,
    refOf(target),
    remove.map((h) => h.finalizer),
    options,
  );
}

/** Why a holder's finalizer goes, for the release command's report. */
export function why(h: HolderState): string {
  return h.live ? 'live holder, --all' : `stale: ${STALE_TEXT[h.staleBecause!]}`;
}
