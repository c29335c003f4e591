// The idle-metrics drain for operators that change nothing: how many
// reconciles a stop interrupts with a bare SIGTERM, and with SIGTERM passed on
// only once waitForIdle saw controller_runtime_active_workers at 0 (or its
// deadline passed). Each iteration runs two copies of the bursty operator with
// the same seed, stopped at the same moment, one per strategy.
//
//   node test/tooling/bench/idle-metrics.ts [--iterations 40] [--seed 1] [--deadline 3000] [--interval 50]
//     [--workers 2] [--reconcile 200-1500] [--burst-every 2000-6000] [--burst-size 1-4]
//     [--stop-after 1000-8000]

import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { waitForIdle } from '../../../src/idle/idle-metrics.ts';
import { nowMs } from '../../support/clock.ts';
import { Proc } from '../../support/proc.ts';
import { prng, seedOf } from '../../support/random.ts';
import { event } from './lib/fixture-output.ts';
import { NODE, fixture } from './lib/paths.ts';

export interface IdleMetricsOptions {
  iterations: number;
  seed: number;
  deadlineMs: number;
  intervalMs: number;
  workers: number;
  reconcile: string;
  burstEvery: string;
  burstSize: string;
  stopAfter: [number, number];
  concurrency: number;
}

interface Stop {
  interrupted: number;
  finished: number;
  waitMs: number;
  outcome: string;
}

export interface IdleMetricsResult {
  iterations: number;
  bare: Summary;
  idleWait: Summary & { waitMsMean: number; waitMsMax: number; deadlines: number };
}

interface Summary {
  /** Stops that cut at least one reconcile off. */
  stopsInterrupting: number;
  interrupted: number;
  /** interrupted / (interrupted + finished before the stop). */
  interruptedShare: number;
}

async function stopOnce(opts: IdleMetricsOptions, seed: number, stopAfter: number, idleWait: boolean): Promise<Stop> {
  const p = new Proc(
    NODE,
    [
      fixture('bursty-operator.ts'),
      '--seed',
      String(seed),
      '--workers',
      String(opts.workers),
      '--reconcile',
      opts.reconcile,
      '--burst-every',
      opts.burstEvery,
      '--burst-size',
      opts.burstSize,
    ],
    {},
    { detached: true },
  );
  try {
    const [, port] = await event(p, 'metrics', 10_000);
    await sleep(stopAfter);
    const before = nowMs();
    let outcome = 'bare';
    if (idleWait) {
      const r = await waitForIdle({
        url: `http://127.0.0.1:${port}/metrics`,
        intervalMs: opts.intervalMs,
        deadline: Date.now() + opts.deadlineMs,
      });
      outcome = r.outcome;
    }
    const waitMs = nowMs() - before;
    p.kill('SIGTERM');
    const [, interrupted, finished] = await event(p, 'stopped', 10_000);
    await p.exit(5_000);
    return { interrupted: Number(interrupted), finished: Number(finished), waitMs, outcome };
  } finally {
    p.killAll();
  }
}

function summary(stops: Stop[]): Summary {
  const interrupted = stops.reduce((s, x) => s + x.interrupted, 0);
  const finished = stops.reduce((s, x) => s + x.finished, 0);
  return {
    stopsInterrupting: stops.filter((s) => s.interrupted > 0).length,
    interrupted,
    interruptedShare: interrupted / Math.max(1, interrupted + finished),
  };
}

export async function runIdleMetrics(opts: IdleMetricsOptions): Promise<IdleMetricsResult> {
  const rnd = prng(opts.seed);
  const plan = Array.from({ length: opts.iterations }, (_, i) => ({
    seed: seedOf(opts.seed, i),
    stopAfter: rnd.between(...opts.stopAfter),
  }));
  const bare: Stop[] = [];
  const waited: Stop[] = [];
  for (let i = 0; i < plan.length; i += opts.concurrency) {
    await Promise.all(
      plan.slice(i, i + opts.concurrency).map(async ({ seed, stopAfter }) => {
        const [b, w] = await Promise.all([stopOnce(opts, seed, stopAfter, false), stopOnce(opts, seed, stopAfter, true)]);
        bare.push(b);
        waited.push(w);
      }),
    );
  }
  const waits = waited.map((w) => w.waitMs);
  return {
    iterations: opts.iterations,
    bare: summary(bare),
    idleWait: {
      ...summary(waited),
      waitMsMean: waits.reduce((a, b) => a + b, 0) / waits.length,
      waitMsMax: Math.max(...waits),
      deadlines: waited.filter((w) => w.outcome === 'deadline').length,
    },
  };
}

if (import.meta.main) {
  const { values: v } = parseArgs({
    options: {
      iterations: { type: 'string', default: '40' },
      seed: { type: 'string', default: '1' },
      deadline: { type: 'string', default: '3000' },
      interval: { type: 'string', default: '50' },
      workers: { type: 'string', default: '2' },
      reconcile: { type: 'string', default: '200-1500' },
      'burst-every': { type: 'string', default: '2000-6000' },
      'burst-size': { type: 'string', default: '1-4' },
      'stop-after': { type: 'string', default: '1000-8000' },
      concurrency: { type: 'string', default: '4' },
    },
    strict: true,
  });
  process.on('SIGINT', () => {
    process.exit(130);
  });
  const [a, b] = v['stop-after']!.split('-').map(Number) as [number, number];
  const r = await runIdleMetrics({
    iterations: Number(v.iterations),
    seed: Number(v.seed),
    deadlineMs: Number(v.deadline),
    intervalMs: Number(v.interval),
    workers: Number(v.workers),
    reconcile: v.reconcile!,
    burstEvery: v['burst-every']!,
    burstSize: v['burst-size']!,
    stopAfter: [a, b],
    concurrency: Number(v.concurrency),
  });
  const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
  console.log(
    `idle-metrics drain, ${r.iterations} stops per strategy (bursty operator: ${v.workers} workers, reconciles ${v.reconcile} ms, bursts of ${v['burst-size']} every ${v['burst-every']} ms)`,
  );
  console.log(
    `  bare SIGTERM:           ${r.bare.stopsInterrupting}/${r.iterations} stops interrupted a reconcile; ${r.bare.interrupted} reconciles interrupted (${pct(r.bare.interruptedShare)} of all)`,
  );
  console.log(
    `  SIGTERM after idle:     ${r.idleWait.stopsInterrupting}/${r.iterations} stops interrupted a reconcile; ${r.idleWait.interrupted} reconciles interrupted (${pct(r.idleWait.interruptedShare)} of all)`,
  );
  console.log(
    `  wait before the signal: mean ${r.idleWait.waitMsMean.toFixed(0)} ms, max ${r.idleWait.waitMsMax.toFixed(0)} ms, ${r.idleWait.deadlines} reached the ${v.deadline} ms deadline`,
  );
  console.log(JSON.stringify(r));
}
