// Kubernetes for the tests, built from Go modules: kube-apiserver,
// kube-controller-manager, kube-scheduler and kubelet of k8s.io/kubernetes at a release, with
// its k8s.io staging modules pinned to the same release (go.mod here), and the
// etcd server of the release Kubernetes itself requires (Debian's 3.4.23 is
// older than the 3.4.29 upstream names as the least for 1.31 and later), built
// with CGO_ENABLED=0 into ~/.cache/drainguard/kubernetes/VERSION/, once: a
// finished directory is never built again, only given a command added since
// (ADDED_LATER) that it lacks. That directory is an envtest
// KUBEBUILDER_ASSETS (test/support/cluster/binaries.ts).
//
//   node test/support/kubernetes/build.ts          the release of go.mod here
//   node test/support/kubernetes/build.ts 1.30     the newest 1.30 patch the proxy serves
//   node test/support/kubernetes/build.ts 1.38.0-beta.0   a pre-release, by its exact name
//   npm run k8s -- 1.30.x                          the same
//
// It prints the directory on its last line. The release of go.mod builds from
// this module (go.sum checks every download); another release gets a module
// of the same shape made in its cache directory from that release's go.mod.

import { execFileSync, spawnSync } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

const MODULE = import.meta.dirname;
/** What is built, by file name: Kubernetes' commands, and etcd at the release Kubernetes requires of it. */
const COMMANDS: Readonly<Record<string, string>> = {
  'kube-apiserver': 'k8s.io/kubernetes/cmd/kube-apiserver',
  'kube-controller-manager': 'k8s.io/kubernetes/cmd/kube-controller-manager',
  'kube-scheduler': 'k8s.io/kubernetes/cmd/kube-scheduler',
  kubelet: 'k8s.io/kubernetes/cmd/kubelet',
  etcd: 'go.etcd.io/etcd/server/v3',
};
/** Written last into a build's directory: without it the build did not finish. */
const DONE = '.built';
/**
 * Commands a release cannot build from the module proxy, and why: 1.38.0-beta.0's kubelet imports
 * sigs.k8s.io/iptables-wrappers, which the proxy does not serve (403), so that release is a control
 * plane only (the EvictionRequest tests need no node, nor a scheduler); test/support/node says so if asked for it.
 */
const LEFT_OUT: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  'v1.38.0-beta.0': {
    kubelet: 'its sigs.k8s.io/iptables-wrappers is not served by the Go module proxy',
    'kube-scheduler': 'no test schedules on it (216 s of a cold CI run saved)',
  },
};
const commandsOf = (release: string): [string, string][] => Object.entries(COMMANDS).filter(([file]) => !LEFT_OUT[release]?.[file]);
/**
 * Commands added after caches (CI's among them) were built without them: a finished build stays
 * finished without one, and buildRelease adds it alone (Go's build cache keeps that to minutes)
 * instead of building the release again. The preemption test needs a scheduler (issue 52). Measured
 * (/usr/bin/time -v, 2 shared cores, Go's build cache of each release's first build): kube-scheduler
 * added in 49 s of wall time to v1.37.2 (18 s of CPU), 37 s to v1.30.14, 216 s to v1.38.0-beta.0
 * (95 s of CPU: its kubelet was never built, so more of its packages were new); then 0.11 s.
 */
const ADDED_LATER: ReadonlySet<string> = new Set(['kube-scheduler']);

export const KUBERNETES_CACHE = join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'drainguard/kubernetes');

/** The release this module pins (go.mod's requirement of k8s.io/kubernetes). */
export function pinnedRelease(): string {
  return /^\s*(?:require\s+)?k8s\.io\/kubernetes (v\S+)/m.exec(readFileSync(join(MODULE, 'go.mod'), 'utf8'))![1]!;
}

/** The cache directory of RELEASE (v1.37.2). */
export const releaseDir = (release: string): string => join(KUBERNETES_CACHE, release);

/** RELEASE's directory when its build finished with every command, else undefined. */
export function builtRelease(release: string): string | undefined {
  const dir = releaseDir(release);
  const needed = commandsOf(release).filter(([file]) => !ADDED_LATER.has(file));
  return existsSync(join(dir, DONE)) && needed.every(([file]) => existsSync(join(dir, file))) ? dir : undefined;
}

/** RELEASE's kube-scheduler, or an error that says how to add it to its build. */
export function schedulerOf(release: string): string {
  const file = join(releaseDir(release), 'kube-scheduler');
  if (!builtRelease(release) || !existsSync(file))
    throw new Error(`Kubernetes ${release} has no kube-scheduler in ${releaseDir(release)}: npm run k8s -- ${release.slice(1)}`);
  return file;
}

/**
 * The one Go newer than the machines' that the module proxy serves: a release whose go.mod needs a
 * newer Go than the local one (1.38 says `go 1.27.0`) builds with it, set in the build's own
 * environment only; every other release builds with the local Go.
 */
const NEWER_TOOLCHAIN = 'go1.27.3';
const goEnv = (toolchain = 'local'): NodeJS.ProcessEnv => ({
  ...process.env,
  CGO_ENABLED: '0',
  GOTOOLCHAIN: toolchain,
  GOFLAGS: '-buildvcs=false -mod=mod',
});
const go = (args: string[], cwd: string, toolchain?: string): string =>
  execFileSync('go', args, { cwd, env: goEnv(toolchain), encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });

/** Compares two Go versions (`1.27.0`, `go1.26.8`): negative when A is older than B. */
function compareGo(a: string, b: string): number {
  const [x, y] = [a, b].map((v) => v.replace(/^go/, '').split('.').map(Number));
  for (let i = 0; i < 3; i++) if ((x![i] ?? 0) !== (y![i] ?? 0)) return (x![i] ?? 0) - (y![i] ?? 0);
  return 0;
}
/** The toolchain for a module whose go.mod says GO_LINE (`go 1.27.0`): local unless it needs a newer Go. */
function toolchainFor(goLine: string): string {
  const want = goLine.split(' ')[1]!;
  if (compareGo(want, go(['env', 'GOVERSION'], MODULE).trim()) <= 0) return 'local';
  if (compareGo(want, NEWER_TOOLCHAIN) > 0) throw new Error(`this release needs ${goLine}: newer than the local Go and ${NEWER_TOOLCHAIN}`);
  return NEWER_TOOLCHAIN;
}

/** The first release with the evictionrequest-controller (KEP-4563): the EvictionRequest responder's tests run on it. */
export const EVICTION_REQUEST_RELEASE = 'v1.38.0-beta.0';

/** RELEASE's KUBEBUILDER_ASSETS directory, or an error that says how to build it. */
export function releaseAssets(release: string): string {
  const dir = builtRelease(release);
  if (!dir) throw new Error(`Kubernetes ${release} is not built in ${releaseDir(release)}: npm run k8s -- ${release.slice(1)}`);
  return dir;
}

/** `1.30`, `1.30.x`, `v1.30.14`, `1.38.0-beta.0`: the release the proxy serves (the newest patch of a minor). */
export function resolveRelease(wanted: string): string {
  const exact = /^v?(\d+\.\d+\.\d+(?:-(?:alpha|beta|rc)\.\d+)?)$/.exec(wanted);
  if (exact) return `v${exact[1]}`;
  const minor = /^v?(\d+\.\d+)(\.x)?$/.exec(wanted);
  if (!minor) throw new Error(`not a Kubernetes release: ${JSON.stringify(wanted)} (give 1.37.2, 1.30 or 1.30.x)`);
  const served = go(['list', '-m', '-versions', 'k8s.io/kubernetes'], MODULE).trim().split(/\s+/).slice(1);
  const patches = served.filter((v) => v.startsWith(`v${minor[1]}.`) && !v.includes('-'));
  if (patches.length === 0)
    throw new Error(`the Go module proxy serves no k8s.io/kubernetes v${minor[1]}.x (it serves ${served.join(' ')})`);
  return patches.sort((a, b) => Number(a.split('.')[2]) - Number(b.split('.')[2])).at(-1)!;
}

/**
 * A module like this one for RELEASE, in DIR: the release's go.mod names its
 * staging modules (replaced there by folders); each is pinned to v0.MINOR.PATCH.
 */
function makeModule(release: string, dir: string): string {
  // `go list -m` reads the release's go.mod without refusing one that needs a newer Go (`go mod download` would).
  const info = JSON.parse(go(['list', '-m', '-json', `k8s.io/kubernetes@${release}`], MODULE)) as { GoMod: string };
  const upstream = readFileSync(info.GoMod, 'utf8');
  const staging = [...upstream.matchAll(/^\s*(k8s\.io\/\S+) => \.\/staging\//gm)].map((m) => m[1]!);
  const goLine = /^go \S+$/m.exec(upstream)![0];
  // v1.38.0-beta.0's staging modules are v0.38.0-beta.0.
  const staged = `v0${release.slice(release.indexOf('.'))}`;
  const toolchain = toolchainFor(goLine);
  writeFileSync(
    join(dir, 'go.mod'),
    [
      'module drainguard.dev/test/kubernetes',
      '',
      goLine,
      '',
      `require k8s.io/kubernetes ${release}`,
      '',
      'replace (',
      ...staging.map((m) => `\t${m} => ${m} ${staged}`),
      ')',
      '',
    ].join('\n'),
  );
  // etcd at the release of the etcd client Kubernetes requires: a newer one would raise grpc and the rest under it.
  const etcd = /^\s*go\.etcd\.io\/etcd\/client\/v3 (v\S+)/m.exec(upstream)![1]!;
  // The commands are main packages: a file of blank imports would not build, so `go get` them.
  go(['get', ...commandsOf(release).map(([, pkg]) => `${pkg}@${pkg.startsWith('k8s.io/') ? release : etcd}`)], dir, toolchain);
  return toolchain;
}

/** Builds COMMANDS of RELEASE into WORK (made by the caller); returns the seconds it took. */
function compile(release: string, commands: [string, string][], work: string): number {
  let module = MODULE;
  let toolchain = 'local';
  if (release !== pinnedRelease()) {
    module = join(work, 'module');
    mkdirSync(module);
    toolchain = makeModule(release, module);
  }
  const [major, minor] = release.slice(1).split('.');
  const stamp = ['k8s.io/component-base/version', 'k8s.io/client-go/pkg/version'].flatMap((pkg) => [
    `-X ${pkg}.gitVersion=${release}`,
    `-X ${pkg}.gitMajor=${major}`,
    `-X ${pkg}.gitMinor=${minor}`,
    `-X ${pkg}.gitTreeState=clean`,
  ]);
  const t0 = Date.now();
  // One go build per file name (-o names it); the packages they share are compiled once, in Go's build cache.
  for (const [file, pkg] of commands) {
    const build = spawnSync('go', ['build', '-trimpath', '-ldflags', ['-s', '-w', ...stamp].join(' '), '-o', join(work, file), pkg], {
      cwd: module,
      env: goEnv(toolchain),
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    if (build.status !== 0)
      throw new Error(`go build ${pkg} for Kubernetes ${release} failed (exit ${build.status ?? build.signal}); its output is above`);
  }
  rmSync(join(work, 'module'), { recursive: true, force: true });
  return Math.round((Date.now() - t0) / 1000);
}

/** Builds RELEASE unless built, or only the commands added since it was; returns its directory. */
export function buildRelease(release: string): string {
  const dir = releaseDir(release);
  const work = `${dir}.building-${process.pid}`;
  const built = builtRelease(release);
  if (built) {
    const missing = commandsOf(release).filter(([file]) => !existsSync(join(dir, file)));
    if (missing.length === 0) return built;
    rmSync(work, { recursive: true, force: true });
    mkdirSync(work, { recursive: true });
    const seconds = compile(release, missing, work);
    for (const [file] of missing) renameSync(join(work, file), join(dir, file));
    appendFileSync(join(dir, DONE), `${missing.map(([file]) => file).join(', ')} added in ${seconds} s\n`);
    rmSync(work, { recursive: true, force: true });
    return dir;
  }
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  const seconds = compile(release, commandsOf(release), work);
  const leftOut = Object.entries(LEFT_OUT[release] ?? {}).map(([file, why]) => `no ${file}: ${why}\n`);
  writeFileSync(join(work, DONE), [`${release} built in ${seconds} s\n`, ...leftOut].join(''));
  rmSync(dir, { recursive: true, force: true });
  renameSync(work, dir);
  return dir;
}

if (import.meta.main) {
  const release = resolveRelease(process.argv[2] ?? pinnedRelease());
  const before = builtRelease(release);
  const lacking = commandsOf(release)
    .filter(([file]) => !existsSync(join(releaseDir(release), file)))
    .map(([file]) => file);
  const t0 = Date.now();
  const dir = buildRelease(release);
  const took = `${Math.round((Date.now() - t0) / 1000)} s`;
  const what = !before ? `built in ${took}` : lacking.length > 0 ? `built before, ${lacking.join(', ')} added in ${took}` : 'built before';
  process.stdout.write(`Kubernetes ${release}: ${what}\n${dir}\n`);
}
