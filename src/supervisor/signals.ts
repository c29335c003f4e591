// Which signals drainguard catches and what it does with each.

/** Start the drain (first), cut it short (second). */
export const TERMINATING: readonly NodeJS.Signals[] = ['SIGTERM', 'SIGINT'];

/** Job control from a terminal: the child is stopped with SIGSTOP, then drainguard stops itself. */
export const JOB_CONTROL: readonly NodeJS.Signals[] = ['SIGTSTP', 'SIGTTIN', 'SIGTTOU'];

/**
 * Passed to the child unchanged. Not here, besides SIGKILL, SIGSTOP, SIGCHLD
 * and the ones above: SIGSEGV, SIGBUS, SIGFPE and SIGILL (a handler would turn
 * a real fault of drainguard into an endless loop) and SIGPIPE (the kernel
 * raises it in drainguard itself when a protocol client vanishes mid-write).
 */
export const FORWARDED: readonly NodeJS.Signals[] = [
  'SIGHUP',
  'SIGQUIT',
  'SIGTRAP',
  'SIGABRT',
  'SIGUSR1',
  'SIGUSR2',
  'SIGALRM',
  'SIGSTKFLT',
  'SIGCONT',
  'SIGURG',
  'SIGXCPU',
  'SIGXFSZ',
  'SIGVTALRM',
  'SIGPROF',
  'SIGWINCH',
  'SIGIO',
  'SIGPWR',
  'SIGSYS',
];

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
  for (const sig of [...TERMINATING, ...JOB_CONTROL, ...FORWARDED]) process.on(sig, () => {});
}
