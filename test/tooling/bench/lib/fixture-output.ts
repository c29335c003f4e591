// What the benchmark's fixtures print on stdout: event lines `NAME FIELD...`
// (timestamps on the shared clock, test/support/clock.ts, and pids). The pids
// are of grandchildren that no kill of the benchmark's own children reaches
// (drainguard starts its operator in a session of its own); they are killed
// too when the benchmark is interrupted.

import type { Proc } from '../../../support/proc.ts';

const reported = new Set<number>();

/** The fields of the first stdout line `NAME ...` (already printed or still to come), NAME first. */
export async function event(p: Proc, name: string, ms: number): Promise<string[]> {
  return (await p.line(new RegExp(`^${name}( |$)`), ms)).split(' ');
}

/** Remembers a pid a fixture reported, so that an interrupted benchmark leaves nothing behind. */
export function reportedPid(pid: number): void {
  if (Number.isSafeInteger(pid) && pid > 0) reported.add(pid);
}

/** SIGKILL to the reported pids and their process groups (the benchmark's own children go at its exit, test/support/proc.ts). */
export function killReported(): void {
  for (const pid of reported) {
    for (const target of [-pid, pid]) {
      try {
        process.kill(target, 'SIGKILL');
      } catch {}
    }
  }
  reported.clear();
}
