// Whether the operator container has stopped, as the Kubernetes API reports
// it: for a plain sidecar whose operator does not speak the drain protocol
// (no connection to watch close), or to be sure it has.

import type { KubeClient } from './client.ts';
import { isNotFound } from './errors.ts';
import { type KubeObject, RESOURCES } from './objects.ts';
import { sleep } from './retry.ts';
import type { Logger } from '../log/logger.ts';

export const POLL_INTERVAL_MS = 500;
/** Consecutive failed reads after which the API is given up on for this question. */
const MAX_FAILURES = 3;

interface PodShape extends KubeObject {
  spec?: { containers?: { name: string }[] };
  status?: { containerStatuses?: { name: string; state?: { terminated?: unknown } }[] };
}

/**
 * Returns a wait that resolves once every container in `names` is terminated
 * in the Pod's status (or the Pod is gone), and rejects when the API cannot
 * tell: the caller then goes by the operator's connections alone.
 */
export function containersTerminated(
  client: KubeClient,
  pod: { readonly name: string; readonly namespace: string },
  names: readonly string[],
  logger: Logger,
  intervalMs = POLL_INTERVAL_MS,
): (signal: AbortSignal) => Promise<void> {
  const ref = { ...RESOURCES.pod, name: pod.name, namespace: pod.namespace };
  return async (signal) => {
    let failures = 0;
    let announced = false;
    while (!signal.aborted) {
      let current: PodShape;
      try {
        current = await client.get<PodShape>(ref, { signal, retry: false });
        failures = 0;
      } catch (err) {
        if (signal.aborted) return;
        if (isNotFound(err)) return;
        if (++failures >= MAX_FAILURES) throw err;
        await sleep(intervalMs, signal);
        continue;
      }
      const containers = (current.spec?.containers ?? []).map((c) => c.name);
      const unknown = names.filter((n) => !containers.includes(n));
      if (unknown.length > 0) {
        throw new Error(`DRAINGUARD_OPERATOR_CONTAINER names ${unknown.join(', ')}, which is not a container of pod ${pod.namespace}/${pod.name} (it has ${containers.join(', ')})`);
      }
      const statuses = current.status?.containerStatuses ?? [];
      const running = names.filter((n) => !statuses.find((s) => s.name === n)?.state?.terminated);
      if (running.length === 0) {
        logger.info('operator container terminated', { containers: names });
        return;
      }
      if (!announced) logger.info('waiting for the Kubernetes API to report the operator container terminated', { containers: running });
      announced = true;
      await sleep(intervalMs, signal);
    }
  };
}
