// Fan-out: N protocol clients connected when the drain starts; how long until
// every one of them has `drain`, and what drainguard's memory is with N open.

import { setTimeout as delay } from 'node:timers/promises';
import { EXE, NODE, fixture } from './lib/paths.ts';
import { rssOf } from './lib/mem.ts';
import { BenchProc, reportedPid } from './lib/proc.ts';
import { MiB, percentile } from './lib/stats.ts';

export interface FanoutOptions {
  readonly sizes: readonly number[];
  /** Client processes the clients are spread over. */
  readonly procs: number;
}

export interface FanoutEntry {
  readonly runs: number;
  readonly drainLatencyMsP50: number;
  readonly drainLatencyMsP99: number;
  /** The last client of a run had `drain` this long after the SIGTERM (worst run). */
  readonly allDrainedMsMax: number;
  readonly rssMiB: number;
  readonly errors?: string[];
}

export const runsFor = (n: number): number => (n <= 10 ? 10 : n <= 100 ? 5 : 3);

export async function runFanout(o: FanoutOptions, progress: (label: string) => void): Promise<Record<string, FanoutEntry>> {
  const result: Record<string, FanoutEntry> = {};
  for (const n of o.sizes) {
    const latencies: number[] = [];
    const lasts: number[] = [];
    const rss: number[] = [];
    const errors: string[] = [];
    for (let run = 0; run < runsFor(n); run++) {
      progress(`${n} clients, run ${run + 1}/${runsFor(n)}`);
      try {
        const r = await runOnce(n, o.procs);
        latencies.push(...r.latencies);
        lasts.push(Math.max(...r.latencies));
        rss.push(r.rssBytes);
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
      ...(errors.length > 0 && { errors: [...new Set(errors)].slice(0, 3) }),
    };
  }
  return result;
}

async function runOnce(n: number, procs: number): Promise<{ latencies: number[]; rssBytes: number }> {
  const proc = new BenchProc(EXE, ['run', '--', NODE, fixture('clients.ts')], { BENCH_CLIENTS: String(n), BENCH_PROCS: String(procs) }, { stderr: true });
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
    const rssBytes = rssOf(proc.pid).rss;
    const sentAt = proc.signal('SIGTERM');
    await within(seenP, 30_000, `${n} clients drained`, proc);
    await proc.waitExit(30_000, 'fan-out run');
    return { latencies: seen.map((t) => t - sentAt), rssBytes };
  } finally {
    proc.kill();
  }
}

async function within(p: Promise<void>, ms: number, what: string, proc: BenchProc): Promise<void> {
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
