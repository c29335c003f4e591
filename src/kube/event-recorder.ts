// Kubernetes Events, best effort: what drainguard did shows in `kubectl
// describe` and `kubectl get events`; a failure to record one is logged and
// never gets in the way.

import { isStatus } from './errors.ts';
import { type Clock, systemClock } from '../clock.ts';
import { type Logger, silentLogger } from '../log/logger.ts';
import type { KubeClient } from './client.ts';
import { RESOURCES, type ObjectRef, apiVersion } from './objects.ts';

export type EventType = 'Normal' | 'Warning';

/** An Event on drainguard's own pod. */
export interface PodEvent {
  readonly type: EventType;
  /** UpperCamelCase, as Kubernetes reasons are. */
  readonly reason: string;
  readonly message: string;
}

export interface Regarding extends ObjectRef {
  readonly uid?: string;
}

export interface EventRecorderOptions {
  readonly client: KubeClient;
  /** Reporting component (default "drainguard"). */
  readonly component?: string;
  /** Reporting instance, such as the pod name. */
  readonly instance?: string;
  readonly logger?: Logger;
  /** What an Event's time and its deadline are read on; the wall clock by default. */
  readonly clock?: Pick<Clock, 'now'>;
  /** How long one attempt to record may take in all (default 5 s). */
  readonly timeoutMs?: number;
}

export type EventRecorder = (regarding: Regarding, type: EventType, reason: string, message: string) => Promise<void>;

/** Returns `recordEvent`, which never rejects. */
export function createEventRecorder({
  client,
  component = 'drainguard',
  instance,
  logger = silentLogger,
  clock = systemClock,
  timeoutMs = 5_000,
}: EventRecorderOptions): EventRecorder {
  return async (regarding, type, reason, message) => {
    const at = clock.now();
    const time = new Date(at).toISOString();
    const namespace = regarding.namespace ?? 'default';
    const event = {
      metadata: { name: `${regarding.name}.${(BigInt(at) * 1_000_000n).toString(16)}`, namespace },
      involvedObject: {
        apiVersion: apiVersion(regarding),
        kind: regarding.kind,
        name: regarding.name,
        ...(regarding.namespace !== undefined && { namespace: regarding.namespace }),
        ...(regarding.uid !== undefined && { uid: regarding.uid }),
      },
      type,
      reason,
      message,
      count: 1,
      firstTimestamp: time.replace(/\.\d{3}Z$/, 'Z'),
      lastTimestamp: time.replace(/\.\d{3}Z$/, 'Z'),
      source: { component, ...(instance !== undefined && { host: instance }) },
      reportingComponent: component,
      reportingInstance: instance ?? component,
    };
    try {
      await client.create(RESOURCES.event, namespace, event, { deadline: at + timeoutMs, retry: { maxAttempts: 2 } });
    } catch (err) {
      // The namespace is being deleted (kubectl delete -f of a manifest with it): no Event can be written there, and
      // nobody is left to read one; nothing is wrong with drainguard's setup.
      const terminating = isStatus(err, 403) && /because it is being terminated/.test((err as Error).message);
      logger[terminating ? 'debug' : 'warn']('could not record a Kubernetes Event', {
        reason,
        regarding: `${regarding.kind}/${regarding.name}`,
        error: (err as Error).message,
      });
    }
  };
}
