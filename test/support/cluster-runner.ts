// The runner's side of the shared control plane: which test files need it
// (they import test/support/cluster, directly or through a helper), and the
// daemon process that runs it for the length of the run.

import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

const CLUSTER_SUPPORT = resolve('test/support/cluster');
const START_MS = 180_000;
const STOP_MS = 30_000;

const importsCache = new Map<string, boolean>();

/** Whether `file` imports test/support/cluster, following its relative imports (a cheap text check). */
export function needsCluster(file: string, seen = new Set<string>()): boolean {
  const path = resolve(file);
  const cached = importsCache.get(path);
  if (cached !== undefined) return cached;
  if (seen.has(path)) return false;
  seen.add(path);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return false;
  }
  const found = [...text.matchAll(/\bfrom\s+'(\.[^']+)'/g)].some(([, spec]) => {
    const target = resolve(dirname(path), spec!);
    return target.startsWith(CLUSTER_SUPPORT) || (target.endsWith('.ts') && needsCluster(target, seen));
  });
  importsCache.set(path, found);
  return found;
}

export interface SharedCluster {
  /** The JSON state file for TEST_CLUSTER_STATE, once the control plane is up. */
  readonly ready: Promise<string>;
  /** What it printed: the ready line, or why it failed. */
  readonly output: () => string;
  stop(): Promise<void>;
}

/** Starts the daemon (ENV: its environment, which decides the tier and the release); it stops when stop() is called or this process goes away (its stdin closes). */
export function startSharedCluster(env: NodeJS.ProcessEnv = process.env): SharedCluster {
  const child: ChildProcess = spawn(process.execPath, [resolve('test/support/cluster/daemon.ts')], {
    env,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let output = '';
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const ready = new Promise<string>((resolveReady, reject) => {
    const timer = setTimeout(() => reject(new Error(`the control plane did not start within ${START_MS} ms:\n${output}`)), START_MS);
    child.stdout!.on('data', (d) => {
      output += d;
      const m = /^ready (\S+)/m.exec(output);
      if (m) {
        clearTimeout(timer);
        resolveReady(m[1]!);
      }
    });
    child.stderr!.on('data', (d) => (output += d));
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`the control plane exited (${code ?? signal}) before it was ready:\n${output}`));
    });
  });
  ready.catch(() => {});
  return {
    ready,
    output: () => output,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.stdin!.end();
      const timer = setTimeout(() => child.kill('SIGKILL'), STOP_MS);
      await exited;
      clearTimeout(timer);
    },
  };
}
