// One executable: a Node.js runtime, stripped, with the bundle injected as a
// single executable application. The blob (the bundle and V8's code cache for
// it) is made by that same runtime, under qemu-user for another architecture,
// since V8 rejects a code cache made by another build. The runtime is stripped
// (its debug info and symbols) before the blob is injected: a binary
// stripped after injection segfaults at start.
//
// Foreign executables are slow to make (the blob under emulation), so they are
// kept in the build cache under a hash of everything they are made from.

import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BOOT_FILE, BOOT_SOURCE, MAIN_ASSET, MAIN_CACHE_ASSET, wrapMain } from './boot.ts';
import { LAZY_ASSET, LAZY_CACHE_ASSET } from './lazy.ts';
import type { Runtime } from './runtime.ts';
import { type Target, isNative } from './targets.ts';

const require = createRequire(import.meta.url);
const POSTJECT = join(dirname(require.resolve('postject/package.json')), 'dist/cli.js');
const SEA_FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';
/** Foreign executables kept per architecture; older ones are removed. */
const KEEP = 3;

export interface ExecutableOptions {
  readonly target: Target;
  readonly runtime: Runtime;
  /** The bundled main script (CommonJS). */
  readonly bundle: string;
  readonly output: string;
  readonly cacheDir: string;
  /** The lazily loaded code (lazy.ts): an asset, with a code cache made by the runtime. */
  readonly lazy: string;
  /** The arguments of the run after which the main script's code cache is taken (code-cache.ts): the start that must be fast. */
  readonly training: readonly string[];
}

/**
 * Writes OUTPUT (beside it, then renamed into place: a running test never sees half an executable);
 * says whether it came from the cache.
 */
export function buildExecutable(options: ExecutableOptions): { cached: boolean } {
  const { target, output, cacheDir } = options;
  const staging = join(dirname(output), `.${basename(output)}-${process.pid}`);
  try {
    if (isNative(target.arch)) {
      make(options, staging);
      renameSync(staging, output);
      return { cached: false };
    }
    const cached = join(cacheDir, `drainguard-linux-${target.arch}-${cacheKey(options)}`);
    const hit = existsSync(cached);
    if (hit) {
      copyFileSync(cached, staging);
      const now = new Date();
      utimesSync(cached, now, now);
    } else {
      make(options, staging);
      mkdirSync(cacheDir, { recursive: true });
      copyFileSync(staging, `${cached}.${process.pid}`);
      renameSync(`${cached}.${process.pid}`, cached);
      prune(cacheDir, `drainguard-linux-${target.arch}-`);
    }
    chmodSync(staging, 0o755);
    renameSync(staging, output);
    return { cached: hit };
  } finally {
    rmSync(staging, { force: true });
  }
}

function make({ target, runtime, bundle, lazy, training }: ExecutableOptions, staging: string): void {
  const blob = `${staging}.blob`;
  const config = `${staging}.sea.json`;
  const lazyCache = `${staging}.lazy.cache`;
  const main = `${staging}.main.cjs`;
  const mainCache = `${staging}.main.cache`;
  const boot = join(dirname(bundle), BOOT_FILE);
  const codeCache = join(dirname(fileURLToPath(import.meta.url)), 'code-cache.ts');
  try {
    // With the executable's own V8 flags: V8 accepts a code cache only from the same flags.
    run(runtime.command([...BUILD_ARGV, ...EXEC_ARGV, codeCache, 'lazy', lazy, lazyCache]), { env: BUILD_ENV });
    writeFileSync(main, wrapMain(readFileSync(bundle, 'utf8')));
    run(runtime.command([...BUILD_ARGV, ...EXEC_ARGV, codeCache, 'main', main, mainCache, ...training]), { env: BUILD_ENV });
    writeFileSync(boot, BOOT_SOURCE);
    const assets = { [LAZY_ASSET]: lazy, [LAZY_CACHE_ASSET]: lazyCache, [MAIN_ASSET]: main, [MAIN_CACHE_ASSET]: mainCache };
    // Run beside the boot script and name it bare: the blob keeps the name (stack traces show it), not the build's path.
    writeFileSync(config, JSON.stringify({ ...seaConfig(BOOT_FILE, blob), assets }));
    run(runtime.command([...BUILD_ARGV, '--experimental-sea-config', config]), { cwd: dirname(bundle), env: BUILD_ENV });
    copyFileSync(runtime.node, staging);
    run([isNative(target.arch) ? 'strip' : `${target.gnu}-strip`, '--strip-all', staging]);
    run([process.execPath, POSTJECT, staging, 'NODE_SEA_BLOB', blob, '--sentinel-fuse', SEA_FUSE]);
    chmodSync(staging, 0o755);
  } finally {
    for (const f of [blob, config, lazyCache, main, mainCache, boot]) rmSync(f, { force: true });
  }
}

/**
 * V8 flags of the executable (not NODE_OPTIONS: the operator would inherit
 * them). One compiler and GC helper thread instead of one per core, and a
 * young generation of 2 MiB, fixed: drainguard idles and allocates little,
 * and its start stays below the 80 % of it at which V8 schedules a
 * collection, which a smaller one put into every start (docs/performance.md).
 * Optimizing compiles run on the main thread, not on the helper: a compile
 * there can wait for a main-thread collection, and process.exit() joins the
 * helper (nodejs/node#54918; sidecar/main.ts exits that way). These leave
 * V8's flag hash (so every code cache) as it is.
 */
export const EXEC_ARGV = [
  '--v8-pool-size=1',
  '--no-concurrent-recompilation',
  '--no-concurrent-sparkplug',
  '--min-semi-space-size=2',
  '--max-semi-space-size=2',
];
/**
 * V8 flags of the build's own runs of the runtime, never of the executable.
 * A code cache holds strings hashed with the process's hash seed, which V8
 * draws from its random number generator: made under a random seed, two
 * builds of one commit differ in their code caches. --random-seed fixes that
 * generator in the build's processes alone; unlike --hash-seed, it is left
 * out of V8's flag hash, so the executable accepts the cache and still draws
 * its own seed at every start (docs/development.md, "Releases").
 */
const BUILD_ARGV = ['--random-seed=1'];
/**
 * The environment of the build's runs of the runtime: PATH alone, not the
 * builder's. The training run is drainguard, which takes its options from the
 * environment (DRAINGUARD_HTTP_ADDR made it start a listener, and the build
 * fail), and NODE_OPTIONS would change the V8 flags the caches are checked
 * against: the caches are the commit's, whoever builds it.
 */
const BUILD_ENV = { PATH: process.env.PATH ?? '' };
/**
 * NODE_OPTIONS is the operator's, not drainguard's: it shares drainguard's
 * environment in wrap mode, and a Node operator's `--require ./tracing.js`
 * made the runtime exit 1 before drainguard ran. "none": the runtime takes
 * its options from execArgv alone; the variable is passed on untouched.
 */
const seaConfig = (main: string, output: string) => ({
  main,
  output,
  disableExperimentalSEAWarning: true,
  useCodeCache: true,
  useSnapshot: false,
  execArgv: EXEC_ARGV,
  execArgvExtension: 'none',
});

/** Everything the executable is made from: the bundle, the runtime, the tools, and this procedure itself. */
function cacheKey({ target, runtime, bundle, lazy, training }: ExecutableOptions): string {
  const hash = createHash('sha256');
  for (const part of [
    JSON.stringify(training),
    readFileSync(bundle),
    readFileSync(lazy),
    readFileSync(join(dirname(fileURLToPath(import.meta.url)), 'code-cache.ts')),
    readFileSync(join(dirname(fileURLToPath(import.meta.url)), 'boot.ts')),
    runtime.id,
    JSON.stringify(seaConfig('MAIN', 'OUTPUT')),
    readFileSync(fileURLToPath(import.meta.url)),
    (require('postject/package.json') as { version: string }).version,
    execFileSync(`${target.gnu}-strip`, ['--version'], { encoding: 'utf8' }).split('\n')[0]!,
  ]) {
    hash.update(part).update('\0');
  }
  return hash.digest('hex').slice(0, 32);
}

function prune(dir: string, prefix: string): void {
  const entries = readdirSync(dir)
    .filter((name) => name.startsWith(prefix) && /^[0-9a-f]+$/.test(name.slice(prefix.length)))
    .map((name) => ({ path: join(dir, name), mtime: statSync(join(dir, name)).mtimeMs }))
    .sort((a, b) => b.mtime - a.mtime);
  for (const old of entries.slice(KEEP)) rmSync(old.path, { force: true });
}

/** Runs a build tool; its output shows only when it fails (postject's notes about ELF sections are noise). */
function run([file, ...args]: readonly string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): void {
  try {
    execFileSync(file!, args, { stdio: 'pipe', ...options });
  } catch (err) {
    const { stdout, stderr } = err as { stdout?: Buffer; stderr?: Buffer };
    process.stderr.write(`${stdout ?? ''}${stderr ?? ''}`);
    throw err;
  }
}
