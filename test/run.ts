// The test runner: every test/**/*.test.ts in its own process (real signals and
// child processes must not leak between files), two at a time, and a last line
// `N passed, N failed, N skipped`. Arguments filter the files by substring;
// `--unit` runs only the unit tier, `--no-unit` every file but it. npm test runs
// the unit tier first, on its own, to fail in seconds, then every file, so that
// its last line counts the whole suite (the unit tier again: some seconds). A unit test is named `*.unit.test.ts`, beside
// the other tests of its area: it starts nothing outside its own process (no
// child process, no executable, no control plane, no network; at most a Unix
// socket between two of its own objects) and moves time only on a fake clock
// (support/fake-clock.ts), so the whole tier takes seconds.
//
// What the machine lets the tests check is decided once, before the first file,
// and printed: the control plane (test/support/tier.ts: KUBEBUILDER_ASSETS, or
// the release `npm run k8s` built) and clients/go/ctrl's two builds
// (test/support/go.ts: Go and controller-runtime's modules, the oldest release
// it supports and the newest). A file that needs a control plane where none was
// built is not run: it is counted as one skip, with the reason. A file that
// builds clients/go/ctrl where they cannot be had is not run and fails, with the
// reason: Go and the module proxy are part of what the tests need. When a
// file needs the control plane, one is started for the whole run and stopped
// at its end, also when the run is interrupted (test/support/cluster/). A
// skipped test is never a pass, and a test that throws is never a skip.
//
// Each file gets a TMPDIR of its own, removed after it. What was left there
// (beyond the test's own directories, which it removes itself), processes
// still running at its exit (test/support/proc.ts ends them), and any process
// still alive afterwards with that TMPDIR in its environment (an operator in a
// session of its own, after a timeout) are listed as leftovers and ended,
// failing or not. A run with failures ends by naming each failed test with the
// first line of its message and its diff, so the tail of a long log says what
// failed (a failing file's whole output, printed above, can be thousands of lines).
// With TEST_KUBERNETES_COMPAT=DIR (a KUBEBUILDER_ASSETS of an older release:
// `npm run k8s -- 1.30` prints it), the files of COMPAT_FILES among those
// selected run a second time, on a control plane of that release, and count
// in the last line like the others.
// A file killed past its time limit (TEST_FILE_TIMEOUT_MS), or ended before its
// summary, is reported with the test it was running and the waits it had open
// (or the last one that ended), as it told them on fd 3 (support/progress.ts).

import { type ChildProcess, spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { type SharedCluster, needsCluster, startSharedCluster } from './support/cluster-runner.ts';
import { STATE_VARIABLE } from './support/cluster/index.ts';
import { ctrlCheck } from './support/go.ts';
import { KUBEBUILDER_VARIABLE, needsKubebuilder, prepareKubebuilder } from './support/kubebuilder.ts';
import { BEFORE_HOOK_FAILED, PROGRESS_FD_VARIABLE, ProgressReader } from './support/progress.ts';
import { type ClusterTier, TIER_VARIABLE, clusterTier, detectTier } from './support/tier.ts';

const FILE_TIMEOUT_MS = Number(process.env.TEST_FILE_TIMEOUT_MS ?? 240_000);
const CONCURRENCY = Number(process.env.TEST_CONCURRENCY ?? 2);
const UNIT = '.unit.test.ts';
/**
 * The files that run again on the oldest supported release: the chart, the admission policy, the guard,
 * and what the release changes: namespace deletion (not ordered before 1.33), the kubelet's termination;
 * and the shipped operators' uninstalls. Not their rollouts, nor the namespace deletions: before 1.33 the namespace
 * controller deletes everything at once, KEDA's rights are cluster-wide, and whether it finalizes its ScaledObject
 * without drainguard is a race (it did in one run of two on v1.30.14), so that file's control shows nothing there.
 */
const COMPAT_FILES = [
  'test/helm/',
  'test/guard/',
  'test/scenarios/security/attacks',
  'test/deploy/rbac',
  'test/namespace/',
  'test/support/node/real-node',
  'test/scenarios/lifecycle/',
  'test/shipped/external-secrets-',
  'test/shipped/keda-helm',
  'test/shipped/keda-kubectl',
  'test/shipped/keda-no-hooks',
  'test/shipped/keda-wait',
  'test/shipped/kuberay-kubectl',
];
/** Of those, what the oldest release cannot run: lifecycle.stopSignal's gate, ContainerStopSignals, came in 1.33. */
const NOT_ON_OLDEST = ['test/scenarios/lifecycle/stop-signal'];
const COMPAT_ASSETS = process.env.TEST_KUBERNETES_COMPAT;
/**
 * Files that install the same cluster-scoped objects, which they cannot name apart (a shipped
 * operator's CRDs): never two of one group at a time; a worker takes the next file of another group meanwhile.
 */
const ONE_AT_A_TIME = ['test/shipped/'];
const groupOf = (file: string): string | undefined => ONE_AT_A_TIME.find((g) => file.startsWith(g));
const args = process.argv.slice(2);
for (const a of args.filter((x) => x.startsWith('--') && x !== '--unit' && x !== '--no-unit')) {
  process.stderr.write(`test/run.ts: unknown option ${a}: --unit, --no-unit, or substrings of the files' paths\n`);
  process.exit(2);
}
const filters = args.filter((a) => !a.startsWith('--'));
/** Whether `file` is in the tier the flags ask for (both, without a flag). */
const inTier = (file: string) => (args.includes('--unit') ? file.endsWith(UNIT) : args.includes('--no-unit') ? !file.endsWith(UNIT) : true);

function find(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return e.name === 'fixtures' ? [] : find(path);
    return e.name.endsWith('.test.ts') ? [path] : [];
  });
}

const files = find('test')
  .map((f) => relative('.', f))
  .filter((f) => inTier(f) && (filters.length === 0 || filters.some((x) => f.includes(x))))
  .sort();

interface Result {
  file: string;
  passed: number;
  failed: number;
  /** uvu's skipped tests, or 1 for a file that was not run. */
  skipped: number;
  /** Why: the `skip: ` lines the file printed, or why it was not run. */
  skips: string[];
  output: string;
  ms: number;
  leftovers: string[];
}

/** Processes whose environment has TMPDIR=DIR: started, directly or not, by the file that got DIR. */
function processesWithTmpdir(dir: string): { pid: number; command: string }[] {
  const wanted = `TMPDIR=${dir}`;
  return readdirSync('/proc').flatMap((name) => {
    const pid = Number(name);
    if (!Number.isInteger(pid) || pid === process.pid) return [];
    try {
      if (!readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0').includes(wanted)) return [];
      return [{ pid, command: readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim().slice(0, 200) }];
    } catch {
      return []; // gone, or not ours to read
    }
  });
}

/** Paths under DIR, down to the first level that holds files (a left socket directory shows its socket). */
function listLeft(dir: string, prefix = ''): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const rel = join(prefix, e.name);
    if (!e.isDirectory()) return [rel];
    const inner = listLeft(join(dir, e.name), rel);
    return inner.length > 0 ? inner : [`${rel}/`];
  });
}

/** Whether `file` builds clients/go/ctrl (a text check: it calls ctrlBuild, or goBuild on it). */
const needsCtrl = (file: string) => /\bctrlBuild\(|'clients\/go\/ctrl'/.test(readFileSync(file, 'utf8'));

const tier = files.some((f) => needsCluster(f)) ? clusterTier() : undefined;
if (tier) process.stdout.write(`cluster tier: ${tier.description}\n`);
const compatFiles = COMPAT_ASSETS
  ? files.filter((f) => COMPAT_FILES.some((c) => f.startsWith(c)) && !NOT_ON_OLDEST.some((c) => f.startsWith(c)) && needsCluster(f))
  : [];
const compatTier = compatFiles.length > 0 ? detectTier({ ...process.env, KUBEBUILDER_ASSETS: COMPAT_ASSETS }) : undefined;
if (compatTier) process.stdout.write(`compatibility tier (${compatFiles.length} files again): ${compatTier.description}\n`);
const ctrl = files.some(needsCtrl) ? ctrlCheck() : undefined;
if (ctrl)
  process.stdout.write(
    `clients/go/ctrl: ${'built' in ctrl ? ctrl.built : `cannot be built, the files that build it fail: ${ctrl.missing}`}\n`,
  );

// kubebuilder's CLI, scaffold and manager (test/support/kubebuilder.ts): built once, before the files
// that use them (cold, minutes: more than a file's time limit); a failure fails those files, with it.
let kubebuilder: string | undefined;
if (files.some((f) => needsKubebuilder(f))) {
  try {
    process.stdout.write(`${prepareKubebuilder()}\n`);
    kubebuilder = 'ok';
  } catch (err) {
    kubebuilder = (err as Error).message;
    process.stdout.write(`kubebuilder: not built: ${kubebuilder}\n`);
  }
}

/** Why `file` cannot run here, or undefined. */
/** Why `file` cannot run here, and whether that fails it or skips it; undefined when it can. */
function unmet(file: string, fileTier: ClusterTier | undefined): { readonly reason: string; readonly fails: boolean } | undefined {
  if (ctrl && 'missing' in ctrl && needsCtrl(file)) return { reason: ctrl.missing, fails: true };
  if (fileTier?.kind === 'none' && needsCluster(file)) return { reason: fileTier.description, fails: false };
  return undefined;
}

/** The files of one pass, the control plane they share and its tier. */
interface Pass {
  readonly files: readonly string[];
  readonly cluster: SharedCluster | undefined;
  readonly tier: ClusterTier | undefined;
  /** Said after each file's name: which release it ran on, for the compatibility pass. */
  readonly label: string;
  /** The files' environment, beside the runner's. */
  readonly env: NodeJS.ProcessEnv;
}

const cluster: SharedCluster | undefined = files.some((f) => needsCluster(f) && !unmet(f, tier)) ? startSharedCluster() : undefined;
const passes: Pass[] = [{ files, cluster, tier, label: '', env: {} }];
if (compatTier) {
  const version = /v\d+\.\d+\.\d+/.exec(compatTier.description)?.[0] ?? COMPAT_ASSETS!;
  passes.push({
    files: compatFiles,
    cluster: undefined,
    tier: compatTier,
    label: ` on ${version}`,
    env: { KUBEBUILDER_ASSETS: COMPAT_ASSETS },
  });
}
const running = new Set<ChildProcess>();
let interrupted = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    interrupted = true;
    process.stdout.write(`runner: ${signal}, stopping\n`);
    for (const child of running) killGroup(child);
    void Promise.all(passes.map((p) => p.cluster?.stop())).finally(() => process.exit(signal === 'SIGINT' ? 130 : 143));
  });
}

/** SIGKILL to a test file and whatever it started in its process group. */
function killGroup(child: ChildProcess): void {
  try {
    process.kill(-child.pid!, 'SIGKILL');
  } catch {
    // Already gone.
  }
}

async function runFile(file: string, { cluster, tier, label, env: passEnv }: Pass): Promise<Result> {
  const started = Date.now();
  const notRun = (failed: number, skips: string[], output: string): Result => ({
    file: `${file}${label}`,
    passed: 0,
    failed,
    skipped: 1 - failed,
    skips,
    output,
    ms: Date.now() - started,
    leftovers: [],
  });
  const why = unmet(file, tier);
  if (why?.fails) return notRun(1, [], `not run: ${why.reason}`);
  if (why) return notRun(0, [`skip: the whole file: ${why.reason}`], '');
  const env: NodeJS.ProcessEnv = { ...process.env, ...passEnv, NODE_DISABLE_COLORS: '1', FORCE_COLOR: '0' };
  if (tier) env[TIER_VARIABLE] = JSON.stringify(tier);
  if (kubebuilder) env[KUBEBUILDER_VARIABLE] = kubebuilder;
  if (cluster && needsCluster(file)) {
    try {
      env[STATE_VARIABLE] = await cluster.ready;
    } catch (err) {
      return notRun(1, [], String(err));
    }
  }
  if (interrupted) return notRun(1, [], 'not run: the run was interrupted');
  return new Promise((resolve) => {
    const tmp = mkdtempSync(join(tmpdir(), 'drainguard-run-'));
    // As /tmp is: tests run processes as other users too.
    chmodSync(tmp, 0o1777);
    // A process group of its own, so an interrupted or timed-out file is stopped with what it started;
    // SIGKILL when the runner itself dies.
    // fd 3: the file's progress (support/progress.ts), read to say what a file killed here was doing.
    const child = spawn('setpriv', ['--pdeathsig', 'SIGKILL', '--', process.execPath, 'test/support/run-file.ts', file], {
      env: { ...env, TMPDIR: tmp, [PROGRESS_FD_VARIABLE]: '3' },
      stdio: ['ignore', 'pipe', 'pipe', 'pipe'],
      detached: true,
    });
    running.add(child);
    let output = '';
    child.stdout!.on('data', (d) => (output += d));
    child.stderr!.on('data', (d) => (output += d));
    const progress = new ProgressReader();
    (child.stdio[3] as NodeJS.ReadableStream).setEncoding('utf8').on('data', (d: string) => progress.feed(d));
    let killed = false;
    const timer = setTimeout(() => {
      killed = true;
      output += `\n  runner: ${file} ran past ${FILE_TIMEOUT_MS} ms and was killed\n${progress
        .report()
        .map((l) => `  runner: ${l}\n`)
        .join('')}`;
      killGroup(child);
    }, FILE_TIMEOUT_MS);
    child.on('close', (code, signal) => {
      running.delete(child);
      clearTimeout(timer);
      const leftovers = output
        .split('\n')
        .filter((l) => l.startsWith('leftover: '))
        .map((l) => l.slice('leftover: '.length));
      for (const p of processesWithTmpdir(tmp)) {
        leftovers.push(`${p.command} (pid ${p.pid}) still running after the file, killed`);
        try {
          process.kill(p.pid, 'SIGKILL');
        } catch {
          // Gone meanwhile.
        }
      }
      leftovers.push(...listLeft(tmp).map((path) => `${path} left in TMPDIR`));
      rmSync(tmp, { recursive: true, force: true });
      // uvu's Total counts the tests that ran, not the skipped ones.
      const total = Number(/Total:\s+(\d+)/.exec(output)?.[1] ?? NaN);
      const done = Number(/Passed:\s+(\d+)/.exec(output)?.[1] ?? NaN);
      let skipped = Number(/Skipped:\s+(\d+)/.exec(output)?.[1] ?? 0);
      let passed = Number.isNaN(done) ? 0 : done;
      let failed = Number.isNaN(total) ? 1 : total - passed;
      // Ended without uvu's summary (crashed, or exited with a test unsettled), not killed here: say where it was too.
      if (Number.isNaN(total) && !killed)
        output += `\n  runner: ${file} ended before its summary\n${progress
          .report()
          .map((l) => `  runner: ${l}\n`)
          .join('')}`;
      // A file that crashed, hung or exited non-zero after its summary still counts as a failure.
      if ((code !== 0 || signal) && failed === 0) failed = 1;
      if (Number.isNaN(total)) passed = 0;
      const skips = output.split('\n').filter((l) => l.startsWith('skip: '));
      // A skip must say why: one without its reason (a bare test.skip, a stray test.only) fails the file.
      if (skips.length < skipped) {
        failed += skipped - skips.length;
        output += `\n  runner: ${skipped - skips.length} test(s) skipped without a reason (print a line 'skip: NAME: WHY')\n`;
        skipped = skips.length;
      }
      resolve({ file: `${file}${label}`, passed, failed, skipped, skips, output, ms: Date.now() - started, leftovers });
    });
  });
}

const results: Result[] = [];
for (const [i, pass] of passes.entries()) {
  // The compatibility pass starts its control plane once the first has stopped: one at a time on 2 cores.
  const current: Pass =
    i === 0 || pass.tier?.kind !== 'real'
      ? pass
      : { ...pass, cluster: startSharedCluster({ ...process.env, ...pass.env, [TIER_VARIABLE]: JSON.stringify(pass.tier) }) };
  passes[i] = current;
  await runPass(current);
  await current.cluster?.stop();
}

async function runPass(pass: Pass): Promise<void> {
  // A group's files run one after another: started first, they overlap the rest instead of ending the run alone.
  const pending = [...pass.files].sort((a, b) => Number(!groupOf(a)) - Number(!groupOf(b)));
  const busy = new Set<string>();
  const freed: (() => void)[] = [];
  await Promise.all(
    Array.from({ length: Math.min(CONCURRENCY, pass.files.length) }, async () => {
      while (pending.length > 0 && !interrupted) {
        const at = pending.findIndex((f) => !busy.has(groupOf(f) ?? ''));
        if (at === -1) {
          await new Promise<void>((r) => freed.push(r));
          continue;
        }
        const file = pending.splice(at, 1)[0]!;
        const group = groupOf(file);
        if (group) busy.add(group);
        const result = await runFile(file, pass).finally(() => {
          if (!group) return;
          busy.delete(group);
          for (const wake of freed.splice(0)) wake();
        });
        results.push(result);
        const mark = result.failed > 0 ? 'FAIL' : result.passed === 0 ? 'skip' : 'ok  ';
        process.stdout.write(
          `${mark} ${result.file} (${result.passed} passed, ${result.failed} failed, ${result.skipped} skipped, ${result.ms} ms)\n`,
        );
        for (const l of result.skips) process.stdout.write(`     ${l}\n`);
        if (result.failed > 0 || process.env.TEST_VERBOSE) process.stdout.write(`${result.output.trim()}\n\n`);
        for (const l of result.leftovers) process.stdout.write(`     leftover of ${result.file}: ${l}\n`);
      }
    }),
  );
}

if (cluster && process.env.TEST_VERBOSE) process.stdout.write(`control plane: ${cluster.output().trim()}\n`);

/** Each failed test of a file's uvu output: its name, the first line of its message and the diff, at most 40 lines. */
function failureSummary(output: string): string[] {
  const lines = output.split('\n');
  const summary: string[] = [];
  for (const [i, line] of lines.entries()) {
    const name = /^\s+FAIL\s+(".*")$/.exec(line)?.[1];
    if (name === undefined) continue;
    const diff: string[] = [];
    let j = lines.findIndex((l, k) => k > i && /^\s{8}\S/.test(l));
    const next = lines.findIndex((l, k) => k > i && /^\s+FAIL\s+"/.test(l));
    if (j !== -1 && (next === -1 || j < next))
      for (; j < lines.length && /^\s{8}\S/.test(lines[j]!) && diff.length < 38; j++) diff.push(lines[j]!);
    summary.push(`  ${name}`, `    ${(lines[i + 1] ?? '').trim().slice(0, 1000)}`, ...diff);
  }
  // A before hook that failed: every test of the file failed with it, and uvu names none of them.
  const hook = lines.findIndex((l) => l.startsWith(BEFORE_HOOK_FAILED));
  if (hook !== -1) summary.unshift(`  ${lines[hook]!.slice(0, 1000)}`, ...lines.slice(hook + 1, hook + 4).map((l) => `    ${l.trim()}`));
  return summary.length > 0 ? summary : [`  ${output.trim().split('\n').slice(-5).join('\n  ')}`];
}

const passed = results.reduce((n, r) => n + r.passed, 0);
const failed = results.reduce((n, r) => n + r.failed, 0);
const skipped = results.reduce((n, r) => n + r.skipped, 0);
const left = results.reduce((n, r) => n + r.leftovers.length, 0);
if (left > 0) process.stdout.write(`${left} leftovers (listed above), ended and removed by the runner\n`);
for (const r of results.filter((x) => x.failed > 0)) process.stdout.write(`failed: ${r.file}\n${failureSummary(r.output).join('\n')}\n`);
if (files.length === 0) process.stdout.write('no test files matched\n');
process.stdout.write(`${passed} passed, ${failed} failed, ${skipped} skipped\n`);
process.exitCode = failed > 0 || files.length === 0 ? 1 : 0;
