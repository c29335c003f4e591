// Go for the tests, with the environment's own settings (GOPROXY, GOMODCACHE,
// GOCACHE): the go command on PATH, or $GO. The standard-library client
// (clients/go) builds with any Go from 1.19 on. clients/go/ctrl is built and
// tested against two controller-runtime releases (ctrlBuild): the oldest it
// supports, which is what its go.mod requires (built with its go.work, against
// the client beside it), and the newest, CONTROLLER_RUNTIME_NEWEST: its go.mod
// raised to that release by `go get` and `go mod tidy`, as a user's would be,
// into ~/.cache/drainguard/go/ (keyed by that version and the go.mod and
// go.sum it came from), and given to every go command with -modfile.
// Both need Go and the module proxy; where they cannot be had, test/run.ts
// fails the files that build them, with the reason, once per run.

import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';

const REPO = resolve(import.meta.dirname, '../..');
const CLIENT = resolve(REPO, 'clients/go');
const CTRL = resolve(REPO, 'clients/go/ctrl');
const CLIENT_MODULE = 'github.com/drainguard/drainguard/clients/go';
const GO_MS = 3_600_000; // a cold build on 2 busy cores: minutes, tens of them when others build too

/** The newest controller-runtime the module proxy serves, which clients/go/ctrl is tested against. */
export const CONTROLLER_RUNTIME_NEWEST = 'v0.25.3';

/** The go command: $GO, else `go` on PATH. */
export const GO = process.env.GO ?? 'go';

/**
 * The environment of every go command: the caller's, but never a toolchain download, and
 * -trimpath: without it Go's build cache keys a package by its directory too, and a module
 * built from another module cache (go-module-ctrl.test.ts fetches into a fresh one) would be
 * compiled anew, minutes on 2 cores.
 */
export function goEnv(): NodeJS.ProcessEnv {
  return { ...process.env, GOTOOLCHAIN: 'local', GOFLAGS: `${process.env.GOFLAGS ?? ''} -trimpath`.trim() };
}

/** The gofmt of that Go. */
export function gofmt(): string {
  return resolve(execFileSync(GO, ['env', 'GOROOT'], { env: goEnv(), encoding: 'utf8' }).trim(), 'bin/gofmt');
}

/** `go build -o OUT PKG` in the module at `dir` (clients/go/ctrl: its oldest build); returns OUT. */
export function goBuild(dir: string, pkg: string, out: string): string {
  if (resolve(REPO, dir) === CTRL) return ctrlBuild('oldest').build(pkg, out);
  execFileSync(GO, ['build', '-o', out, pkg], { cwd: resolve(REPO, dir), env: goEnv(), stdio: ['ignore', 'inherit', 'inherit'] });
  return out;
}

export type CtrlRelease = 'oldest' | 'newest';

/** clients/go/ctrl built against one controller-runtime release. */
export interface CtrlBuild {
  readonly release: CtrlRelease;
  /** The go.mod this build uses: clients/go/ctrl's own, or the newest's in the cache. */
  readonly modfile: string;
  /** Its controller-runtime, client-go and go line, as the go command resolves them. */
  readonly controllerRuntime: string;
  readonly clientGo: string;
  readonly goLine: string;
  /** The go command's environment for this build, in clients/go/ctrl. */
  readonly env: NodeJS.ProcessEnv;
  /** `go ARGS` in clients/go/ctrl; its stdout. Throws with go's stderr. */
  go(...args: string[]): string;
  /** `go build -o OUT PKG`; returns OUT. */
  build(pkg: string, out: string): string;
}

const builds = new Map<CtrlRelease, CtrlBuild>();

/**
 * clients/go/ctrl against its oldest or newest controller-runtime, its modules
 * downloaded. Throws, naming what is missing and the fix, where Go or the
 * modules cannot be had.
 */
export function ctrlBuild(release: CtrlRelease): CtrlBuild {
  const known = builds.get(release);
  if (known) return known;
  const base = goEnv();
  const have = spawnSync(GO, ['env', 'GOVERSION'], { env: base, encoding: 'utf8' });
  if (have.status !== 0)
    throw new Error(
      `no Go to build clients/go/ctrl: ${GO}: ${have.error?.message ?? have.stderr.trim()}; put a Go new enough for clients/go/ctrl/go.mod (go ${goLineOf(join(CTRL, 'go.mod'))}) and for controller-runtime ${CONTROLLER_RUNTIME_NEWEST} on PATH, or name it in $GO`,
    );
  const modfile = release === 'oldest' ? join(CTRL, 'go.mod') : newestModfile(base);
  // The oldest builds in the workspace of clients/go/ctrl/go.work; -modfile works outside a workspace only.
  const env = release === 'oldest' ? base : { ...base, GOWORK: 'off', GOFLAGS: `${base.GOFLAGS ?? ''} -modfile=${modfile}`.trim() };
  const go = (...args: string[]) =>
    run(args, env, `clients/go/ctrl (controller-runtime ${release === 'newest' ? CONTROLLER_RUNTIME_NEWEST : 'of its go.mod'})`);
  // Every module a build or test of the package needs, downloaded and checked against go.sum now, not in a test's time.
  go('list', '-deps', '-test', './...');
  const [controllerRuntime, clientGo] = go('list', '-m', '-f', '{{.Version}}', 'sigs.k8s.io/controller-runtime', 'k8s.io/client-go')
    .trim()
    .split('\n') as [string, string];
  const build: CtrlBuild = {
    release,
    modfile,
    controllerRuntime,
    clientGo,
    goLine: goLineOf(modfile),
    env,
    go,
    build: (pkg, out) => (go('build', '-o', out, pkg), out),
  };
  builds.set(release, build);
  return build;
}

/** The newest's go.mod: made once per version and source go.mod, then reused. */
function newestModfile(env: NodeJS.ProcessEnv): string {
  const source = ['go.mod', 'go.sum'].map((f) => readFileSync(join(CTRL, f)));
  const key = createHash('sha256')
    .update(CONTROLLER_RUNTIME_NEWEST)
    .update(CLIENT)
    .update(source[0]!)
    .update(source[1]!)
    .digest('hex')
    .slice(0, 12);
  const dir = join(
    process.env.XDG_CACHE_HOME || join(homedir(), '.cache'),
    'drainguard',
    'go',
    `ctrl-controller-runtime-${CONTROLLER_RUNTIME_NEWEST}-${key}`,
  );
  const modfile = join(dir, 'go.mod');
  if (existsSync(modfile)) return modfile;
  // Made beside it and renamed into place: a run that stops half-way leaves nothing that looks done.
  const making = `${dir}.${process.pid}`;
  mkdirSync(making, { recursive: true });
  try {
    for (const f of ['go.mod', 'go.sum']) copyFileSync(join(CTRL, f), join(making, f));
    const tmp = join(making, 'go.mod');
    const offline = { ...env, GOWORK: 'off' };
    const what = `clients/go/ctrl raised to controller-runtime ${CONTROLLER_RUNTIME_NEWEST}`;
    // The released ctrl module requires the client at its release; here, the one beside it.
    run(['mod', 'edit', `-modfile=${tmp}`, `-replace=${CLIENT_MODULE}=${CLIENT}`], offline, what);
    run(['get', `-modfile=${tmp}`, `sigs.k8s.io/controller-runtime@${CONTROLLER_RUNTIME_NEWEST}`], offline, what);
    run(['mod', 'tidy', `-modfile=${tmp}`], offline, what);
    try {
      renameSync(making, dir);
    } catch (err) {
      if (!existsSync(modfile)) throw err; // else another run made it meanwhile
    }
  } finally {
    rmSync(making, { recursive: true, force: true });
  }
  return modfile;
}

function run(args: string[], env: NodeJS.ProcessEnv, what: string): string {
  const r = spawnSync(GO, args, { cwd: CTRL, env, encoding: 'utf8', timeout: GO_MS, maxBuffer: 64 << 20 });
  if (r.status === 0) return r.stdout;
  const why = r.error?.message ?? r.stderr.trim().split('\n').slice(-8).join('\n');
  throw new Error(
    `${what}: ${GO} ${args.join(' ')} failed: ${why}\n(it needs a Go at least as new as the go lines of clients/go/ctrl/go.mod and of controller-runtime ${CONTROLLER_RUNTIME_NEWEST}'s, and the modules: a reachable GOPROXY or a filled GOMODCACHE)`,
  );
}

function goLineOf(modfile: string): string {
  return /^go (\S+)/m.exec(readFileSync(modfile, 'utf8'))?.[1] ?? '?';
}

/** Both builds, prepared; what test/run.ts prints, or why they cannot be had (then the files that need them fail). */
export function ctrlCheck(): { built: string } | { missing: string } {
  try {
    const [oldest, newest] = [ctrlBuild('oldest'), ctrlBuild('newest')];
    const version = execFileSync(GO, ['env', 'GOVERSION'], { env: goEnv(), encoding: 'utf8' }).trim();
    const say = (b: CtrlBuild) => `controller-runtime ${b.controllerRuntime} (client-go ${b.clientGo})`;
    return { built: `${version}, ${say(oldest)}, the oldest supported (its go.mod), and ${say(newest)}, the newest` };
  } catch (err) {
    return { missing: (err as Error).message };
  }
}

// `node test/support/go.ts [--warm]`: prepares both builds of clients/go/ctrl and says which;
// --warm also compiles what the tests build, into Go's build cache.
if (import.meta.main) {
  const check = ctrlCheck();
  if ('missing' in check) {
    process.stderr.write(`clients/go/ctrl cannot be built here: ${check.missing}\n`);
    process.exit(1);
  }
  process.stdout.write(`clients/go/ctrl: ${check.built}\n`);
  if (process.argv.includes('--warm')) {
    for (const release of ['oldest', 'newest'] as const) {
      const b = ctrlBuild(release);
      for (const args of [
        ['build', './...'],
        ['vet', './...'],
        ['test', '-race', '-count=1', '-run', '^$', './...'],
      ])
        b.go(...args);
    }
  }
}
