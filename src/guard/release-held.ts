// The release of a running guard (Guard.release): once its keep-alive loop
// has stopped, this pod's finalizer comes off every object it may be on, in
// the waves of release-order.ts, each wave warmed up first; then the holder
// Lease goes. Where no order is safe, the objects are pinned to the release
// anchor first (anchor.ts), and the anchor goes last, alone. Never throws,
// never outlasts the deadline the stop gives.

import { type Clock, abortAfter, within } from '../clock.ts';
import { guardTargetKey } from '../config/guard-list.ts';
import type { KubeClient } from '../kube/client.ts';
import { isNotFound } from '../kube/errors.ts';
import type { KubeObject } from '../kube/objects.ts';
import type { Logger } from '../log/logger.ts';
import { FOREGROUND, type ReleaseAnchor } from './anchor.ts';
import { removeFinalizers } from './finalizers.ts';
import type { HolderLease } from './lease.ts';
import { type HeldTarget, refOf } from './names.ts';
import { type Identity, planRelease } from './release-order.ts';

/** What may carry this pod's finalizer, with the last copy the guard read of it. */
export interface HeldObject {
  readonly target: HeldTarget;
  readonly object?: KubeObject;
}

export interface HeldRelease {
  readonly client: KubeClient;
  readonly finalizer: string;
  readonly lease: HolderLease;
  /** What keeps the objects a release pins until its last request (anchor.ts). */
  readonly anchor: ReleaseAnchor;
  readonly logger: Logger;
  /** What the deadline is compared with and the waves' turns are timed by. */
  readonly clock: Clock;
  /** Told when the release left this pod's finalizer on objects, with the command that frees them (for an Event). */
  readonly onReleaseFailed?: (objects: readonly string[], fix: string) => void;
  /** Once the keep-alive loop has stopped: what it may have left this pod's finalizer on, and whose permissions the order keeps. */
  readonly held: Promise<{ readonly objects: readonly HeldObject[]; readonly identity: Identity }>;
}

/** How long the release may spend opening connections before its burst of removals, at most. */
const WARM_UP_MS = 1000;

/** How long a pin may spend reading again what the warm-up did not read in time, at most. */
const PIN_READ_MS = 2000;

/** What the last wave of a release keeps for itself, at most, while it waits for the others' answers. */
const CREDENTIAL_RESERVE_MS = 1000;

const RACING =
  'released together: each is being deleted and is what lets drainguard release another of them, ' +
  "so whichever goes first may take the permission from the others' removals, and they could not be pinned to the release anchor; " +
  "keep drainguard's own RBAC out of the uninstall (docs/guard.md)";

/**
 * The command that frees what a failed release left (once the holder is stale); holders count only in their
 * own namespace, and it sweeps the anchors there of its own accord.
 */
const releaseCommand = (objects: readonly HeldTarget[], namespace: string): string =>
  `drainguard release --pod-namespace ${namespace} --guard ${objects
    .filter((t) => t.kind !== 'lease')
    .map(guardTargetKey)
    .join(',')}`;

/** Removes this pod's finalizers and the Lease by `deadline` (epoch ms), cut short there; never throws. */
export async function releaseHeld(r: HeldRelease, deadline: number): Promise<void> {
  const { clock } = r;
  const started = clock.now();
  const cutoff = new AbortController();
  let onDeadline = (): void => {};
  const expired = new Promise<'deadline'>((resolve) => (onDeadline = () => resolve('deadline')));
  const cancelTimer = clock.after(deadline - clock.now(), () => {
    cutoff.abort();
    onDeadline();
  });
  try {
    // The deadline (supervisor/shutdown.ts Deadlines) counts from the Pod's deletion, read at the termination and again before the release.
    const outcome = await Promise.race([releaseWithin(r, deadline, cutoff.signal, started), expired]);
    if (outcome === 'deadline') {
      r.logger.warn(
        'guard release cut short by the deadline: ' +
          'what is left is stale once this pod is gone, and swept by any drainguard or `drainguard release`',
        {
          deadline: new Date(deadline).toISOString(),
          afterMs: r.clock.now() - started,
        },
      );
    }
  } finally {
    cancelTimer();
    cutoff.abort();
  }
}

/**
 * The warm-up before a wave of removals: reads each target once, in parallel, for at most a
 * second (a quarter of what is left when less). The reads open the connections the wave's
 * removals go out on together (idle connections are closed after a few seconds, and renewals
 * keep only one or two); the copies say what is being deleted now, which decides the order.
 * null: gone; absent: not read in time.
 */
async function warmUp(
  r: HeldRelease,
  targets: readonly HeldTarget[],
  signal: AbortSignal,
  deadline: number,
): Promise<Map<HeldTarget, KubeObject | null>> {
  const over = abortAfter(r.clock, Math.floor(Math.min(WARM_UP_MS, Math.max(0, deadline - r.clock.now()) / 4)));
  const warm = AbortSignal.any([signal, over.signal]);
  const copies = new Map<HeldTarget, KubeObject | null>();
  await Promise.all(
    targets.map(async (target) => {
      try {
        copies.set(target, await r.client.get(refOf(target), { signal: warm, retry: false }));
      } catch (err) {
        if (isNotFound(err)) copies.set(target, null);
      }
    }),
  );
  over.cancel();
  return copies;
}

async function releaseWithin(r: HeldRelease, deadline: number, signal: AbortSignal, started: number): Promise<'done'> {
  const { objects: held, identity } = await r.held;
  if (held.length === 0 && !r.lease.created) {
    r.logger.info('guard released: nothing was held');
    return 'done';
  }
  const options = { deadline, signal };
  const remove = async (target: HeldTarget) => {
    const name = guardTargetKey(target);
    try {
      const result = await removeFinalizers(r.client, refOf(target), [r.finalizer], options);
      return { target, name, state: result.state, gone: result.state === 'removed' && result.gone };
    } catch (err) {
      return { target, name, state: 'failed' as const, error: (err as Error).message };
    }
  };
  const { anchor } = r;
  const copies = await warmUp(
    r,
    held.map((o) => o.target),
    signal,
    deadline,
  );
  const read = held.map((o) => {
    const copy = copies.get(o.target);
    // Not read in time: it may be being deleted.
    if (copy === undefined) return { target: o.target, object: o.object, deleting: true, seen: false };
    return { target: o.target, object: copy ?? undefined, deleting: Boolean(copy?.metadata.deletionTimestamp), seen: true };
  });
  // Kept by the anchor: deleted in the foreground and owned by it, it stays until the anchor goes.
  const kept = new Set(
    read.filter((h) => anchor.owns(h.object) && h.object!.metadata.finalizers?.includes(FOREGROUND)).map((h) => h.target),
  );
  // The anchor is released as any object, unless it keeps some: then it goes last (anchorLast).
  const anchorItem = { target: anchor.target, object: undefined, deleting: true, seen: true };
  const planOf = () =>
    planRelease(
      [...read.map((h) => ({ ...h, deleting: h.deleting && !kept.has(h.target) })), ...(kept.size > 0 ? [] : [anchorItem])],
      identity,
    );
  let plan = planOf();
  if (anchor.made && plan.racing.length > 0) {
    // What no order makes safe, pinned: each then stays until the anchor goes. Only what is being deleted
    // already: a pin of anything else would delete it. One not read in time is read once more first.
    // A guard stopped right after it started may not have told the anchor of every object yet.
    if (plan.racing.flat().some((h) => h.seen && h.object !== undefined && !anchor.owns(h.object)))
      await anchor.hold(read, { ...options, retry: false }).catch(() => {});
    const pins = plan.racing.flat().filter((h) => anchor.owns(h.object));
    const reread = abortAfter(r.clock, Math.floor(Math.min(PIN_READ_MS, Math.max(0, deadline - r.clock.now()) / 4)));
    const pinOne = async (h: (typeof pins)[number]): Promise<boolean> => {
      try {
        const object = h.seen ? h.object : await r.client.get(refOf(h.target), { signal: reread.signal, retry: false });
        if (!object?.metadata.deletionTimestamp || !anchor.owns(object)) return false;
        return await anchor.pin(h.target, object, { ...options, retry: { maxAttempts: 2 } });
      } catch {
        return false;
      }
    };
    const pinned = await Promise.all(pins.map(pinOne));
    reread.cancel();
    pins.forEach((h, i) => pinned[i] && kept.add(h.target));
    r.logger.info('no safe order: pinned to the release anchor, which goes last', {
      pinned: pins.filter((_, i) => pinned[i]).map((h) => guardTargetKey(h.target)),
      notPinned: pins.filter((_, i) => !pinned[i]).map((h) => guardTargetKey(h.target)),
    });
    plan = planOf();
  }
  const anchorLast = kept.size > 0;
  for (const group of plan.racing) {
    const objects = group.map((h) => guardTargetKey(h.target));
    // Told only when the copies say so: an object not read in time is taken for one being deleted.
    if (group.every((h) => h.seen)) r.logger.warn(RACING, { objects });
    else r.logger.debug('released together: some of these could not be read, so they are taken for being deleted', { objects });
  }
  const sent: Promise<Awaited<ReturnType<typeof remove>>>[] = [];
  for (const [i, wave] of plan.waves.entries()) {
    if (i === plan.last && sent.length > 0) {
      // This removal ends drainguard's access (its ServiceAccount's tokens): it goes once every
      // other removal is answered, keeping a part of the time left for itself.
      const left = Math.max(0, deadline - r.clock.now());
      await within(r.clock, Promise.all(sent), left - Math.min(CREDENTIAL_RESERVE_MS, left / 2));
    }
    // A wave waits for the one before, but only for its share of the time left: an API that
    // answers 500 to an early wave must not keep the later ones from going out at all.
    const share = Math.max(0, deadline - r.clock.now()) / (plan.waves.length - i);
    let cancelTurn = (): void => {};
    const turn = new Promise<void>((resolve) => (cancelTurn = r.clock.after(share, resolve)));
    if (i > 0)
      await Promise.race([
        warmUp(
          r,
          wave.map((h) => h.target),
          signal,
          deadline,
        ),
        turn,
      ]);
    // A wave goes out at once, one request per object that needs no read. The anchor, when it
    // keeps objects, goes with the credential's wave: nothing can be sent after that one.
    const answered = [...wave, ...(anchorLast && i === plan.last ? [anchorItem] : [])].map((h) => remove(h.target));
    sent.push(...answered);
    await Promise.race([Promise.all(answered), turn]);
    cancelTurn();
  }
  const results = await Promise.all(sent);
  // The holder Lease goes after every removal was answered, so that no sweeper takes this holder
  // for stale (and the post-delete hook drainguard's own RBAC away) while they are under way.
  // Once the ServiceAccount went with them its token is refused: the garbage collector deletes
  // the Lease with the Pod.
  const credential = new Set(
    plan.last === undefined
      ? []
      : plan.waves[plan.last]!.filter((h) => h.target.kind === 'serviceaccount').map((h) => guardTargetKey(h.target)),
  );
  const lease = results.some((result) => result.gone && credential.has(result.name))
    ? 'left to the garbage collector'
    : await r.lease.delete({ deadline, signal });
  // The last request: the anchor goes, and the garbage collector deletes what it kept.
  if (anchorLast && plan.last === undefined) results.push(await remove(anchor.target));
  const failed = results.filter((result) => result.state === 'failed');
  const fields = {
    released: results.filter((result) => result.state === 'removed').map((result) => result.name),
    deleted: results.filter((result) => result.gone).map((result) => result.name),
    waves: plan.waves.length,
    lease: lease instanceof Error ? 'not deleted' : lease,
    durationMs: r.clock.now() - started,
  };
  if (lease instanceof Error)
    r.logger.warn('could not delete the holder Lease: the garbage collector deletes it with the Pod', { error: lease.message });
  if (failed.length > 0) {
    const objects = failed.map((f) => f.name);
    const fix = releaseCommand(
      failed.map((f) => f.target),
      identity.namespace,
    );
    // Loud: after an uninstall no other drainguard may be left to sweep it.
    r.logger.error(
      `guard released in part: ${objects.join(', ')} keep this pod's finalizer; ` +
        `once this pod is gone, \`${fix}\` (or the post-delete hook) removes it`,
      {
        ...fields,
        failed: failed.map((f) => `${f.name}: ${f.error}`),
        fix,
      },
    );
    r.onReleaseFailed?.(objects, fix);
  } else {
    r.logger.info('guard released', fields);
  }
  return 'done';
}
