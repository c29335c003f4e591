// Orphans. A process whose parent exits is re-parented to the nearest child
// subreaper above it, else to PID 1 of its PID namespace, which must wait for
// it or it stays a zombie for good. Node.js waits only for the processes it
// started (libuv's waitpid for each), so drainguard cannot reap orphans itself.
// Its launcher does (src/install/launcher.S): as PID 1, or a child subreaper,
// it stays, as the init that reaps them, and runs drainguard as its child;
// the operator stays drainguard's child, so its exit status is only ever
// drainguard's to take. drainguard is PID 1 itself only when it was started
// some other way (the bare executable as a container's entrypoint), and then
// says so.

import type { Logger } from '../log/logger.ts';

/** Warns, once at start, when drainguard is PID 1: nothing reaps the operator's orphans then. */
export function warnIfNoReaper(log: Logger, pid = process.pid): void {
  if (pid !== 1) return;
  log.warn(
    'drainguard is PID 1 and cannot reap orphaned processes (Node.js waits only for the processes it started): ' +
      "the operator's orphans will stay zombies; start drainguard through its launcher, " +
      "DIR/drainguard of 'drainguard install DIR' or the drainguard image, which reaps them, or behind an init such as tini",
    { pid },
  );
}
