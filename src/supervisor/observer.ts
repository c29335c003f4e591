// What the supervisors report as they go, for readiness and metrics.

export type Phase = 'starting' | 'running' | 'draining' | 'stopping' | 'releasing' | 'exited';

/** How a drain ended ('disconnected': some clients went away without saying drained). */
export type DrainOutcome = 'drained' | 'disconnected' | 'deadline' | 'no-client' | 'cut-short' | 'child-exited';

export interface SupervisorObserver {
  phase?(phase: Phase): void;
  drainEnded?(outcome: DrainOutcome, durationMs: number): void;
}

/** The part of the guard a supervisor drives; the guard module provides it. */
export interface GuardHandle {
  /** Sets the guard and keeps holding it in the background; never throws. */
  start(): void;
  /** Removes this pod's finalizers and its Lease, giving up at `deadline` (epoch ms); never throws. */
  release(deadline: number): Promise<void>;
}
