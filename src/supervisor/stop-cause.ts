// Why Kubernetes stops this pod, from what the Pod says at the signal (its
// deletion and its DisruptionTarget condition), and the words the log line and
// the Event use for it. Deadlines turns the cause into the kubelet's SIGKILL.

import type { Disruption, PodDeletion } from '../kube/pod.ts';

export type StopCauseKind =
  | 'node-shutdown'
  | 'node-pressure'
  | 'preemption'
  | 'taint-eviction'
  | 'eviction-api'
  | 'deletion'
  | 'force-deletion'
  | 'no-deletion'
  | 'unknown';

/** What the log line and the StopCause Event say: the cause, the SIGKILL drainguard goes by, and where that came from. */
export interface StopCause {
  readonly cause: StopCauseKind;
  readonly disruption?: Disruption;
  /** The kubelet's SIGKILL drainguard goes by (epoch ms). */
  readonly killAt: number;
  /** How long after the termination that is. */
  readonly graceMs: number;
  /** Where the deadline came from, in words. */
  readonly from: string;
  /** False when the deadline is the best bound drainguard can prove, not what the kubelet will do. */
  readonly proven: boolean;
}

/**
 * The kubelet's message on a pod it stops for a graceful node shutdown
 * (nodeShutdownMessage, pkg/kubelet/nodeshutdown); node-pressure eviction says
 * "The node was low on resource: …" under the same reason.
 */
const NODE_SHUTDOWN_MESSAGE = /imminent node shutdown/i;

/** The cause a reading of the Pod gives (`unknown`: no answer in time). */
export function stopCauseOf(reading: PodDeletion | { readonly state: 'unknown' }): StopCauseKind {
  if (reading.state === 'gone') return 'force-deletion';
  if (reading.state === 'unknown') return 'unknown';
  const d = reading.disruption;
  switch (d?.reason) {
    case 'TerminationByKubelet':
      return NODE_SHUTDOWN_MESSAGE.test(d.message) ? 'node-shutdown' : 'node-pressure';
    case 'PreemptionByScheduler':
      return 'preemption';
    case 'DeletionByTaintManager':
      return 'taint-eviction';
    case 'EvictionByEvictionAPI':
      return 'eviction-api';
  }
  if (reading.state === 'not-deleting' && reading.nodeShuttingDown) return 'node-shutdown';
  return reading.state === 'deleting' ? 'deletion' : 'no-deletion';
}

export const STOP_CAUSE_TEXT: Record<StopCauseKind, string> = {
  'node-shutdown': 'a graceful node shutdown',
  'node-pressure': 'a node-pressure eviction',
  preemption: "the scheduler's preemption",
  'taint-eviction': 'a taint-based eviction',
  'eviction-api': 'the Eviction API',
  deletion: 'a deletion',
  'force-deletion': 'a force deletion',
  'no-deletion': 'a termination without a deletion (a liveness probe, or a signal from someone else)',
  unknown: 'a termination the Pod could not be read for',
};

/** The StopCause Event's message. */
export function stopCauseMessage(c: StopCause): string {
  const condition = c.disruption
    ? ` (DisruptionTarget ${c.disruption.reason})`
    : c.cause === 'node-shutdown'
      ? ' (the Node: node is shutting down)'
      : '';
  return (
    `stopping for ${STOP_CAUSE_TEXT[c.cause]}${condition}: drainguard goes by the kubelet's SIGKILL ` +
    `${(c.graceMs / 1000).toFixed(1)}s after the termination, ${new Date(c.killAt).toISOString()}, from ${c.from}` +
    (c.proven ? '' : ' (the best bound drainguard can prove)')
  );
}
