// `npm run bench`: every benchmark of drainguard in one run, so the figures
// are comparable on a noisy machine; prints a table and writes
// bench-results.json at the repository root. `--help` lists the knobs.
// First it builds a second time and stops, exit 1, when the two builds
// differ: what is measured must be the commit's, not one build's.

import { execFileSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, release } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { runFileEndHooks } from '../../support/file-end.ts';
import { round } from '../../support/stats.ts';
import { killReported } from './lib/fixture-output.ts';
import { EXE, NODE, ROOT } from './lib/paths.ts';
import { runFanout } from './fanout.ts';
import { type PodMemoryResult, podMemoryOptions, runPodMemory, summarize } from './pod-memory.ts';
import { runLatency } from './latency.ts';
import { describe, runReproducible } from './reproducible.ts';
import { type Results, evaluateGoals, failedHeldGoals, printReport } from './report.ts';
import { runShutdown } from './shutdown.ts';
import { runSize } from './size.ts';
import { privateCopies, runMemory, runStart } from './startup.ts';

const SECTIONS = ['reproducible', 'size', 'start', 'memory', 'latency', 'fanout', 'shutdown', 'pod'] as const;
type Section = (typeof SECTIONS)[number];
/** pod needs root, containerd and the control plane's release, and takes half an hour: only when named. */
const DEFAULT_SECTIONS = SECTIONS.filter((s) => s !== 'pod');

const HELP = `npm run bench [-- OPTIONS]    (or: node test/tooling/bench/run.ts OPTIONS after npm run build)

  --only LIST          sections to run, of: ${SECTIONS.join(',')} (default: all but pod;
                       reproducible: a second build, which must be the same bytes as dist/;
                       pod: what drainguard costs a pod on a real node, test/tooling/bench/pod-memory.ts)
  --full               larger samples: 200 shutdown iterations, 1000 latency runs,
                       100 start runs (about 25 minutes on 2 cores)
  --seed N             seed of the workload and stop moments (default 1)
  --iterations N       shutdown runs per strategy (default 30)
  --workers N          concurrent reconciles of the operator (default 8)
  --reconcile MIN-MAX  reconcile length in ms (default 100-3000)
  --stop-after MIN-MAX stop moment after the operator is ready, ms (default 200-3000)
  --sleep MS           the preStop sleep of the 'sleep' strategy (default: the longest reconcile)
  --latency-runs N     runs of the latency benchmark (default 200), once as the machine is
                       and once more beside busy loops
  --busy-loops N       busy-loop processes of the loaded latency pass (default: one per CPU)
  --compare EXE        another drainguard executable (an earlier build, copied out of dist/)
                       measured run for run beside this one in the latency passes
  --start-runs N       runs of each start measurement (default 30)
  --memory-reps N      idle RSS samples per subject and page-cache state (default 3)
  --fanout LIST        client counts of the fan-out benchmark (default 1,10,100,1000)
  --fanout-procs N     client processes the clients are spread over (default 4)
  --pod-modes LIST     the pod section's modes (default: all; the operator alone is always measured)
  --pod-idle LIST      its idle samples, seconds after the pod runs (default 30,150,300)
  --pod-clients N      clients held in its drain (default 1000)
  --pod-page-cache S   cold (the images' pages dropped before each pod, the default) or warm
  --pod-no-reclaim     no reclaim pass through the pods' cgroups after their idle samples
  --out FILE           where the JSON goes (default bench-results.json)
`;

const { values: v } = parseArgs({
  options: {
    only: { type: 'string' },
    full: { type: 'boolean', default: false },
    seed: { type: 'string', default: '1' },
    iterations: { type: 'string' },
    workers: { type: 'string', default: '8' },
    reconcile: { type: 'string', default: '100-3000' },
    'stop-after': { type: 'string', default: '200-3000' },
    sleep: { type: 'string' },
    'latency-runs': { type: 'string' },
    'busy-loops': { type: 'string' },
    compare: { type: 'string' },
    'start-runs': { type: 'string' },
    'memory-reps': { type: 'string' },
    fanout: { type: 'string', default: '1,10,100,1000' },
    'fanout-procs': { type: 'string', default: '4' },
    'pod-modes': { type: 'string' },
    'pod-idle': { type: 'string' },
    'pod-clients': { type: 'string' },
    'pod-page-cache': { type: 'string' },
    'pod-no-reclaim': { type: 'boolean', default: false },
    out: { type: 'string', default: join(ROOT, 'bench-results.json') },
    help: { type: 'boolean', short: 'h', default: false },
  },
  strict: true,
});
if (v.help) {
  process.stdout.write(HELP);
  process.exit(0);
}

function int(name: string, value: string | undefined, fallback: number): number {
  const n = value === undefined ? fallback : Number(value);
  if (!Number.isSafeInteger(n) || n < 0) usage(`--${name}: expected a whole number, got ${JSON.stringify(value)}`);
  return n;
}
function range(name: string, value: string): [number, number] {
  const m = /^(\d+)-(\d+)$/.exec(value);
  if (!m || Number(m[1]) > Number(m[2])) usage(`--${name}: expected MIN-MAX in ms, got ${JSON.stringify(value)}`);
  return [Number(m![1]), Number(m![2])];
}
function usage(message: string): never {
  process.stderr.write(`bench: ${message}\n\n${HELP}`);
  process.exit(2);
}

const only = v.only ? v.only.split(',') : [...DEFAULT_SECTIONS];
for (const s of only) if (!SECTIONS.includes(s as Section)) usage(`--only: unknown section ${JSON.stringify(s)}`);
const wants = (s: Section) => only.includes(s);
const reconcileMs = range('reconcile', v.reconcile);
const options = {
  seed: int('seed', v.seed, 1),
  iterations: int('iterations', v.iterations, v.full ? 200 : 30),
  workers: int('workers', v.workers, 8),
  reconcileMs,
  stopAfterMs: range('stop-after', v['stop-after']),
  sleepMs: int('sleep', v.sleep, reconcileMs[1]),
  latencyRuns: int('latency-runs', v['latency-runs'], v.full ? 1000 : 200),
  busyLoops: int('busy-loops', v['busy-loops'], cpus().length),
  startRuns: Math.max(1, int('start-runs', v['start-runs'], v.full ? 100 : 30)),
  memoryReps: Math.max(1, int('memory-reps', v['memory-reps'], v.full ? 5 : 3)),
  fanout: v.fanout.split(',').map((n) => int('fanout', n, 1)),
  fanoutProcs: Math.max(1, int('fanout-procs', v['fanout-procs'], 4)),
  compare: v.compare,
};
const pod = podMemoryOptions({
  modes: v['pod-modes'],
  idle: v['pod-idle'],
  clients: v['pod-clients'],
  pageCache: v['pod-page-cache'],
  reclaim: !v['pod-no-reclaim'],
});
if (typeof pod === 'string') usage(pod.replace(/^--/, '--pod-'));

if (!existsSync(EXE)) usage(`${EXE} is missing: run 'npm run build' first (npm run bench does)`);
if (options.compare !== undefined && !existsSync(options.compare)) usage(`--compare: ${options.compare} does not exist`);
const embedded = /\(node (v[\d.]+)\)/.exec(execFileSync(EXE, ['--version'], { encoding: 'utf8' }))?.[1];
if (embedded !== process.version) {
  process.stderr.write(`bench: warning: drainguard embeds Node.js ${embedded}, the comparison runs ${process.version} (${NODE})\n`);
}

for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.on(sig, () => {
    killReported();
    process.stderr.write(`\nbench: ${sig}, stopped\n`);
    process.exit(130);
  });
}

const log = (line: string) => process.stderr.write(`${line}\n`);
const ticker = (label: string) => {
  let last = -1;
  return (done: number, total: number) => {
    const pct = Math.floor((100 * done) / total / 10) * 10;
    if (pct !== last) {
      last = pct;
      log(`  ${label}: ${done}/${total}`);
    }
  };
};

const began = Date.now();
const loadBefore = loadavg();
const results: Record<string, unknown> = {};
const timings: Record<string, number> = {};
async function section<T>(name: Section, title: string, body: () => Promise<T>): Promise<T | undefined> {
  if (!wants(name)) return undefined;
  log(`bench: ${title}`);
  const t = Date.now();
  try {
    return await body();
  } finally {
    timings[name] = (timings[name] ?? 0) + Math.round((Date.now() - t) / 1000);
  }
}

try {
  const reproducible = await section('reproducible', 'a second build of this checkout, against dist/', () =>
    runReproducible((l) => log(`  ${l}`)),
  );
  if (reproducible && reproducible.differences.length > 0) {
    process.stderr.write(
      `\nbench: FAILED: two builds of one checkout differ, so what follows would measure one build, not the commit:\n` +
        `${reproducible.differences.map((d) => `  ${describe(d)}\n`).join('')}` +
        (reproducible.versions
          ? `dist/ is of another checkout (${reproducible.versions[0]}; this one: ${reproducible.versions[1]}): npm run bench builds it first\n`
          : '') +
        '(docs/development.md, "Releases"; --only without reproducible measures this build anyway)\n',
    );
    process.exit(1);
  }
  if (reproducible)
    log(`  the same bytes: ${reproducible.files} files (the second build took ${(reproducible.buildMs / 1000).toFixed(1)} s)`);
  const size = await section('size', 'executable size', runSize);
  const copies = wants('start') || wants('memory') ? privateCopies() : undefined;
  let start, memory;
  try {
    start = await section('start', `start time, ${options.startRuns} runs each`, () =>
      runStart(copies!, options.startRuns, (l) => log(`  ${l}`)),
    );
    memory = await section('memory', 'idle memory', () => runMemory(copies!, options.memoryReps, (l) => log(`  ${l}`)));
  } finally {
    copies?.remove();
  }
  const latency = await section('latency', `drain and kill latency, ${options.latencyRuns} runs`, () =>
    runLatency({ runs: options.latencyRuns, seed: options.seed, compare: options.compare }, ticker('latency')),
  );
  const latencyLoaded = await section('latency', `the same beside ${options.busyLoops} busy loops`, () =>
    runLatency(
      { runs: options.latencyRuns, seed: options.seed, busyLoops: options.busyLoops, compare: options.compare },
      ticker('latency, loaded'),
    ),
  );
  const fanout = await section('fanout', `fan-out to ${options.fanout.join(', ')} clients`, async () => ({
    raw: await runFanout({ sizes: options.fanout, procs: options.fanoutProcs, client: 'raw' }, (l) => log(`  ${l}`)),
    // The same with the TypeScript client, whose own handling of `drain` is then included.
    ts: await runFanout({ sizes: [Math.max(...options.fanout)], procs: options.fanoutProcs, client: 'ts' }, (l) =>
      log(`  TypeScript client: ${l}`),
    ),
  }));
  const podMemory: PodMemoryResult | undefined = await section('pod', 'what drainguard costs a pod, on a real node', () =>
    runPodMemory(pod as Exclude<typeof pod, string>, (l) => log(`  ${l}`)),
  );
  const shutdown = await section('shutdown', `shutdown scenario, ${options.iterations} runs per strategy, all strategies at once`, () =>
    runShutdown(options, ticker('shutdown')),
  );

  const idle = memory?.read;
  Object.assign(results, {
    ...(shutdown && {
      strategies: shutdown.strategies,
      overheadMsP50: shutdown.overheadMsP50,
      overheadMsP99: shutdown.overheadMsP99,
      overheadMsMax: shutdown.overheadMsMax,
      stopSignalAfterLastReconcileMsP50: shutdown.signalMsP50,
      stopSignalAfterLastReconcileMsP99: shutdown.signalMsP99,
      overheadFloor: shutdown.floor,
      ...(shutdown.absent.length > 0 && { absentStrategies: shutdown.absent }),
    }),
    ...(latencyLoaded && { latencyLoaded }),
    ...(latency && {
      drainLatencyMsP50: latency.drainLatencyMsP50,
      drainLatencyMsP99: latency.drainLatencyMsP99,
      drainLatencyMsMax: latency.drainLatencyMsMax,
      killLatencyMsP50: latency.killLatencyMsP50,
      killLatencyMsP99: latency.killLatencyMsP99,
      killLatencyMsMax: latency.killLatencyMsMax,
      latencyFloor: latency.floor,
      ...(latency.compared && { latencyCompared: latency.compared, latencyCompare: options.compare }),
      latencyRuns: latency.runs,
      latencyLoadavg: latency.loadavg,
    }),
    ...(start && {
      startRatio: start.read.ratio,
      podStartRatio: start.read.podRatio,
      startMs: start.read.drainguardMs,
      versionStartMs: start.read.versionMs,
      nodeStartMs: start.read.nodeMs,
      start,
    }),
    ...(idle &&
      memory && {
        idleRssMiB: idle.run?.rssMiB ?? null,
        idleRssRatio: idle.run && idle.node ? idle.run.rssMiB / idle.node.rssMiB : null,
        idleAnonRatio: idle.run && idle.node ? idle.run.anonMiB / idle.node.anonMiB : null,
        sidecarIdleRssMiB: idle.sidecar?.rssMiB ?? null,
        podIdleRssRatio: idle['run-pod'] && idle.node ? idle['run-pod'].rssMiB / idle.node.rssMiB : null,
        sidecarIdleRssRatio: idle.sidecar && idle.node ? idle.sidecar.rssMiB / idle.node.rssMiB : null,
        nodeIdleRssMiB: idle.node?.rssMiB ?? null,
        ...(memory.sidecarNote && { sidecarIdleRssNote: memory.sidecarNote }),
        idleMemory: { read: memory.read, written: memory.written },
      }),
    ...(fanout && { fanout: fanout.raw, fanoutTsClient: fanout.ts }),
    ...(podMemory && { podMemory, podMemoryAdded: summarize(podMemory) }),
    ...(size && size),
    ...(reproducible && { reproducibleFiles: reproducible.files }),
  });
  const goals = evaluateGoals(results as Results);
  const meta = {
    date: new Date(began).toISOString(),
    durationS: Math.round((Date.now() - began) / 1000),
    sectionsS: timings,
    node: process.version,
    embeddedNode: embedded,
    cpus: cpus().length,
    cpu: cpus()[0]?.model,
    kernel: release(),
    loadavgBefore: loadBefore.map(round),
    loadavgAfter: loadavg().map(round),
    options: { ...options, full: v.full },
  };
  const json = { ...roundAll(results), goals, meta, ...(shutdown && { shutdownRuns: shutdown.runs.map((r) => roundAll(r)) }) };
  writeFileSync(v.out, `${JSON.stringify(json, null, 2)}\n`);
  process.stdout.write(printReport(results as Results, goals, meta));
  process.stdout.write(`\nwrote ${v.out}\n`);
  const failed = failedHeldGoals(goals);
  if (failed.length > 0) {
    process.stderr.write(
      `\nbench: FAILED: ${failed.length === 1 ? 'a held goal is' : 'held goals are'} not met (docs/performance.md, "Goals"):\n${failed.map((l) => `  ${l}\n`).join('')}`,
    );
    process.exitCode = 1;
  }
} finally {
  killReported();
  // The pod section's node and control plane.
  await runFileEndHooks();
}

function roundAll<T>(value: T): T {
  if (typeof value === 'number') return round(value) as T;
  if (Array.isArray(value)) return value.map(roundAll) as T;
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, x]) => [k, roundAll(x)])) as T;
  return value;
}
