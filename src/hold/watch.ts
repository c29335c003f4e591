// One watch on the hold's Deployment, by name: what the hold costs at idle.
// A list by fieldSelector gives its state and a resourceVersion; the watch
// resumes from the last one seen (bookmarks keep it fresh) every time the
// server ends it after timeoutSeconds, and lists again on 410 Gone.

import type { Clock } from '../clock.ts';
import type { KubeClient, WatchEvent } from '../kube/client.ts';
import { isStatus } from '../kube/errors.ts';
import { type KubeObject, RESOURCES } from '../kube/objects.ts';
import { KEEP_TRYING, backoff } from '../kube/retry.ts';
import type { DeploymentTarget } from './deployment.ts';

/** How long the server keeps one watch open: client-go's reflector picks 5 to 10 minutes. */
export const WATCH_SECONDS = 300;

export interface DeploymentWatchOptions {
  readonly client: KubeClient;
  readonly target: DeploymentTarget;
  /** Each state seen: the object, or null once it is gone (or another object took its name). */
  readonly onObject: (deployment: KubeObject | null) => void;
  /** A failed list or watch (the watch goes on after a backoff). */
  readonly onError: (error: Error) => void;
  /** The first success after failures. */
  readonly onRecovered?: () => void;
  readonly signal: AbortSignal;
  /** What the backoff after a failure sleeps on. */
  readonly clock: Clock;
  readonly watchSeconds?: number;
}

/** Runs until `signal` aborts or the Deployment is gone. */
export async function watchDeployment(o: DeploymentWatchOptions): Promise<void> {
  const { client, target, signal } = o;
  const query = { fieldSelector: `metadata.name=${target.name}` };
  let resourceVersion: string | undefined;
  let failures = 0;
  const seen = (d: KubeObject | null): boolean => {
    const gone = d === null || d.metadata.uid !== target.uid;
    o.onObject(gone ? null : d);
    return gone;
  };
  while (!signal.aborted) {
    try {
      if (resourceVersion === undefined) {
        const list = await client.list(RESOURCES.deployment, target.namespace, { query, signal, retry: false });
        if (seen(list.items[0] ?? null)) return;
        resourceVersion = list.metadata?.resourceVersion;
      }
      let gone = false;
      await client.watch(
        RESOURCES.deployment,
        target.namespace,
        { ...query, resourceVersion, allowWatchBookmarks: 'true', timeoutSeconds: String(o.watchSeconds ?? WATCH_SECONDS) },
        (e: WatchEvent) => {
          resourceVersion = e.object.metadata.resourceVersion ?? resourceVersion;
          if (e.type === 'BOOKMARK' || gone) return;
          gone = seen(e.type === 'DELETED' ? null : e.object);
        },
        { signal },
      );
      if (failures > 0) o.onRecovered?.();
      failures = 0;
      if (gone) return;
    } catch (err) {
      if (signal.aborted) return;
      if (isStatus(err, 410)) {
        resourceVersion = undefined;
        continue;
      }
      failures++;
      resourceVersion = undefined;
      o.onError(err as Error);
      await o.clock.sleep(backoff(KEEP_TRYING, failures), signal);
    }
  }
}
