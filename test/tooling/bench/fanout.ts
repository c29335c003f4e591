// Fan-out: N protocol clients connected when the drain starts; how long until
// every one of them has `drain`, and what drainguard's memory is with N open.
// Each run is followed by one through the bare relay (fixtures/bare-relay.ts)
// with the same clients: the floor, what the clients' own processes and the
// machine take to get a line to a thousand sockets and read it.

import { setTimeout as delay } from 'node:timers/promises';
import { nowMs } from '../../support/clock.ts';
import { Proc } from '../../support/proc.ts';
import { MiB, percentile } from '../../support/stats.ts';
import { reportedPid } from './lib/fixture-output.ts';
import { type Rss, rssOf, schedOf } from './lib/mem.ts';
import { EXE, NODE, fixture } from './lib/paths.ts';

export interface FanoutOptions {
  readonly sizes: readonly number[];
  /** Client processes the clients are spread over. */
  readonly procs: number;
  /** `raw`: minimal clients that stamp the drain as it arrives; `ts`: the TypeScript DrainClient. */
  readonly client: 'raw' | 'ts';
}

export interface FanoutEntry {
  readonly runs: number;
  readonly drainLatencyMsP50: number;
  readonly drainLatencyMsP99: number;
  /** The last client of a run had `drain` this long after the SIGTERM (worst run). */
  readonly allDrainedMsMax: number;
  readonly rssMiB: number;
  /** Of it, the memory drainguard allocated (the rest is its executable's pages). */
  readonly anonMiB: number;
  /** drainguard's CPU time from the SIGTERM until every client had `drain` (median run). */
  readonly drainguardCpuMs: number;
  /** How long drainguard was runnable but waiting for a CPU in that time (median run). */
  readonly drainguardWaitMs: number;
  /** The same through the bare relay, run for run beside drainguard. */
  readonly floor: { readonly drainLatencyMsP50: number; readonly drainLatencyMsP99: number; readonly allDrainedMsMax: number };
  readonly errors?: string[];
}

const DRAINGUARD = [EXE, 'run', '--'];
const BARE_RELAY = [NODE, fixture('bare-relay.ts')];

export const runsFor = (n: number): number => (n <= 10 ? 10 : n <= 100 ? 5 : 3);

export async function runFanout(o: FanoutOptions, progress: (label: string) => void): Promise<Record<string, FanoutEntry>> {
  const result: Record<string, FanoutEntry> = {};
  for (const n of o.sizes) {
    const latencies: number[] = [];
    const lasts: number[] = [];
    const rss: number[] = [];
    const anon: number[] = [];
    const cpu: number[] = [];
    const wait: number[] = [];
    const floor = { latencies: [] as number[], lasts: [] as number[] };
    const errors: string[] = [];
    for (let run = 0; run < runsFor(n); run++) {
      progress(`${n} clients, run ${run + 1}/${runsFor(n)}`);
      try {
        const r = await runOnce(DRAINGUARD, n, o.procs, o.client);
        latencies.push(...r.latencies);
        lasts.push(Math.max(...r.latencies));
        rss.push(r.rss.rss);
        anon.push(r.rss.anon);
        cpu.push(r.cpuMs);
        wait.push(r.waitMs);
        const bare = await runOnce(BARE_RELAY, n, o.procs, o.client);
        floor.latencies.push(...bare.latencies);
        floor.lasts.push(Math.max(...bare.latencies));
      } catch (err) {
        errors.push((err as Error).message);
      }
    }
    result[n] = {
      runs: lasts.length,
      drainLatencyMsP50: percentile(latencies, 50),
      drainLatencyMsP99: percentile(latencies, 99),
      allDrainedMsMax: percentile(lasts, 100),
      rssMiB: percentile(rss, 50) / MiB,
      anonMiB: percentile(anon, 50) / MiB,
      drainguardCpuMs: percentile(cpu, 50),
      drainguardWaitMs: percentile(wait, 50),
      floor: {
        drainLatencyMsP50: percentile(floor.latencies, 50),
        drainLatencyMsP99: percentile(floor.latencies, 99),
        allDrainedMsMax: percentile(floor.lasts, 100),
      },
      ...(errors.length > 0 && { errors: [...new Set(errors)].slice(0, 3) }),
    };
  }
  return result;
}

/** One drain of `n` clients under `supervisor` (drainguard run, or the bare relay). */
async function runOnce(
  supervisor: readonly string[],
  n: number,
  procs: number,
  client: string,
): Promise<{ latencies: number[]; rss: Rss; cpuMs: number; waitMs: number }> {
  const env = { BENCH_CLIENTS: String(n), BENCH_PROCS: String(procs), BENCH_CLIENT: client };
  const [file, ...args] = supervisor;
  const proc = new Proc(file!, [...args, NODE, fixture('clients.ts')], env, { detached: true });
  let ready = 0;
  const seen: number[] = [];
  let allReady!: () => void;
  let allSeen!: () => void;
  const readyP = new Promise<void>((r) => (allReady = r));
  const seenP = new Promise<void>((r) => (allSeen = r));
  proc.onLine((line) => {
    const [kind, ...rest] = line.split(' ');
    if (kind === 'main') reportedPid(Number(rest[0]));
    if (kind === 'ready') {
      reportedPid(Number(rest[1]));
      if ((ready += Number(rest[0])) === n) allReady();
    }
    if (kind === 'd') {
      seen.push(...rest.map(Number));
      if (seen.length === n) allSeen();
    }
  });
  try {
    await within(readyP, 60_000, `${n} clients connected`, proc);
    await delay(200);
    const rss = rssOf(proc.pid);
    const before = schedOf(proc.pid);
    const sentAt = nowMs();
    proc.kill('SIGTERM');
    await within(seenP, 30_000, `${n} clients drained`, proc);
    const after = schedOf(proc.pid);
    await proc.exit(30_000);
    return { latencies: seen.map((t) => t - sentAt), rss, cpuMs: after.cpuMs - before.cpuMs, waitMs: after.waitMs - before.waitMs };
  } finally {
    proc.killAll();
  }
}

async function within(p: Promise<void>, ms: number, what: string, proc: Proc): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: not after ${ms} ms`)), ms)));
  const exited = proc.exited.then(() => {
    throw new Error(`${what}: drainguard exited first; ${proc.stderr.slice(-3).join(' | ')}`);
  });
  try {
    await Promise.race([p, timeout, exited]);
  } finally {
    clearTimeout(timer);
  }
}
