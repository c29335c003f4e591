// Reads the guard's state from the API for `drainguard status` and `drainguard
// release`: the guarded objects, the holder finalizers on them, and which
// holders are live.

import { type Clock, systemClock } from '../clock.ts';
import type { GuardKind, GuardTarget } from '../config/guard-list.ts';
import { guardTargetKey } from '../config/guard-list.ts';
import type { KubeClient } from '../kube/client.ts';
import { isNotFound } from '../kube/errors.ts';
import type { KubeObject } from '../kube/objects.ts';
import { type HolderIndex, listHolders } from './holders.ts';
import { type HeldBy, holdersOf } from './sweep.ts';
import { GUARD_KINDS } from '../config/guard-kinds.ts';
import { type HeldTarget, holderOf, refOf } from './names.ts';
import { RESOURCES } from '../kube/objects.ts';

export interface InspectedObject {
  readonly target: HeldTarget;
  readonly key: string;
  /** undefined: the object does not exist. */
  readonly object?: KubeObject;
  readonly holders: readonly HeldBy[];
}

export interface Inspection {
  readonly objects: readonly InspectedObject[];
  readonly holders: HolderIndex;
}

/** Every object of the guardable kinds that carries a holder finalizer, cluster-wide. */
async function objectsWithHolders(client: KubeClient): Promise<{ target: GuardTarget; object: KubeObject }[]> {
  const lists = await Promise.all(
    GUARD_KINDS.map(async (kind: GuardKind) => {
      const { items } = await client.list(RESOURCES[kind], undefined);
      return items
        .filter((o) => (o.metadata.finalizers ?? []).some((f) => holderOf(f) !== undefined))
        .map((object) => ({
          target: {
            kind,
            name: object.metadata.name,
            ...(object.metadata.namespace !== undefined && { namespace: object.metadata.namespace }),
          },
          object,
        }));
    }),
  );
  return lists.flat();
}

/** The hold's Deployments (src/hold): those in `namespace` that carry a holder finalizer. */
export async function heldDeployments(client: KubeClient, namespace: string): Promise<HeldTarget[]> {
  const { items } = await client.list(RESOURCES.deployment, namespace);
  return items
    .filter((d) => (d.metadata.finalizers ?? []).some((f) => holderOf(f) !== undefined))
    .map((d) => ({ kind: 'deployment' as const, namespace, name: d.metadata.name }));
}

export async function inspect(
  client: KubeClient,
  /** anchors: the release anchors of the namespace too (anchor.ts), for a sweep. */
  selection: { readonly targets?: readonly HeldTarget[]; readonly allObjects?: boolean; readonly anchors?: boolean },
  /** The guard's own namespace: where holder Leases count (holders.ts). */
  namespace: string,
  /** What holders' liveness is judged at; the wall clock by default. */
  clock: Pick<Clock, 'now'> = systemClock,
): Promise<Inspection> {
  const found: { target: HeldTarget; object?: KubeObject }[] = [];
  const seen = new Set<string>();
  const add = (entry: { target: HeldTarget; object?: KubeObject }) => {
    const key = guardTargetKey(entry.target);
    if (!seen.has(key)) found.push(entry);
    seen.add(key);
  };
  const [named, all] = await Promise.all([
    Promise.all(
      (selection.targets ?? []).map(async (target) => {
        try {
          return { target, object: await client.get(refOf(target)) };
        } catch (err) {
          if (isNotFound(err)) return { target };
          throw err;
        }
      }),
    ),
    selection.allObjects ? objectsWithHolders(client) : Promise.resolve([]),
  ]);
  named.forEach(add);
  all.forEach(add);
  const holders = await listHolders(client, namespace, () => clock.now());
  if (selection.anchors)
    for (const object of holders.anchors) add({ target: { kind: 'lease', namespace, name: object.metadata.name }, object });
  const objects = found.map(({ target, object }) => ({
    target,
    key: guardTargetKey(target),
    object,
    holders: holdersOf(object, holders),
  }));
  return { objects, holders };
}
