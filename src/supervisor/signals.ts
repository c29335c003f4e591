// Which signals drainguard catches is config/signals.ts's table; this is what
// the supervising commands do with them once a run is over.

import { CATCHABLE } from '../config/signals.ts';

/**
 * Once the run has removed its handlers, no signal it caught changes anything:
 * the exit status is decided (the operator is gone, the guard released), and a
 * late SIGTERM must not turn it into 143 while telemetry closes or Events are
 * flushed, nor a late SIGUSR1 open Node's inspector, nor SIGQUIT or SIGUSR2
 * end drainguard by their default action. Installed with the run's own
 * handlers, not after them: between the run's removal and a later install the
 * default action would act.
 */
export function holdCaughtSignals(): void {
  for (const sig of CATCHABLE) process.on(sig, () => {});
}
