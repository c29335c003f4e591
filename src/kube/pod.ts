// This pod, as the Kubernetes API tells it, for every command: its grace
// period, drainguard's container's stop signal, Events on it, and whether the
// operator container has terminated.
// The kube layer is loaded only when the pod is known by name.

import { ConfigError } from '../errors.ts';
import { DrainguardError } from '../errors.ts';
import type { Logger } from '../log/logger.ts';
import type { KubeClient } from './client.ts';
import { isNotFound } from './errors.ts';
import type { PodEvent } from './event-recorder.ts';
import { type KubeObject, RESOURCES } from './objects.ts';
import { ownContainer, readOwnMounts } from './own-container.ts';
import { sleep } from './retry.ts';

/** A pod, by name and UID: this one as the downward API tells it (DRAINGUARD_POD_*), where every part may be unset outside a pod. */
export interface PodRef {
  readonly name: string;
  readonly namespace: string;
  readonly uid: string;
}

export interface PodApi {
  /** Events on this pod; undefined without the pod's name or an API. */
  readonly recordEvent?: (event: PodEvent) => Promise<void>;
  /** The wait for the operator container to terminate; only with DRAINGUARD_OPERATOR_CONTAINER. */
  readonly operatorStopped?: (signal: AbortSignal) => Promise<void>;
  /** The Pod's terminationGracePeriodSeconds, in ms; undefined when it does not say. */
  readonly readGracePeriodMs?: () => Promise<number | undefined>;
  /** The Pod's deletion, as the API tells it within `timeoutMs`; rejects when it cannot. */
  readonly readDeletion?: (timeoutMs: number) => Promise<PodDeletion>;
  /** drainguard's container and its stop signal, once the Pod tells them (containerStopSignal); rejects when the API cannot. */
  readonly readStopSignal?: (signal: AbortSignal) => Promise<ContainerStopSignal>;
}

/**
 * drainguard's own container and the signal the runtime stops it with, as the
 * Pod says: the container's `lifecycle.stopSignal` (KEP-4960, alpha behind
 * ContainerStopSignals in 1.33-1.37: an API server without the gate drops it),
 * else its status's `stopSignal`, the one in effect (the kubelet reports it only
 * with the gate on, from a runtime that says it: the image's STOPSIGNAL included).
 */
export type ContainerStopSignal =
  | { readonly container: string; readonly signal: string; readonly from: 'spec' | 'status' }
  /** The container is known and running, but the Pod does not say its stop signal. */
  | { readonly container: string; readonly signal?: undefined }
  /** The Pod has several containers and drainguard's mounts name none of them. */
  | { readonly container?: undefined; readonly containers: readonly string[] };

/**
 * The Pod's DisruptionTarget condition (GA since 1.31): why Kubernetes stops it. Its reason is
 * TerminationByKubelet (a graceful node shutdown or node-pressure eviction: the kubelet stops
 * the pod itself, with no deletion), PreemptionByScheduler, DeletionByTaintManager or
 * EvictionByEvictionAPI (each with a deletion); its message tells node shutdown from pressure.
 */
export interface Disruption {
  readonly reason: string;
  readonly message: string;
}

/**
 * What the Pod says of its deletion. The kubelet kills at its deletionTimestamp
 * (the delete's time plus its grace period, in whole seconds), whatever the
 * spec's grace period: `kubectl delete --grace-period`, an eviction's
 * DeleteOptions, node-pressure eviction and node shutdown all shorten it.
 */
export type PodDeletion =
  | { readonly state: 'deleting'; readonly at: number; readonly graceMs?: number; readonly disruption?: Disruption }
  /**
   * A SIGTERM with no deletion: the kubelet stopping the pod itself (a node shutdown or pressure,
   * said by `disruption`; a liveness probe's kill, which says nothing), or someone else.
   */
  | {
      readonly state: 'not-deleting';
      readonly disruption?: Disruption;
      /** The Node's Ready condition says "node is shutting down" (read only when the Pod says nothing, and with `get` on nodes). */
      readonly nodeShuttingDown?: true;
      /** The shortest grace a probe of drainguard's container kills it with (probeGrace), when one sets its own. */
      readonly probeGrace?: ProbeGrace;
    }
  /** Force-deleted (grace 0): the kubelet still stops the containers with the spec's grace period. */
  | { readonly state: 'gone' };

/**
 * A probe's own terminationGracePeriodSeconds (GA in 1.27): a failing liveness probe (or a startup
 * probe, before the container has started) has the kubelet kill the container with it, not with the
 * Pod's, and with no deletion, so nothing else in the API tells it.
 */
export interface ProbeGrace {
  readonly probe: 'livenessProbe' | 'startupProbe';
  readonly container: string;
  readonly ms: number;
}

interface ProbeShape {
  readonly terminationGracePeriodSeconds?: unknown;
}
interface ProbedPod {
  spec?: {
    containers?: { name: string; livenessProbe?: ProbeShape; startupProbe?: ProbeShape }[];
    initContainers?: { name: string; restartPolicy?: string; livenessProbe?: ProbeShape; startupProbe?: ProbeShape }[];
  };
  status?: { containerStatuses?: { name: string; started?: unknown }[]; initContainerStatuses?: { name: string; started?: unknown }[] };
}

/**
 * The shortest grace a probe of drainguard's container (by its mounts, else the pod's only
 * long-running one) kills it with; a startup probe only while the container has not started (it
 * runs no more once it has). Undefined when no probe sets its own.
 */
export function probeGraceOf(pod: ProbedPod & { metadata?: { uid?: string } }, mountinfo: string): ProbeGrace | undefined {
  const spec = pod.spec ?? {};
  const name = ownContainer(spec, pod.metadata?.uid ?? '', mountinfo);
  const own = [...(spec.containers ?? []), ...(spec.initContainers ?? [])].find((c) => c.name === name);
  if (!own || name === undefined) return undefined;
  const status = [...(pod.status?.containerStatuses ?? []), ...(pod.status?.initContainerStatuses ?? [])].find((s) => s.name === name);
  let shortest: ProbeGrace | undefined;
  for (const probe of ['livenessProbe', 'startupProbe'] as const) {
    if (probe === 'startupProbe' && status?.started === true) continue;
    const seconds = own[probe]?.terminationGracePeriodSeconds;
    if (typeof seconds !== 'number' || !Number.isFinite(seconds) || seconds < 0) continue;
    if (!shortest || seconds * 1000 < shortest.ms) shortest = { probe, container: name, ms: seconds * 1000 };
  }
  return shortest;
}

/** The Pod's DisruptionTarget condition when it is true. */
export function disruptionOf(pod: { status?: { conditions?: unknown } }): Disruption | undefined {
  const conditions = Array.isArray(pod.status?.conditions) ? (pod.status.conditions as Record<string, unknown>[]) : [];
  const c = conditions.find((x) => x?.type === 'DisruptionTarget' && x.status === 'True');
  if (!c) return undefined;
  return { reason: typeof c.reason === 'string' ? c.reason : '', message: typeof c.message === 'string' ? c.message : '' };
}

/** Reads the Pod's deletion: one try, and one more while `deadline` leaves time. */
export async function readDeletion(
  client: KubeClient,
  pod: { readonly name: string; readonly namespace: string },
  deadline: number,
  /**
   * node: read the Node too when the Pod says nothing (only asked for with a node-shutdown budget: it needs `get` on nodes);
   * mountinfo: drainguard's mounts, which name its container (its probes' grace).
   */
  { node: readNode = false, mountinfo = '' }: { readonly node?: boolean; readonly mountinfo?: string } = {},
): Promise<PodDeletion> {
  const ref = { ...RESOURCES.pod, name: pod.name, namespace: pod.namespace };
  let current: KubeObject &
    ProbedPod & {
      metadata: { deletionGracePeriodSeconds?: unknown };
      spec?: { nodeName?: unknown };
      status?: { conditions?: unknown };
    };
  try {
    // Half the time for the first try, so that a lost request leaves room for a second.
    const first = Date.now() + Math.max(0, deadline - Date.now()) / 2;
    current = await client.get(ref, { retry: false, deadline: first }).catch((err: unknown) => {
      if (isNotFound(err) || Date.now() >= deadline) throw err;
      return client.get(ref, { retry: false, deadline });
    });
  } catch (err) {
    if (isNotFound(err)) return { state: 'gone' };
    throw err;
  }
  const at = Date.parse(current.metadata.deletionTimestamp ?? '');
  const disruption = disruptionOf(current);
  if (Number.isNaN(at)) {
    if (disruption) return { state: 'not-deleting', disruption };
    // The kubelet posts DisruptionTarget only once every container has terminated (mergePodStatus),
    // too late for a node shutdown; the Node says it at once. Optional: `get` on nodes.
    const node = typeof current.spec?.nodeName === 'string' ? current.spec.nodeName : undefined;
    const shutting = readNode && node !== undefined && (await nodeShuttingDown(client, node, deadline));
    const probeGrace = probeGraceOf(current, mountinfo);
    return { state: 'not-deleting', ...(shutting && { nodeShuttingDown: true }), ...(probeGrace && { probeGrace }) };
  }
  const seconds = current.metadata.deletionGracePeriodSeconds;
  return {
    state: 'deleting',
    at,
    graceMs: typeof seconds === 'number' && seconds >= 0 ? seconds * 1000 : undefined,
    ...(disruption && { disruption }),
  };
}

/** Whether the Node's Ready condition says the kubelet is running a graceful shutdown; false when it cannot be read. */
async function nodeShuttingDown(client: KubeClient, name: string, deadline: number): Promise<boolean> {
  try {
    const node = await client.get<KubeObject & { status?: { conditions?: unknown } }>(
      { ...RESOURCES.node, name },
      { retry: false, deadline },
    );
    const conditions = Array.isArray(node.status?.conditions) ? (node.status.conditions as Record<string, unknown>[]) : [];
    const ready = conditions.find((c) => c?.type === 'Ready');
    return ready?.status !== 'True' && typeof ready?.message === 'string' && /node is shutting down/.test(ready.message);
  } catch {
    return false;
  }
}

/** How long reading the Pod's grace period may take in all. */
const GRACE_READ_TIMEOUT_MS = 10_000;

export async function openPodApi(
  pod: Partial<PodRef>,
  operatorContainers: readonly string[],
  env: NodeJS.ProcessEnv,
  logger: Logger,
  /** readNode: a stop without a deletion also reads the Node (DRAINGUARD_NODE_SHUTDOWN_GRACE set: the user may grant `get` on nodes). */
  { readNode = false }: { readonly readNode?: boolean } = {},
): Promise<PodApi> {
  const needed = operatorContainers.length > 0;
  if (pod.name === undefined || pod.namespace === undefined) {
    if (needed)
      throw new ConfigError(
        'DG_CONFIG_POD_MISSING',
        'DRAINGUARD_OPERATOR_CONTAINER is set, so drainguard needs to know its pod: ' +
          'set DRAINGUARD_POD_NAME and DRAINGUARD_POD_NAMESPACE from the downward API (metadata.name, metadata.namespace)',
      );
    return {};
  }
  const [{ NoApiConfigError, loadApiAccess }, { KubeClient }, { createEventRecorder }] = await Promise.all([
    import('./config.ts'),
    import('./client.ts'),
    import('./event-recorder.ts'),
  ]);
  let access;
  try {
    access = await loadApiAccess(env);
  } catch (err) {
    if (needed)
      throw new ConfigError(
        'DG_CONFIG_NO_API',
        `DRAINGUARD_OPERATOR_CONTAINER is set, so drainguard needs the Kubernetes API: ${(err as Error).message}`,
        { cause: err },
      );
    if (!(err instanceof NoApiConfigError)) throw err;
    logger.info('no Kubernetes API configured: no Events on the pod', { reason: err.message });
    return {};
  }
  const client = new KubeClient({ access, logger });
  const record = createEventRecorder({ client, instance: pod.name, logger });
  const regarding = { ...RESOURCES.pod, name: pod.name, namespace: pod.namespace, uid: pod.uid };
  return {
    readGracePeriodMs: async () => {
      const current = await client.get<KubeObject & { spec?: { terminationGracePeriodSeconds?: unknown } }>(regarding, {
        deadline: Date.now() + GRACE_READ_TIMEOUT_MS,
      });
      const seconds = current.spec?.terminationGracePeriodSeconds;
      return typeof seconds === 'number' && Number.isFinite(seconds) && seconds >= 0 ? seconds * 1000 : undefined;
    },
    readDeletion: (timeoutMs) =>
      readDeletion(client, { name: pod.name!, namespace: pod.namespace! }, Date.now() + timeoutMs, {
        node: readNode,
        mountinfo: readOwnMounts(),
      }),
    readStopSignal: (signal) => containerStopSignal(client, { name: pod.name!, namespace: pod.namespace! }, readOwnMounts(), signal),
    recordEvent: (event: PodEvent) => record(regarding, event.type, event.reason, event.message),
    operatorStopped: needed
      ? containersTerminated(client, { name: pod.name, namespace: pod.namespace }, operatorContainers, logger)
      : undefined,
  };
}

// ---- drainguard's container's stop signal

/** How often, and how many times, the Pod is read until the kubelet has reported drainguard's container running. */
export const STOP_SIGNAL_READ_INTERVAL_MS = 1000;
const STOP_SIGNAL_READS = 30;

interface StopSignalShape extends KubeObject {
  spec?: {
    containers?: { name: string; lifecycle?: { stopSignal?: unknown } }[];
    initContainers?: { name: string; restartPolicy?: string; lifecycle?: { stopSignal?: unknown } }[];
  };
  status?: {
    containerStatuses?: { name: string; stopSignal?: unknown; state?: { running?: unknown; terminated?: unknown } }[];
    initContainerStatuses?: { name: string; stopSignal?: unknown; state?: { running?: unknown; terminated?: unknown } }[];
  };
}

/**
 * drainguard's container's stop signal: its spec's at the first read; else its
 * status's, read again every second until the kubelet has reported the container
 * started (drainguard runs before the kubelet posts that status), 30 reads at most.
 * Rejects after three failed reads in a row.
 */
export async function containerStopSignal(
  client: KubeClient,
  pod: { readonly name: string; readonly namespace: string },
  mountinfo: string,
  signal: AbortSignal,
  intervalMs = STOP_SIGNAL_READ_INTERVAL_MS,
): Promise<ContainerStopSignal> {
  const ref = { ...RESOURCES.pod, name: pod.name, namespace: pod.namespace };
  let failures = 0;
  let container: string | undefined;
  for (let read = 1; ; read++) {
    let current: StopSignalShape;
    try {
      current = await client.get<StopSignalShape>(ref, { signal, retry: false });
      failures = 0;
    } catch (err) {
      if (signal.aborted || ++failures >= MAX_FAILURES) throw err;
      await sleep(intervalMs, signal);
      continue;
    }
    const spec = current.spec ?? {};
    container ??= ownContainer(spec, current.metadata.uid ?? '', mountinfo);
    if (container === undefined) return { containers: [...(spec.containers ?? []), ...(spec.initContainers ?? [])].map((c) => c.name) };
    const own = [...(spec.containers ?? []), ...(spec.initContainers ?? [])].find((c) => c.name === container);
    const fromSpec = own?.lifecycle?.stopSignal;
    if (typeof fromSpec === 'string' && fromSpec !== '') return { container, signal: fromSpec, from: 'spec' };
    const status = [...(current.status?.containerStatuses ?? []), ...(current.status?.initContainerStatuses ?? [])].find(
      (s) => s.name === container,
    );
    if (typeof status?.stopSignal === 'string' && status.stopSignal !== '') return { container, signal: status.stopSignal, from: 'status' };
    if (status?.state?.running || status?.state?.terminated || read >= STOP_SIGNAL_READS) return { container };
    await sleep(intervalMs, signal);
  }
}

// ---- the operator container's state

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
        throw new DrainguardError(
          'DG_KUBE_CONTAINER',
          `DRAINGUARD_OPERATOR_CONTAINER names ${unknown.join(', ')}, ` +
            `which is not a container of pod ${pod.namespace}/${pod.name} (it has ${containers.join(', ')})`,
        );
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
