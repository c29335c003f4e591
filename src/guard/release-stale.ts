// `drainguard release`: sweeps the finalizers of stale holders (and of live
// ones with `all`) from the objects named, pass after pass until none is kept
// or the wait is over; then, with nothing kept, deletes what `remove` names.
// Every line it says is said once.

import { type DeleteTarget, type GuardTarget, guardTargetKey } from '../config/guard-list.ts';
import { isGuardKind } from '../config/guard-kinds.ts';
import type { KubeClient } from '../kube/client.ts';
import { isNotFound } from '../kube/errors.ts';
import { sleep } from '../kube/retry.ts';
import { inspect } from './inspect.ts';
import type { HeldTarget } from './names.ts';
import { RESOURCES } from '../kube/objects.ts';
import { sweep, toSweep, why } from './sweep.ts';

export interface StaleRelease {
  readonly targets: readonly HeldTarget[];
  readonly allObjects: boolean;
  /** Also the finalizers of live holders. */
  readonly all: boolean;
  /** How long to keep sweeping while live holders remain; undefined: one pass. */
  readonly waitMs?: number;
  /** Deleted once no live holder is left (swept too, when of a guarded kind: a stale finalizer would keep it after the delete). */
  readonly remove: readonly DeleteTarget[];
  /** The guard's own namespace: where holder Leases count, and the hold's Deployments are. */
  readonly namespace: string;
}

/** Runs the release; resolves with the exit status (0: all released and deleted; 1: some failed, or holders remained where that counts). */
export async function releaseStale(client: KubeClient, r: StaleRelease, write: (line: string) => void): Promise<number> {
  const guarded = r.remove.filter((x): x is GuardTarget => isGuardKind(x.kind));
  const targets = [...r.targets, ...guarded.filter((x) => !r.targets.some((t) => guardTargetKey(t) === guardTargetKey(x)))];
  const until = Date.now() + (r.waitMs ?? 0);
  const said = new Set<string>();
  const say = (line: string) => {
    if (!said.has(line)) write(line);
    said.add(line);
  };
  let removed = 0;
  for (;;) {
    // The anchors of the namespace's holders too: a dead holder's keeps what it pinned (anchor.ts).
    const { objects } = await inspect(client, { targets, allObjects: r.allObjects, anchors: true }, r.namespace);
    let kept = 0;
    let failed = 0;
    await Promise.all(
      objects.map(async (o) => {
        if (!o.object) {
          say(`${o.key}: not found`);
          return;
        }
        const { remove, keep } = toSweep(o.holders, { all: r.all });
        for (const h of keep) {
          kept++;
          say(`${o.key}: kept ${h.finalizer} (live holder ${h.lease!.metadata.namespace}/${h.lease!.metadata.name})`);
        }
        if (remove.length === 0) return;
        try {
          const result = await sweep(client, o.target, remove);
          for (const h of remove) {
            removed++;
            say(`${o.key}: removed ${h.finalizer} (${why(h)})`);
          }
          if (result.state === 'removed' && result.gone) say(`${o.key}: deleted (it was being deleted)`);
        } catch (err) {
          failed++;
          say(`${o.key}: could not remove ${remove.map((h) => h.finalizer).join(', ')}: ${(err as Error).message}`);
        }
      }),
    );
    const done = kept === 0 && failed === 0;
    if (done || Date.now() >= until) {
      let deleted = 0;
      if (r.remove.length > 0 && !done)
        say(
          `not deleted: ${r.remove.map(guardTargetKey).join(', ')} ` +
            `(${kept > 0 ? 'live holders remain' : 'finalizers could not be removed'})`,
        );
      if (r.remove.length > 0 && done) {
        await Promise.all(
          r.remove.map(async (x) => {
            const key = guardTargetKey(x);
            try {
              await client.delete(
                { ...RESOURCES[x.kind], namespace: x.namespace, name: x.name },
                { body: { propagationPolicy: 'Background' } },
              );
              deleted++;
              say(`${key}: deleted`);
            } catch (err) {
              if (isNotFound(err)) return;
              failed++;
              say(`${key}: could not delete: ${(err as Error).message}`);
            }
          }),
        );
      }
      const summary = [
        `released ${removed} finalizer(s)`,
        `${kept} of live holders left`,
        ...(r.remove.length > 0 ? [`deleted ${deleted} object(s)`] : []),
        ...(failed > 0 ? [`${failed} object(s) failed`] : []),
        `holders judged by the Leases of namespace ${r.namespace}`,
      ];
      write(summary.join('; '));
      return failed > 0 || ((r.waitMs !== undefined || r.remove.length > 0) && kept > 0) ? 1 : 0;
    }
    await sleep(Math.min(1000, until - Date.now()));
  }
}
