// Kubernetes for the tests, built from Go modules: kube-apiserver,
// kube-controller-manager and kubelet of k8s.io/kubernetes at a release, with
// its k8s.io staging modules pinned to the same release (go.mod here), and the
// etcd server of the release Kubernetes itself requires (Debian's 3.4.23 is
// older than the 3.4.29 upstream names as the least for 1.31 and later), built
// with CGO_ENABLED=0 into ~/.cache/drainguard/kubernetes/VERSION/, once: a
// finished directory is never built again. That directory is an envtest
// KUBEBUILDER_ASSETS (test/support/cluster/binaries.ts).
//
//   node test/support/kubernetes/build.ts          the release of go.mod here
//   node test/support/kubernetes/build.ts 1.30     the newest 1.30 patch the proxy serves
//   npm run k8s -- 1.30.x                          the same
//
// It prints the directory on its last line. The release of go.mod builds from
// this module (go.sum checks every download); another release gets a module
// of the same shape made in its cache directory from that release's go.mod.

import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

const MODULE = import.meta.dirname;
/** What is built, by file name: Kubernetes' commands, and etcd at the release Kubernetes requires of it. */
const COMMANDS: Readonly<Record<string, string>> = {
  'kube-apiserver': 'k8s.io/kubernetes/cmd/kube-apiserver',
  'kube-controller-manager': 'k8s.io/kubernetes/cmd/kube-controller-manager',
  kubelet: 'k8s.io/kubernetes/cmd/kubelet',
  etcd: 'go.etcd.io/etcd/server/v3',
};
/** Written last into a build's directory: without it the build did not finish. */
const DONE = '.built';

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
  return existsSync(join(dir, DONE)) && Object.keys(COMMANDS).every((file) => existsSync(join(dir, file))) ? dir : undefined;
}

const goEnv = (): NodeJS.ProcessEnv => ({ ...process.env, CGO_ENABLED: '0', GOTOOLCHAIN: 'local', GOFLAGS: '-buildvcs=false -mod=mod' });
const go = (args: string[], cwd: string): string =>
  execFileSync('go', args, { cwd, env: goEnv(), encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });

/** `1.30`, `1.30.x`, `v1.30.14`: the release the proxy serves (the newest patch of a minor). */
export function resolveRelease(wanted: string): string {
  const exact = /^v?(\d+\.\d+\.\d+)$/.exec(wanted);
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
function makeModule(release: string, dir: string): void {
  const info = JSON.parse(go(['mod', 'download', '-json', `k8s.io/kubernetes@${release}`], MODULE)) as { GoMod: string };
  const upstream = readFileSync(info.GoMod, 'utf8');
  const staging = [...upstream.matchAll(/^\s*(k8s\.io\/\S+) => \.\/staging\//gm)].map((m) => m[1]!);
  const goLine = /^go \S+$/m.exec(upstream)![0];
  const staged = `v0${release.slice(release.indexOf('.'))}`;
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
  go(['get', ...Object.values(COMMANDS).map((pkg) => `${pkg}@${pkg.startsWith('k8s.io/') ? release : etcd}`)], dir);
}

/** Builds RELEASE unless built; returns its directory. */
export function buildRelease(release: string): string {
  const built = builtRelease(release);
  if (built) return built;
  const dir = releaseDir(release);
  const work = `${dir}.building-${process.pid}`;
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  let module = MODULE;
  if (release !== pinnedRelease()) {
    module = join(work, 'module');
    mkdirSync(module);
    makeModule(release, module);
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
  for (const [file, pkg] of Object.entries(COMMANDS)) {
    const build = spawnSync('go', ['build', '-trimpath', '-ldflags', ['-s', '-w', ...stamp].join(' '), '-o', join(work, file), pkg], {
      cwd: module,
      env: goEnv(),
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    if (build.status !== 0)
      throw new Error(`go build ${pkg} for Kubernetes ${release} failed (exit ${build.status ?? build.signal}); its output is above`);
  }
  rmSync(join(work, 'module'), { recursive: true, force: true });
  writeFileSync(join(work, DONE), `${release} built in ${Math.round((Date.now() - t0) / 1000)} s\n`);
  rmSync(dir, { recursive: true, force: true });
  renameSync(work, dir);
  return dir;
}

if (import.meta.main) {
  const release = resolveRelease(process.argv[2] ?? pinnedRelease());
  const before = builtRelease(release);
  const t0 = Date.now();
  const dir = buildRelease(release);
  process.stdout.write(
    `Kubernetes ${release}: ${before ? 'built before' : `built in ${Math.round((Date.now() - t0) / 1000)} s`}\n${dir}\n`,
  );
}
