// What the supervisors report as they go (for readiness, metrics and Events),
// and what they drive of the guard.

import type { StopCause } from './stop-cause.ts';

export type Phase = 'starting' | 'running' | 'draining' | 'stopping' | 'releasing' | 'exited';

/**
 * How a drain ended ('disconnected': some clients went away without saying drained;
 * 'idle': no client, and the operator's metrics said no reconcile was running).
 */
export type DrainOutcome = 'drained' | 'disconnected' | 'deadline' | 'no-client' | 'idle' | 'cut-short' | 'child-exited';

/**
 * Who asked for a drain: the termination signal, `drainguard prestop` on the socket, the httpGet preStop
 * route, or an Eviction that made drainguard its active responder (kube/eviction-request.ts).
 */
export type DrainSource = 'signal' | 'socket' | 'http' | 'eviction';

/**
 * What the stop procedure reports, each event from one place and in this order:
 * phase('starting') as the run begins; phase('running') once the operator is started; drainRequested for each
 * request, the one that starts the drain before phase('draining'); drainEnded
 * once, before phase('stopping'); then 'releasing' and 'exited'. (An operator
 * that exits by itself goes from 'running' to 'releasing'; a start called off,
 * to 'exited'.)
 */
export interface SupervisorObserver {
  phase?(phase: Phase): void;
  drainRequested?(source: DrainSource): void;
  drainEnded?(outcome: DrainOutcome, durationMs: number): void;
  /** Why the pod stops and the deadline drainguard goes by, once read from the Pod (again when a later read finds another cause). */
  stopCause?(cause: StopCause): void;
}

/**
 * What the stop procedure drives of the guard (guard/guard.ts provides it; the
 * composition root hands it in, so the supervisor never loads the guard).
 */
export interface GuardHandle {
  /** Sets the guard and keeps holding it in the background; never throws. */
  start(): void;
  /** Removes this pod's finalizers and its Lease, giving up at `deadline` (epoch ms); never throws. */
  release(deadline: number): Promise<void>;
}

/** One observer that passes every report on to each of `observers`; one that throws does not stop the others. */
export function combineObservers(...observers: readonly (SupervisorObserver | undefined)[]): SupervisorObserver {
  const present = observers.filter((o): o is SupervisorObserver => o !== undefined);
  const each = (call: (o: SupervisorObserver) => void) => {
    for (const o of present) {
      try {
        call(o);
      } catch {
        // Reporting is never allowed to disturb supervision.
      }
    }
  };
  return {
    phase: (phase) => each((o) => o.phase?.(phase)),
    drainRequested: (source) => each((o) => o.drainRequested?.(source)),
    drainEnded: (outcome, durationMs) => each((o) => o.drainEnded?.(outcome, durationMs)),
    stopCause: (cause) => each((o) => o.stopCause?.(cause)),
  };
}
