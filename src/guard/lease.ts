// This pod's holder Lease: created at start, renewed on every tick, taken over
// from an earlier run of the same pod, made again when someone deletes it, and
// deleted at the release. Owned by the Pod, so the garbage collector deletes it
// with the Pod: the holder's end, even after SIGKILL.

import type { Clock } from '../clock.ts';
import type { CallOptions, KubeClient } from '../kube/client.ts';
import { isNotFound, isStatus } from '../kube/errors.ts';
import { RESOURCES, microTime } from '../kube/objects.ts';
import type { Logger } from '../log/logger.ts';
import type { PodRef } from '../kube/pod.ts';
import type { LeaseObject } from './holders.ts';
import { GUARDS_ANNOTATION, MANAGED_BY, MANAGED_BY_LABEL, leaseNameFor } from './names.ts';

export interface HolderLeaseOptions {
  readonly client: KubeClient;
  readonly pod: PodRef;
  /** What this holder guards, for `drainguard status` (an annotation). */
  readonly guards: readonly string[];
  readonly durationMs: number;
  readonly logger: Logger;
  readonly clock: Pick<Clock, 'now'>;
}

export class HolderLease {
  readonly #o: HolderLeaseOptions;
  readonly #ref;
  #created = false;
  #held = false;

  constructor(options: HolderLeaseOptions) {
    this.#o = options;
    this.#ref = { ...RESOURCES.lease, namespace: options.pod.namespace, name: leaseNameFor(options.pod.uid) };
  }

  /** `namespace/name`, for the log. */
  get name(): string {
    return `${this.#ref.namespace}/${this.#ref.name}`;
  }

  /** The last renewal succeeded. */
  get held(): boolean {
    return this.#held;
  }

  /** Whether it may exist (it was created, or could have been): the release deletes it then. */
  get created(): boolean {
    return this.#created;
  }

  #body(): LeaseObject {
    const { pod, guards, durationMs, clock } = this.#o;
    const at = microTime(clock.now());
    return {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: {
        name: this.#ref.name,
        namespace: pod.namespace,
        labels: { [MANAGED_BY_LABEL]: MANAGED_BY },
        annotations: { [GUARDS_ANNOTATION]: guards.join(',') },
        ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: pod.name, uid: pod.uid }],
      },
      spec: { holderIdentity: pod.name, leaseDurationSeconds: Math.ceil(durationMs / 1000), acquireTime: at, renewTime: at },
    };
  }

  /** Creates or renews it; throws when the API refuses. */
  async hold(signal: AbortSignal): Promise<void> {
    const { client, pod, logger } = this.#o;
    const body = this.#body();
    try {
      if (this.#created) {
        // The label and the owner too: a sweeper counts this Lease only with both (holders.ts), so an edit that took them is undone.
        const { labels, ownerReferences } = body.metadata;
        await client.patch(
          this.#ref,
          { metadata: { labels, ownerReferences }, spec: { holderIdentity: body.spec!.holderIdentity, renewTime: body.spec!.renewTime } },
          'application/merge-patch+json',
          { signal },
        );
      } else {
        await client.create(RESOURCES.lease, pod.namespace, body, { signal });
        logger.info('holder Lease created', { lease: this.name });
      }
    } catch (err) {
      if (isNotFound(err) && this.#created) {
        this.#created = false;
        logger.warn('holder Lease was deleted: creating it again', { lease: this.name });
        return this.hold(signal);
      }
      if (!this.#created && isStatus(err, 409)) {
        // Left by an earlier run of this pod's container: take it over.
        const { metadata, spec } = body;
        await client.patch(
          this.#ref,
          { metadata: { labels: metadata.labels, annotations: metadata.annotations, ownerReferences: metadata.ownerReferences }, spec },
          'application/merge-patch+json',
          { signal },
        );
        logger.info('holder Lease taken over from an earlier run of this pod', { lease: this.name });
      } else {
        this.#held = false;
        throw err;
      }
    }
    this.#created = true;
    this.#held = true;
  }

  /** Deletes it; resolves with 'deleted', 'gone', or the error (never rejects). */
  delete(options: CallOptions): Promise<'deleted' | 'gone' | Error> {
    return this.#o.client.delete(this.#ref, options).then(
      () => 'deleted' as const,
      (err: unknown) => (isNotFound(err) ? ('gone' as const) : (err as Error)),
    );
  }
}
