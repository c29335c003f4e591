// Ordered namespace deletion (KEP-5080: beta and on by default in 1.33, GA in
// 1.34) deletes every pod of a deleted namespace first and nothing else until
// they are gone. An operator whose custom resources live in its own namespace
// is then stopped before they are deleted; they are deleted later with nobody
// to remove their finalizers, and the namespace stays Terminating for ever.
//
// So, when drainguard is told to stop and its own namespace is being deleted,
// it first deletes the objects of the DRAINGUARD_HOLD kinds in that namespace
// itself, while the operator still runs (not drained yet) and the guard still
// holds its RBAC, and waits until their finalizers are done and they are gone,
// by the deadline it is given; then the drain and the stop go on as usual.
// What is left at the deadline is logged, object by object.
//
// Rights: `get` on its own Namespace (resourceNames), and `list` and `delete`
// on the listed kinds in it (the hold already has `list`). A refused delete is
// warned about and waited out: the namespace controller may still delete them.
// Discovery is readable by every authenticated user. Nothing here ever throws.

import { type Clock, systemClock } from '../clock.ts';
import { type HoldKind, holdKindName } from '../config/hold-list.ts';
import type { KubeClient } from '../kube/client.ts';
import { isNotFound, isStatus } from '../kube/errors.ts';
import type { KubeObject, ResourceRef } from '../kube/objects.ts';
import { resolveResource } from '../kube/discovery.ts';
import type { Logger } from '../log/logger.ts';

export interface NamespaceFinalizeOptions {
  readonly namespace: string;
  readonly kinds: readonly HoldKind[];
  /** The API client, opened on first use; undefined when no API is configured. */
  readonly client: () => Promise<KubeClient | undefined>;
  readonly logger: Logger;
  /** What the deadline and the polls go by (the stop procedure's clock); the wall clock by default. */
  readonly clock?: Clock;
  /** How often the objects are listed while their finalizers run (default 250 ms). */
  readonly pollMs?: number;
}

export type NamespaceFinalizeOutcome =
  | { readonly outcome: 'not-terminating' | 'nothing' | 'no-api' | 'failed' | 'aborted' }
  | { readonly outcome: 'finalized'; readonly objects: readonly string[] }
  | { readonly outcome: 'left'; readonly left: readonly string[] };

const POLL_MS = 250;

/**
 * Before the drain: when this namespace is being deleted, deletes the listed
 * kinds' objects in it and waits until they are gone, by `deadline` (epoch ms)
 * or until `signal` aborts (a second termination signal).
 */
export async function finalizeNamespaceContent(
  o: NamespaceFinalizeOptions,
  deadline: number,
  signal?: AbortSignal,
): Promise<NamespaceFinalizeOutcome> {
  const { namespace, logger: log, clock = systemClock } = o;
  try {
    const client = await o.client();
    if (!client) return { outcome: 'no-api' };
    const call = { deadline, signal };
    let ns: KubeObject;
    try {
      ns = await client.get(
        { group: '', version: 'v1', resource: 'namespaces', kind: 'Namespace', namespaced: false, name: namespace },
        call,
      );
    } catch (err) {
      if (isStatus(err, 401, 403)) {
        // Info, not a warning: only a namespace deletion needs it, and installs from before this step lack the rule.
        log.info(
          'cannot tell whether this namespace is being deleted, so its custom resources are not finalized before the stop if it is: ' +
            'grant get on namespaces, resourceNames: [this namespace] (docs/namespace.md)',
          { namespace, status: err.status },
        );
        return { outcome: 'failed' };
      }
      throw err;
    }
    if (!ns.metadata.deletionTimestamp) return { outcome: 'not-terminating' };

    const refs: ResourceRef[] = [];
    for (const kind of o.kinds) {
      const ref = await resolveResource(client, kind.group, kind.plural, call);
      if (ref?.namespaced) refs.push(ref);
    }
    const listAll = async () =>
      (await Promise.all(refs.map(async (ref) => (await client.list(ref, namespace, call)).items.map((item) => ({ ref, item }))))).flat();
    const first = await listAll();
    if (first.length === 0) {
      log.info('namespace being deleted: none of the listed kinds left in it', { namespace, kinds: o.kinds.map(holdKindName) });
      return { outcome: 'nothing' };
    }
    const names = first.map(({ ref, item }) => nameOf(ref, item));
    const started = clock.now();
    log.info('namespace being deleted: deleting its custom resources while the operator runs, before the drain', {
      namespace,
      objects: names,
      deadline: new Date(deadline).toISOString(),
    });
    const refused: string[] = [];
    let refusal: unknown;
    for (const { ref, item } of first) {
      if (item.metadata.deletionTimestamp) continue;
      await client
        .delete({ ...ref, namespace, name: item.metadata.name! }, { ...call, body: { propagationPolicy: 'Background' } })
        .catch((err: unknown) => {
          if (isNotFound(err)) return;
          // Refused: before 1.33 the namespace controller deletes them with everything else (a Role that granted
          // this delete too, when it was not guarded), and the operator, still running, can finalize them then.
          if (!isStatus(err, 401, 403)) throw err;
          refused.push(nameOf(ref, item));
          refusal = err;
        });
    }
    if (refused.length > 0)
      log.warn(
        'namespace being deleted: deleting its custom resources was refused; waiting for the namespace controller to delete them: ' +
          'grant delete on them in a Role that drainguard guards (docs/namespace.md)',
        { namespace, objects: refused, error: refusal },
      );
    let left = first;
    while (left.length > 0) {
      if (signal?.aborted) return { outcome: 'aborted' };
      if (clock.now() + (o.pollMs ?? POLL_MS) >= deadline) {
        const objects = left.map(
          ({ ref, item }) => `${nameOf(ref, item)} (finalizers: ${(item.metadata.finalizers ?? []).join(', ') || 'none'})`,
        );
        log.warn('namespace being deleted: custom resources not finalized by the deadline; draining now, they are left', {
          namespace,
          left: objects,
        });
        return { outcome: 'left', left: objects };
      }
      await clock.sleep(o.pollMs ?? POLL_MS, signal);
      try {
        left = await listAll();
      } catch (err) {
        // A list the deadline cut short (a slow API server): what the last one found is what is left.
        if (signal?.aborted || clock.now() < deadline) throw err;
      }
    }
    log.info('namespace being deleted: its custom resources are finalized and gone', {
      namespace,
      objects: names,
      afterMs: clock.now() - started,
    });
    return { outcome: 'finalized', objects: names };
  } catch (err) {
    if (signal?.aborted) return { outcome: 'aborted' };
    log.warn('namespace being deleted: its custom resources could not be finalized before the stop', { namespace, error: err });
    return { outcome: 'failed' };
  }
}

const nameOf = (ref: ResourceRef, item: KubeObject) => `${ref.resource}.${ref.group}/${item.metadata.namespace}/${item.metadata.name}`;
