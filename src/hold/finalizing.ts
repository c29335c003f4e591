// The listed kinds' objects that are being deleted and still carry a
// finalizer other than drainguard's: what the hold waits for. Each kind's
// version and scope come from discovery (src/kube/discovery.ts); a kind
// whose CRD is gone or not served has nothing left to finalize.

import type { HoldKind } from '../config/hold-list.ts';
import { holdKindName } from '../config/hold-list.ts';
import type { KubeClient } from '../kube/client.ts';
import { isNotFound, isStatus } from '../kube/errors.ts';
import type { ResourceRef } from '../kube/objects.ts';
import { resolveResource } from '../kube/discovery.ts';
import type { Finalizing } from './decide.ts';

const OURS = 'drainguard.dev/';

interface Served {
  readonly ref: ResourceRef;
}

export interface FinalizingList {
  /** undefined when some kind could not be listed (errors says why). */
  readonly finalizing?: readonly Finalizing[];
  readonly errors: readonly { readonly kind: string; readonly error: Error }[];
}

export class FinalizingObjects {
  readonly #client: KubeClient;
  readonly #kinds: readonly HoldKind[];
  readonly #namespace: string;
  /** By kind: its resource, or null when not served. Asked again after a 404. */
  readonly #served = new Map<string, Served | null>();

  constructor(client: KubeClient, kinds: readonly HoldKind[], namespace: string) {
    this.#client = client;
    this.#kinds = kinds;
    this.#namespace = namespace;
  }

  async list(signal?: AbortSignal): Promise<FinalizingList> {
    const errors: { kind: string; error: Error }[] = [];
    const found = await Promise.all(
      this.#kinds.map(async (kind) => {
        try {
          return await this.#finalizingOf(kind, signal);
        } catch (err) {
          errors.push({ kind: holdKindName(kind), error: err as Error });
          return [];
        }
      }),
    );
    return { ...(errors.length === 0 && { finalizing: found.flat() }), errors };
  }

  async #finalizingOf(kind: HoldKind, signal?: AbortSignal): Promise<Finalizing[]> {
    const served = await this.#resolve(kind, signal);
    if (!served) return [];
    let items;
    try {
      items = (await this.#client.list(served.ref, undefined, { signal, retry: false })).items;
    } catch (err) {
      if (isNotFound(err)) {
        // The CRD went since discovery: nothing of it is left.
        this.#served.delete(holdKindName(kind));
        return [];
      }
      // A namespaced kind may be granted in this namespace only (a Role).
      if (!(served.ref.namespaced && isStatus(err, 403))) throw err;
      items = (await this.#client.list(served.ref, this.#namespace, { signal, retry: false })).items;
    }
    return items
      .filter((o) => o.metadata.deletionTimestamp && (o.metadata.finalizers ?? []).some((f) => !f.startsWith(OURS)))
      .map((o) => ({
        object: `${holdKindName(kind)}/${o.metadata.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata.name}`,
        finalizers: (o.metadata.finalizers ?? []).filter((f) => !f.startsWith(OURS)),
      }));
  }

  /** The kind's version and scope, from discovery; null when the group or the resource is not served. */
  async #resolve(kind: HoldKind, signal?: AbortSignal): Promise<Served | null> {
    const name = holdKindName(kind);
    const known = this.#served.get(name);
    if (known !== undefined) return known;
    const ref = await resolveResource(this.#client, kind.group, kind.plural, { signal, retry: false });
    const served = ref ? { ref } : null;
    // Not served: asked again next time, in case the CRD is being created.
    if (served) this.#served.set(name, served);
    return served;
  }
}
