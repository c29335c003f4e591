// The test runner: every test/**/*.test.ts in its own process (real signals and
// child processes must not leak between files), two at a time, and a last line
// `N passed, N failed`. Arguments filter the files by substring. When a file
// needs the real control plane, one is started for the whole run and stopped
// at its end, also when the run is interrupted (test/support/cluster/).

import { type ChildProcess, spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { type SharedCluster, needsCluster, startSharedCluster } from './support/cluster-runner.ts';
import { STATE_VARIABLE } from './support/cluster/index.ts';

const FILE_TIMEOUT_MS = Number(process.env.TEST_FILE_TIMEOUT_MS ?? 240_000);
const CONCURRENCY = Number(process.env.TEST_CONCURRENCY ?? 2);
const filters = process.argv.slice(2);

function find(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return e.name === 'fixtures' || e.name === 'support' ? [] : find(path);
    return e.name.endsWith('.test.ts') ? [path] : [];
  });
}

const files = find('test')
  .map((f) => relative('.', f))
  .filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)))
  .sort();

interface Result {
  file: string;
  passed: number;
  failed: number;
  output: string;
  ms: number;
}

const cluster: SharedCluster | undefined = files.some((f) => needsCluster(f)) ? startSharedCluster() : undefined;
const running = new Set<ChildProcess>();
let interrupted = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    interrupted = true;
    process.stdout.write(`runner: ${signal}, stopping\n`);
    for (const child of running) child.kill('SIGKILL');
    void (cluster?.stop() ?? Promise.resolve()).finally(() => process.exit(signal === 'SIGINT' ? 130 : 143));
  });
}

async function runFile(file: string): Promise<Result> {
  const started = Date.now();
  const env: NodeJS.ProcessEnv = { ...process.env, NODE_DISABLE_COLORS: '1', FORCE_COLOR: '0' };
  if (cluster && needsCluster(file)) {
    try {
      env[STATE_VARIABLE] = await cluster.ready;
    } catch (err) {
      return { file, passed: 0, failed: 1, output: String(err), ms: Date.now() - started };
    }
  }
  if (interrupted) return { file, passed: 0, failed: 1, output: 'not run: the run was interrupted', ms: 0 };
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['test/support/run-file.ts', file], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    running.add(child);
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    const timer = setTimeout(() => {
      output += `\n  runner: ${file} ran past ${FILE_TIMEOUT_MS} ms and was killed\n`;
      child.kill('SIGKILL');
    }, FILE_TIMEOUT_MS);
    child.on('close', (code, signal) => {
      running.delete(child);
      clearTimeout(timer);
      const total = Number(/Total:\s+(\d+)/.exec(output)?.[1] ?? NaN);
      const done = Number(/Passed:\s+(\d+)/.exec(output)?.[1] ?? NaN);
      let passed = Number.isNaN(done) ? 0 : done;
      // A skipped test is not a passed one: it counts as failed.
      let failed = Number.isNaN(total) ? 1 : total - passed;
      // A file that crashed, hung or exited non-zero after its summary still counts as a failure.
      if ((code !== 0 || signal) && failed === 0) failed = 1;
      if (Number.isNaN(total)) passed = 0;
      resolve({ file, passed, failed, output, ms: Date.now() - started });
    });
  });
}

const results: Result[] = [];
let next = 0;
await Promise.all(
  Array.from({ length: Math.min(CONCURRENCY, files.length) }, async () => {
    while (next < files.length && !interrupted) {
      const file = files[next++]!;
      const result = await runFile(file);
      results.push(result);
      const mark = result.failed === 0 ? 'ok  ' : 'FAIL';
      process.stdout.write(`${mark} ${file} (${result.passed} passed, ${result.failed} failed, ${result.ms} ms)\n`);
      if (result.failed > 0 || process.env.TEST_VERBOSE) process.stdout.write(`${result.output.trim()}\n\n`);
    }
  }),
);

await cluster?.stop();
if (cluster && process.env.TEST_VERBOSE) process.stdout.write(`control plane: ${cluster.output().trim()}\n`);

const passed = results.reduce((n, r) => n + r.passed, 0);
const failed = results.reduce((n, r) => n + r.failed, 0);
if (files.length === 0) process.stdout.write('no test files matched\n');
process.stdout.write(`${passed} passed, ${failed} failed\n`);
process.exitCode = failed > 0 || files.length === 0 ? 1 : 0;
