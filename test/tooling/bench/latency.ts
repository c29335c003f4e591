// SIGTERM → `drain` at the client, and `drained` → the stop signal at the
// child, each measured across process boundaries on the shared clock: the
// benchmark stamps the SIGTERM it sends, the operator stamps what it sees.
// The same two hops through a bare relay (fixtures/bare-relay.ts), run for
// run beside drainguard, are the floor: what the machine, Node.js and the
// operator fixture cost without drainguard.

import { type ChildProcess, spawn } from 'node:child_process';
import { loadavg } from 'node:os';
import { setTimeout as delay } from 'node:timers/promises';
import { nowMs } from '../../support/clock.ts';
import { Proc } from '../../support/proc.ts';
import { prng, seedOf } from '../../support/random.ts';
import { percentile } from '../../support/stats.ts';
import { event, reportedPid } from './lib/fixture-output.ts';
import { EXE, NODE, fixture } from './lib/paths.ts';

export interface LatencyOptions {
  readonly runs: number;
  readonly seed: number;
  /** Busy loops (one process each) running beside the measurement; 0: none of the benchmark's own. */
  readonly busyLoops?: number;
  /** Another drainguard executable (an earlier build), measured run for run beside this one. */
  readonly compare?: string;
}

/** The two hops, as percentiles over the runs (ms). */
export interface HopFigures {
  readonly drainLatencyMsP50: number;
  readonly drainLatencyMsP99: number;
  readonly drainLatencyMsMax: number;
  readonly killLatencyMsP50: number;
  readonly killLatencyMsP99: number;
  readonly killLatencyMsMax: number;
}

export interface LatencyResult extends HopFigures {
  readonly runs: number;
  readonly failedRuns: number;
  /** The same hops through a bare relay (fixtures/bare-relay.ts), run for run beside drainguard: the floor. */
  readonly floor: HopFigures;
  /** The same hops through LatencyOptions.compare, when given. */
  readonly compared?: HopFigures;
  readonly errors: string[];
  readonly busyLoops: number;
  /** The machine's 1-minute load average before and after (other work on it included). */
  readonly loadavg: readonly [number, number];
}

export async function runLatency(o: LatencyOptions, progress: (done: number, total: number) => void): Promise<LatencyResult> {
  const loops = busyLoops(o.busyLoops ?? 0);
  const before = loadavg()[0]!;
  try {
    return { ...(await measure(o, progress)), busyLoops: o.busyLoops ?? 0, loadavg: [round(before), round(loadavg()[0]!)] };
  } finally {
    for (const p of loops) p.kill('SIGKILL');
  }
}

const round = (x: number) => Math.round(x * 100) / 100;

/** N processes spinning on a CPU each, bounded in time: the load beside the measurement. */
function busyLoops(n: number): ChildProcess[] {
  return Array.from({ length: n }, () =>
    spawn(process.execPath, ['-e', 'const end = Date.now() + 600_000; while (Date.now() < end);'], { stdio: 'ignore' }),
  );
}

async function measure(
  o: LatencyOptions,
  progress: (done: number, total: number) => void,
): Promise<Omit<LatencyResult, 'busyLoops' | 'loadavg'>> {
  const drainguard: Hops = { drain: [], kill: [] };
  const bare: Hops = { drain: [], kill: [] };
  const compared: Hops = { drain: [], kill: [] };
  const errors: string[] = [];
  const rnd = prng(seedOf(o.seed, 0x1a7e));
  // One at a time: a second run starting up would compete for the two cores. Each drainguard
  // run is followed by one through the executable compared (if any) and one through the bare
  // relay, after the same idle time.
  for (let i = 0; i < o.runs; i++) {
    const settleMs = rnd.between(20, 120);
    try {
      const [d, k] = await runOnce([EXE, 'run', '--'], settleMs);
      const other = o.compare === undefined ? undefined : await runOnce([o.compare, 'run', '--'], settleMs);
      const [bd, bk] = await runOnce([NODE, fixture('bare-relay.ts')], settleMs);
      drainguard.drain.push(d);
      drainguard.kill.push(k);
      if (other) {
        compared.drain.push(other[0]);
        compared.kill.push(other[1]);
      }
      bare.drain.push(bd);
      bare.kill.push(bk);
    } catch (err) {
      errors.push((err as Error).message);
    }
    progress(i + 1, o.runs);
  }
  return {
    runs: drainguard.drain.length,
    failedRuns: errors.length,
    ...figures(drainguard),
    floor: figures(bare),
    ...(o.compare !== undefined && { compared: figures(compared) }),
    errors: [...new Set(errors)].slice(0, 5),
  };
}

interface Hops {
  readonly drain: number[];
  readonly kill: number[];
}

function figures({ drain, kill }: Hops): HopFigures {
  return {
    drainLatencyMsP50: percentile(drain, 50),
    drainLatencyMsP99: percentile(drain, 99),
    drainLatencyMsMax: percentile(drain, 100),
    killLatencyMsP50: percentile(kill, 50),
    killLatencyMsP99: percentile(kill, 99),
    killLatencyMsMax: percentile(kill, 100),
  };
}

/** One stop of the operator fixture under `supervisor` (drainguard run, or the bare relay). */
async function runOnce([file, ...args]: readonly string[], settleMs: number): Promise<[number, number]> {
  const proc = new Proc(file!, [...args, NODE, fixture('operator.ts')], { BENCH_MODE: 'latency' }, { detached: true });
  try {
    const [, , pid] = await event(proc, 'ready', 30_000);
    reportedPid(Number(pid));
    // Idle for a moment, as drainguard is when a pod is stopped.
    await delay(settleMs);
    const sentAt = nowMs();
    proc.kill('SIGTERM');
    const [, drainAt, drainedAt] = await event(proc, 'drain', 10_000);
    const [, termAt] = await event(proc, 'term', 10_000);
    await proc.exit(10_000);
    return [Number(drainAt) - sentAt, Number(termAt) - Number(drainedAt)];
  } finally {
    proc.killAll();
  }
}
