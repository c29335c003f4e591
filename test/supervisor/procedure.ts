// The stop procedure under test: a StopProcedure on a clock the test moves,
// with a guard and Events that record what they were asked, and the phases
// it went through. Shared by the unit tier (stop-procedure.unit.test.ts, with
// a mode the test plays) and the tests with a real operator
// (stop-procedure.test.ts).
import * as assert from 'uvu/assert';
import { parseArgs } from '../../src/config/load.ts';
import { resolveSupervisorConfig } from '../../src/config/supervisor.ts';
import type { DrainServer } from '../../src/protocol/server.ts';
import { type GuardHandle, type Phase, type SupervisorObserver, combineObservers } from '../../src/supervisor/observer.ts';
import { type Mode, StopProcedure, type StopProcedureOptions } from '../../src/supervisor/stop-procedure.ts';
import { FakeClock, settle } from '../support/fake-clock.ts';

/** Kubebuilder's scaffold: terminationGracePeriodSeconds 10, stop timeout 5 s. */
export const SCAFFOLD = ['--grace-period=10s', '--stop-timeout=5s'];

function guardOf(clock: FakeClock) {
  const calls: string[] = [];
  const guard: GuardHandle = {
    start: () => void calls.push('guard start'),
    release: async (deadline) => void calls.push(`guard release by +${deadline - clock.now()}`),
  };
  return { guard, calls };
}

export function procedure(
  mode: Mode,
  flags: string[],
  options: Partial<StopProcedureOptions> & {
    command?: 'run' | 'sidecar';
    flags?: string[];
    onServer?: () => void;
    observer?: SupervisorObserver;
  } = {},
) {
  const clock = new FakeClock();
  const phases: Phase[] = [];
  const flushes: number[] = [];
  const { guard, calls } = guardOf(clock);
  let server: DrainServer | undefined;
  let listening!: () => void;
  const listens = new Promise<void>((r) => (listening = r));
  const p = new StopProcedure(
    resolveSupervisorConfig(parseArgs(options.command ?? 'run', [...(options.flags ?? SCAFFOLD), ...flags], {})),
    mode,
    {
      clock,
      guard,
      flushEvents: async (deadline) => void flushes.push(deadline - clock.now()),
      ...options,
    },
  );
  const running = p.run({
    observer: combineObservers({ phase: (phase) => phases.push(phase) }, options.observer),
    onServer: (s) => {
      server = s;
      options.onServer?.();
      listening();
    },
  });
  return { p, clock, phases, flushes, guardCalls: calls, running, listens, server: () => server! };
}

export const sigterm = () => process.kill(process.pid, 'SIGTERM');
export const until = async (check: () => boolean, what: string) => {
  for (let i = 0; i < 500 && !check(); i++) await settle();
  assert.ok(check(), what);
};
