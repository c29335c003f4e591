// What the supervisors report beyond SupervisorObserver, what the guard
// reports for readiness and metrics, and a fan-out to several observers.

import type { DrainOutcome, Phase, SupervisorObserver } from './observer.ts';

/** Who asked for a drain: the termination signal, `drainguard prestop` on the socket, or the httpGet preStop route. */
export type DrainSource = 'signal' | 'socket' | 'http';

export interface DrainguardObserver extends SupervisorObserver {
  drainRequested?(source: DrainSource): void;
}

/** What the guard reports, read at scrape time and by /readyz; the guard module provides it. */
export interface GuardStatus {
  /** True once every guarded object carries this pod's finalizer (readiness waits for it). */
  readonly set: boolean;
  /** Guarded objects that carry this pod's finalizer now. */
  readonly objectsHeld: number;
  /** Failed Kubernetes API calls since start. */
  readonly errors: number;
}

export type GuardStatusSource = () => GuardStatus;

/** One observer that passes every report on to each of `observers`; one that throws does not stop the others. */
export function combineObservers(...observers: readonly (DrainguardObserver | undefined)[]): DrainguardObserver {
  const present = observers.filter((o): o is DrainguardObserver => o !== undefined);
  const each = (call: (o: DrainguardObserver) => void) => {
    for (const o of present) {
      try {
        call(o);
      } catch {
        // Reporting is never allowed to disturb supervision.
      }
    }
  };
  return {
    phase: (phase: Phase) => each((o) => o.phase?.(phase)),
    drainEnded: (outcome: DrainOutcome, durationMs: number) => each((o) => o.drainEnded?.(outcome, durationMs)),
    drainRequested: (source: DrainSource) => each((o) => o.drainRequested?.(source)),
  };
}
