// Events on this pod through the Kubernetes API. The kube layer (and
// client-node with it) is loaded only when the pod is known by name.

import type { PodIdentity } from '../config/supervisor.ts';
import type { Logger } from '../log/logger.ts';
import type { PodEvent, RecordEvent } from './events.ts';

/**
 * Returns the recorder for Events on this pod, or undefined when the pod's name
 * and namespace are not given or no API is configured (Events are best effort).
 */
export async function openPodEvents(pod: PodIdentity, env: NodeJS.ProcessEnv, logger: Logger): Promise<RecordEvent | undefined> {
  if (pod.name === undefined || pod.namespace === undefined) return undefined;
  const [{ NoApiConfigError, loadApiAccess }, { KubeClient }, { createEventRecorder }, { RESOURCES }] = await Promise.all([
    import('../kube/config.ts'),
    import('../kube/client.ts'),
    import('../kube/events.ts'),
    import('../kube/objects.ts'),
  ]);
  let access;
  try {
    access = loadApiAccess(env);
  } catch (err) {
    if (!(err instanceof NoApiConfigError)) throw err;
    logger.info('no Kubernetes API configured: no Events on the pod', { reason: err.message });
    return undefined;
  }
  const record = createEventRecorder({ client: new KubeClient({ access, logger }), instance: pod.name, logger });
  const regarding = { ...RESOURCES.pod, name: pod.name, namespace: pod.namespace, uid: pod.uid };
  return (event: PodEvent) => record(regarding, event.type, event.reason, event.message);
}
