// What the sidecar asks of the Kubernetes API besides the guard: Events on its
// pod, and whether the operator container has terminated. The kube layer (and
// client-node with it) is loaded only when the pod is known by name.

import { ConfigError } from '../config/errors.ts';
import type { PodIdentity } from '../config/supervisor.ts';
import type { KubeObject } from './objects.ts';
import type { Logger } from '../log/logger.ts';
import type { PodEvent, RecordEvent } from '../telemetry/pod-events.ts';

export interface PodApi {
  /** Events on this pod; undefined without the pod's name or an API. */
  readonly recordEvent?: RecordEvent;
  /** The wait for the operator container to terminate; only with DRAINGUARD_OPERATOR_CONTAINER. */
  readonly operatorStopped?: (signal: AbortSignal) => Promise<void>;
  /** The Pod's terminationGracePeriodSeconds, in ms; undefined when it does not say. */
  readonly readGracePeriodMs?: () => Promise<number | undefined>;
}

/** How long reading the Pod's grace period may take in all. */
const GRACE_READ_TIMEOUT_MS = 10_000;

export async function openPodApi(pod: PodIdentity, operatorContainers: readonly string[], env: NodeJS.ProcessEnv, logger: Logger): Promise<PodApi> {
  const needed = operatorContainers.length > 0;
  if (pod.name === undefined || pod.namespace === undefined) {
    if (needed) throw new ConfigError('DRAINGUARD_OPERATOR_CONTAINER is set, so drainguard needs to know its pod: set DRAINGUARD_POD_NAME and DRAINGUARD_POD_NAMESPACE from the downward API (metadata.name, metadata.namespace)');
    return {};
  }
  const [{ NoApiConfigError, loadApiAccess }, { KubeClient }, { createEventRecorder }, { RESOURCES }, { containersTerminated }] = await Promise.all([
    import('./config.ts'),
    import('./client.ts'),
    import('./event-recorder.ts'),
    import('./objects.ts'),
    import('./pod-containers.ts'),
  ]);
  let access;
  try {
    access = loadApiAccess(env);
  } catch (err) {
    if (needed) throw new ConfigError(`DRAINGUARD_OPERATOR_CONTAINER is set, so drainguard needs the Kubernetes API: ${(err as Error).message}`);
    if (!(err instanceof NoApiConfigError)) throw err;
    logger.info('no Kubernetes API configured: no Events on the pod', { reason: err.message });
    return {};
  }
  const client = new KubeClient({ access, logger });
  const record = createEventRecorder({ client, instance: pod.name, logger });
  const regarding = { ...RESOURCES.pod, name: pod.name, namespace: pod.namespace, uid: pod.uid };
  return {
    readGracePeriodMs: async () => {
      const current = await client.get<KubeObject & { spec?: { terminationGracePeriodSeconds?: unknown } }>(regarding, { deadline: Date.now() + GRACE_READ_TIMEOUT_MS });
      const seconds = current.spec?.terminationGracePeriodSeconds;
      return typeof seconds === 'number' && Number.isFinite(seconds) && seconds >= 0 ? seconds * 1000 : undefined;
    },
    recordEvent: (event: PodEvent) => record(regarding, event.type, event.reason, event.message),
    operatorStopped: needed ? containersTerminated(client, { name: pod.name, namespace: pod.namespace }, operatorContainers, logger) : undefined,
  };
}

/**
 * Hands `use` the Pod's terminationGracePeriodSeconds once the API tells it.
 * The kubelet kills at the Pod's grace period whatever drainguard was told, so
 * it wins over the configured one, except where an explicit setting is
 * shorter (a budget the user chose). A failure to read it is logged and
 * leaves the configured one in force.
 */
export function adoptPodGracePeriod(api: PodApi, configured: { readonly ms: number; readonly source?: string }, logger: Logger, use: (ms: number) => void): void {
  if (!api.readGracePeriodMs) return;
  api.readGracePeriodMs().then(
    (ms) => {
      if (ms === undefined) return;
      if (configured.source === undefined) return use(ms);
      if (ms >= configured.ms) return;
      logger.warn(`${configured.source} is longer than the Pod's terminationGracePeriodSeconds, and the kubelet kills at the Pod's: going by the Pod's`, {
        gracePeriodMs: ms,
        configuredMs: configured.ms,
      });
      use(ms);
    },
    (err: unknown) => logger.warn('could not read the grace period from the Pod: going by DRAINGUARD_GRACE_PERIOD', { gracePeriodMs: configured.ms, error: err }),
  );
}
