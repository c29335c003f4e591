// The shutdown scenario: the same seeded workload stopped at the same moment
// under each strategy, many times; what was interrupted and how long it took.
// The bare relay (fixtures/bare-relay.ts) drains the same way with no
// drainguard code: its overhead is the floor of drainguard's.

import { setTimeout as delay } from 'node:timers/promises';
import { nowMs } from '../../support/clock.ts';
import { Proc } from '../../support/proc.ts';
import { prng, seedOf } from '../../support/random.ts';
import { percentile } from '../../support/stats.ts';
import { event, reportedPid } from './lib/fixture-output.ts';
import { EXE, NODE, fixture, onPath } from './lib/paths.ts';

export interface ShutdownOptions {
  readonly iterations: number;
  readonly workers: number;
  readonly reconcileMs: readonly [number, number];
  readonly stopAfterMs: readonly [number, number];
  readonly sleepMs: number;
  readonly seed: number;
}

interface Strategy {
  readonly name: string;
  readonly mode: 'plain' | 'cancel' | 'drainguard';
  readonly command: readonly string[];
  /** A preStop hook that sleeps this long before the SIGTERM. */
  readonly preStopMs?: number;
}

export interface RunResult {
  readonly strategy: string;
  readonly iteration: number;
  /** Reconciles running at the stop request or started after it. */
  readonly touched: number;
  readonly interrupted: number;
  /** Stop request (SIGTERM, or the start of the preStop hook) → the process exited. */
  readonly exitMs: number;
  /** The operator's last line (just before it exits) → the stopped process exited: the operator's own teardown plus what a supervisor adds. */
  readonly afterOperatorMs: number;
  /** Strategies that drain (drainguard, the bare relay): the last reconcile ended → the supervisor exited. */
  readonly overheadMs?: number;
  /** Strategies that drain: the last reconcile ended → the stop signal reached the operator. */
  readonly signalMs?: number;
  readonly error?: string;
}

export interface StrategySummary {
  readonly runs: number;
  readonly failedRuns: number;
  readonly interrupted: number;
  readonly interruptedPct: number;
  readonly runsWithInterruption: number;
  readonly exitMsP50: number;
  readonly exitMsP99: number;
  readonly afterOperatorMsP50: number;
  readonly afterOperatorMsP99: number;
  readonly command: string;
}

export interface ShutdownResult {
  readonly strategies: Record<string, StrategySummary>;
  readonly overheadMsP50: number;
  readonly overheadMsP99: number;
  readonly overheadMsMax: number;
  /** The part of the overhead before the operator got its stop signal. */
  readonly signalMsP50: number;
  readonly signalMsP99: number;
  /** The same two through the bare relay, stopped beside drainguard in the same batches. */
  readonly floor: {
    readonly overheadMsP50: number;
    readonly overheadMsP99: number;
    readonly overheadMsMax: number;
    readonly signalMsP50: number;
    readonly signalMsP99: number;
  };
  readonly absent: string[];
  readonly runs: RunResult[];
}

const BARE_RELAY = 'bare relay';

export function strategies(sleepMs: number): { list: Strategy[]; absent: string[] } {
  const operator = [NODE, fixture('operator.ts')];
  const list: Strategy[] = [
    { name: 'sigterm', mode: 'plain', command: operator },
    { name: `sleep`, mode: 'plain', command: operator, preStopMs: sleepMs },
    { name: 'cancel', mode: 'cancel', command: operator },
  ];
  const absent: string[] = [];
  const tini = onPath('tini');
  if (tini) list.push({ name: 'tini', mode: 'plain', command: [tini, '-s', '--', ...operator] });
  else absent.push('tini');
  const dumbInit = onPath('dumb-init');
  if (dumbInit) list.push({ name: 'dumb-init', mode: 'plain', command: [dumbInit, ...operator] });
  else absent.push('dumb-init');
  list.push({ name: 'drainguard', mode: 'drainguard', command: [EXE, 'run', '--', ...operator] });
  list.push({ name: BARE_RELAY, mode: 'drainguard', command: [NODE, fixture('bare-relay.ts'), ...operator] });
  return { list, absent };
}

/**
 * One batch per iteration: every strategy started at once on the same
 * workload, and stopped only once all of them are up, so that no start (the
 * costly part, on two cores) falls into another run's shutdown.
 */
export async function runShutdown(o: ShutdownOptions, progress: (done: number, total: number) => void): Promise<ShutdownResult> {
  const { list, absent } = strategies(o.sleepMs);
  const runs: RunResult[] = [];
  for (let iteration = 0; iteration < o.iterations; iteration++) {
    const stopAfter = prng(seedOf(o.seed, iteration, 0x5707)).between(o.stopAfterMs[0], o.stopAfterMs[1]);
    const procs = list.map((strategy) => start(strategy, iteration, o));
    const ready = await Promise.all(procs.map((p) => p.ready.catch(() => undefined)));
    const batchReady = nowMs();
    const results = await Promise.all(
      list.map((strategy, i) => {
        const fail = (err: Error): RunResult => ({
          strategy: strategy.name,
          iteration,
          touched: 0,
          interrupted: 0,
          exitMs: Number.NaN,
          afterOperatorMs: Number.NaN,
          error: err.message,
        });
        const readyAt = ready[i];
        if (readyAt === undefined) return procs[i]!.ready.then(() => fail(new Error('not ready')), fail);
        // The same moment after its own start for every strategy, unless the batch took longer to come up.
        return stop(strategy, iteration, procs[i]!.proc, Math.max(0, readyAt + stopAfter - batchReady), o).catch(fail);
      }),
    );
    runs.push(...results);
    progress(iteration + 1, o.iterations);
  }

  const summaries: Record<string, StrategySummary> = {};
  for (const s of list) {
    const mine = runs.filter((r) => r.strategy === s.name);
    const ok = mine.filter((r) => r.error === undefined);
    const touched = ok.reduce((n, r) => n + r.touched, 0);
    const interrupted = ok.reduce((n, r) => n + r.interrupted, 0);
    const exits = ok.map((r) => r.exitMs);
    summaries[s.name] = {
      runs: ok.length,
      failedRuns: mine.length - ok.length,
      interrupted,
      interruptedPct: touched === 0 ? 0 : (100 * interrupted) / touched,
      runsWithInterruption: ok.filter((r) => r.interrupted > 0).length,
      exitMsP50: percentile(exits, 50),
      exitMsP99: percentile(exits, 99),
      afterOperatorMsP50: percentile(
        ok.map((r) => r.afterOperatorMs),
        50,
      ),
      afterOperatorMsP99: percentile(
        ok.map((r) => r.afterOperatorMs),
        99,
      ),
      command: (s.preStopMs ? `preStop sleep ${s.preStopMs / 1000}; ` : '') + s.command.map((a) => a.split('/').pop()).join(' '),
    };
  }
  return { strategies: summaries, ...overheads(runs, 'drainguard'), floor: overheads(runs, BARE_RELAY), absent, runs };
}

/** The overhead of a strategy that drains, over its runs that interrupted nothing. */
function overheads(runs: readonly RunResult[], strategy: string) {
  const drained = runs.filter((r) => r.strategy === strategy && r.error === undefined && r.interrupted === 0);
  const overhead = drained.map((r) => r.overheadMs!);
  const signal = drained.map((r) => r.signalMs!);
  return {
    overheadMsP50: percentile(overhead, 50),
    overheadMsP99: percentile(overhead, 99),
    overheadMsMax: percentile(overhead, 100),
    signalMsP50: percentile(signal, 50),
    signalMsP99: percentile(signal, 99),
  };
}

function start(strategy: Strategy, iteration: number, o: ShutdownOptions): { proc: Proc; ready: Promise<number> } {
  const [file, ...args] = strategy.command;
  const env = {
    BENCH_MODE: strategy.mode,
    BENCH_SEED: String(seedOf(o.seed, iteration)),
    BENCH_WORKERS: String(o.workers),
    BENCH_RECONCILE_MS: `${o.reconcileMs[0]}-${o.reconcileMs[1]}`,
  };
  const proc = new Proc(file!, args, env, { detached: true });
  const ready = event(proc, 'ready', 30_000).then(([, at, pid]) => {
    reportedPid(Number(pid));
    return Number(at);
  });
  ready.catch(() => proc.killAll());
  return { proc, ready };
}

async function stop(strategy: Strategy, iteration: number, proc: Proc, afterMs: number, o: ShutdownOptions): Promise<RunResult> {
  try {
    await delay(afterMs);
    const stopAt = nowMs();
    if (strategy.preStopMs) await delay(strategy.preStopMs);
    proc.kill('SIGTERM');
    await proc.exit(o.reconcileMs[1] + (strategy.preStopMs ?? 0) + 30_000);
    return analyse(strategy, iteration, proc.stdout, stopAt, proc.exitedAt!);
  } finally {
    proc.killAll();
  }
}

function analyse(strategy: Strategy, iteration: number, lines: readonly string[], stopAt: number, exitAt: number): RunResult {
  const starts = new Map<string, number>();
  const ends = new Map<string, number>();
  let termAt: number | undefined;
  let lastLineAt = Number.NaN;
  for (const line of lines) {
    const [kind, id, t] = line.split(' ');
    if (kind === 's') starts.set(id!, Number(t));
    else if (kind === 'e') ends.set(id!, Number(t));
    else if (kind === 'term') termAt = Number(id);
    else if (kind === 'exit') lastLineAt = Number(id);
  }
  let touched = 0;
  let interrupted = 0;
  let lastEnd = -Infinity;
  for (const [id] of starts) {
    const end = ends.get(id);
    if (end !== undefined) lastEnd = Math.max(lastEnd, end);
    if (end !== undefined && end < stopAt) continue;
    touched++;
    if (end === undefined) interrupted++;
  }
  const result: RunResult = {
    strategy: strategy.name,
    iteration,
    touched,
    interrupted,
    exitMs: exitAt - stopAt,
    afterOperatorMs: exitAt - lastLineAt,
  };
  if (strategy.mode !== 'drainguard') return result;
  return { ...result, overheadMs: exitAt - lastEnd, signalMs: termAt === undefined ? Number.NaN : termAt - lastEnd };
}
