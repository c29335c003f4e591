// Kubernetes Events on the pod for the drain, so that `kubectl describe pod`
// tells the story. Best effort: a failure to write one is logged, never fatal.

import { type Clock, within } from '../clock.ts';
import type { PodEvent } from '../kube/event-recorder.ts';
import { type Logger, silentLogger } from '../log/logger.ts';
import type { DrainOutcome, DrainSource, Phase, SupervisorObserver } from '../supervisor/observer.ts';
import { stopCauseMessage } from '../supervisor/stop-cause.ts';

/** Writes one Event on this pod (kube/pod.ts provides it). */
export type RecordPodEvent = (event: PodEvent) => Promise<unknown> | void;

const ENDED: Record<DrainOutcome, { type: PodEvent['type']; reason: string; text: string }> = {
  drained: { type: 'Normal', reason: 'Drained', text: 'every operator client said drained' },
  disconnected: { type: 'Normal', reason: 'Drained', text: 'the operator clients drained or disconnected' },
  'no-client': { type: 'Normal', reason: 'Drained', text: 'no operator client was connected' },
  'child-exited': { type: 'Normal', reason: 'Drained', text: 'the operator exited' },
  idle: { type: 'Normal', reason: 'Drained', text: "no operator client was connected; the operator's metrics showed no reconcile running" },
  deadline: { type: 'Warning', reason: 'DrainTimedOut', text: 'the drain deadline passed before every operator client said drained' },
  'cut-short': { type: 'Warning', reason: 'DrainCutShort', text: 'a second termination signal cut the drain short' },
};

const SOURCE_TEXT: Record<DrainSource, string> = {
  signal: 'on the termination signal',
  socket: 'by the preStop hook (drainguard prestop)',
  http: 'by the httpGet preStop hook',
  eviction: 'by an eviction request (drainguard is its active responder)',
};

export interface DrainEventObserver extends SupervisorObserver {
  /** Resolves once the Events under way are written (or failed), or at `deadline` (epoch ms). */
  flush(deadline: number): Promise<void>;
  /** The release left this pod's finalizer on `objects`; `fix` frees them. */
  guardReleaseFailed(objects: readonly string[], fix: string): void;
  /** The hold let the Deployment go early; `reason` is finalized, timeout, foreground or orphan. */
  holdReleased(reason: string, message: string): void;
}

/** An observer that records DrainStarted and Drained / DrainTimedOut / DrainCutShort with the duration. */
function drainEventObserver(record: RecordPodEvent, clock: Clock, logger: Logger = silentLogger): DrainEventObserver {
  let source: DrainSource | undefined;
  const pending = new Set<Promise<unknown>>();
  const emit = (event: PodEvent) => {
    const written = Promise.resolve()
      .then(() => record(event))
      .catch((err: unknown) => logger.warn('could not record a Kubernetes Event', { reason: event.reason, error: err }));
    pending.add(written);
    void written.finally(() => pending.delete(written));
  };
  return {
    // The deadline is the stop's, on the stop's clock.
    flush: (deadline) => within(clock, Promise.all(pending), deadline - clock.now()),
    // The request that starts the drain is reported before phase('draining') (SupervisorObserver): its source is the one told.
    drainRequested: (s) => {
      source ??= s;
    },
    phase: (phase: Phase) => {
      if (phase !== 'draining') return;
      emit({ type: 'Normal', reason: 'DrainStarted', message: `drainguard started the drain${source ? ` ${SOURCE_TEXT[source]}` : ''}` });
    },
    guardReleaseFailed: (objects, fix) => {
      emit({
        type: 'Warning',
        reason: 'GuardReleaseFailed',
        message: `${objects.join(', ')} keep this pod's finalizer; once the pod is gone, \`${fix}\` (or the post-delete hook) removes it`,
      });
    },
    holdReleased: (reason, message) => {
      // timeout and foreground: the custom resources may be left unfinalized.
      emit({
        type: reason === 'finalized' || reason === 'orphan' ? 'Normal' : 'Warning',
        reason: 'HoldReleased',
        message: `${message} (reason ${reason})`,
      });
    },
    stopCause: (cause) => {
      // Warning when the deadline is only a bound, or the Pod could not be read.
      const sure = cause.proven && cause.cause !== 'unknown';
      emit({ type: sure ? 'Normal' : 'Warning', reason: 'StopCause', message: stopCauseMessage(cause) });
    },
    drainEnded: (outcome, durationMs) => {
      const e = ENDED[outcome];
      emit({
        type: e.type,
        reason: e.reason,
        message: `drain ended after ${(durationMs / 1000).toFixed(1)}s: ${e.text} (outcome ${outcome})`,
      });
    },
  };
}

/**
 * The drain Events of a pod whose API is opened later (after the operator was
 * started, so that it never waits for the Kubernetes client to load): Events
 * wait for `connect`, which hands over the recorder, or none when the API
 * cannot be had (they are dropped then). `clock` is the stop procedure's: the
 * flush's deadline is one of its moments.
 */
export function laterPodEvents(logger: Logger, clock: Clock): DrainEventObserver & { connect(record: RecordPodEvent | undefined): void } {
  let connect!: (record: RecordPodEvent | undefined) => void;
  const connected = new Promise<RecordPodEvent | undefined>((resolve) => (connect = resolve));
  return { ...drainEventObserver((event) => connected.then((record) => record?.(event)), clock, logger), connect };
}
