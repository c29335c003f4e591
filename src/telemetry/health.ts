// Readiness as lightship and terminus have it: ready while the supervisor runs
// and the guard is set; not ready from the moment the drain starts, for good.

import type { Phase, SupervisorObserver } from '../supervisor/observer.ts';
import type { GuardReport } from '../guard/guard.ts';

export interface Readiness {
  readonly ready: boolean;
  /** Why not, in a few words. */
  readonly reason: string;
}

export class Health implements SupervisorObserver {
  #phase: Phase = 'starting';
  readonly #guard?: () => GuardReport;

  constructor(guard?: () => GuardReport) {
    this.#guard = guard;
  }

  phase(phase: Phase): void {
    this.#phase = phase;
  }

  readiness(): Readiness {
    if (this.#phase === 'starting') return { ready: false, reason: 'starting' };
    if (this.#phase !== 'running') return { ready: false, reason: this.#phase };
    if (this.#guard && !this.#guard().set) return { ready: false, reason: 'guard not set yet' };
    return { ready: true, reason: 'ready' };
  }
}
