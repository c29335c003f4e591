// Shipped operators for the tests, built from the Go module proxy at pinned
// versions, as Kubernetes is (../kubernetes/build.ts): each module is
// downloaded whole (`go mod download -json` gives its directory), copied, and
// its command built there with the module's own go.mod and go.sum (a module
// with `replace` directives cannot be `go install`ed at a version),
// CGO_ENABLED=0, into ~/.cache/drainguard/shipped/NAME-VERSION/ with the files
// of its own tree the tests deploy it with (CRDs, RBAC) beside the binary, and
// a marker written last: a finished directory is never built again. Nothing of
// these projects enters the repository.
//
//   node test/support/shipped/build.ts          every operator of OPERATORS
//   node test/support/shipped/build.ts keda     one
//
// It prints one line per operator and the cache directory on its last line.

import { execFileSync, spawnSync } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';

export interface ShippedOperator {
  readonly module: string;
  /** The version built: the newest the proxy serves that builds with this machine's Go (see `why`). */
  readonly version: string;
  /** Why this version and not a newer one. */
  readonly why: string;
  /** The main package, relative to the module's root. */
  readonly command: string;
  /** The binary's path in the project's published image (its Dockerfile's COPY and ENTRYPOINT). */
  readonly imagePath: string;
  /** -X flags its Makefile stamps, with VERSION for the version. */
  readonly stamp: readonly string[];
  /** Files and directories of the module's tree kept beside the binary (what its chart is made from). */
  readonly keep: readonly string[];
  /** GOTOOLCHAIN for this build's go commands alone, where the module needs a newer Go than this machine's. */
  readonly toolchain?: string;
}

export const OPERATORS: Readonly<Record<string, ShippedOperator>> = {
  keda: {
    module: 'github.com/kedacore/keda/v2',
    version: 'v2.21.0',
    why: 'v2.21.1 says go 1.27.4 in its go.mod, newer than this machine has or may fetch',
    command: './cmd/operator',
    imagePath: '/keda',
    stamp: ['github.com/kedacore/keda/v2/version.Version=VERSION', 'github.com/kedacore/keda/v2/version.GitCommit=VERSION'],
    keep: ['config/crd/bases', 'config/rbac/role.yaml', 'config/manager/manager.yaml'],
  },
  'external-secrets': {
    module: 'github.com/external-secrets/external-secrets',
    version: 'v0.16.2',
    why: 'v1.3.2 is not served whole by the module proxy',
    command: '.',
    imagePath: '/bin/external-secrets',
    stamp: [],
    keep: ['config/crds/bases', 'deploy/charts/external-secrets'],
  },
  kuberay: {
    module: 'github.com/ray-project/kuberay/ray-operator',
    version: 'v1.5.0',
    why: 'the newest release the proxy serves; go 1.24 in its go.mod, no replace directives',
    command: '.',
    imagePath: '/manager',
    // Its Makefile's -X main._buildTime_ and main._commitId_ name no variable of main.go, and its Dockerfile stamps nothing.
    stamp: [],
    // config/default is its kustomize install: it is made of ../crd, ../rbac and ../manager.
    keep: ['config/default', 'config/crd', 'config/rbac', 'config/manager'],
  },
};

/** Written last into a build's directory: without it the build did not finish. */
const DONE = '.built';

export const SHIPPED_CACHE = join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'drainguard/shipped');

export const shippedDir = (name: string): string => join(SHIPPED_CACHE, `${name}-${OPERATORS[name]!.version}`);

/** The binary's file name in its build directory (the last part of its image path). */
export const binaryName = (name: string): string => OPERATORS[name]!.imagePath.split('/').at(-1)!;

/** NAME's directory when its build finished, else undefined. */
export function builtOperator(name: string): string | undefined {
  const dir = shippedDir(name);
  return existsSync(join(dir, DONE)) && existsSync(join(dir, binaryName(name))) ? dir : undefined;
}

const goEnv = (op: ShippedOperator): NodeJS.ProcessEnv => ({
  ...process.env,
  CGO_ENABLED: '0',
  GOTOOLCHAIN: op.toolchain ?? 'local',
  GOFLAGS: '-buildvcs=false',
});

/** Builds NAME unless built; returns its directory. */
export function buildOperator(name: string): string {
  const op = OPERATORS[name];
  if (!op) throw new Error(`no shipped operator ${JSON.stringify(name)} (there are: ${Object.keys(OPERATORS).join(', ')})`);
  const built = builtOperator(name);
  if (built) return built;
  const dir = shippedDir(name);
  const work = `${dir}.building-${process.pid}`;
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  const download = JSON.parse(
    execFileSync('go', ['mod', 'download', '-json', `${op.module}@${op.version}`], {
      cwd: work,
      env: goEnv(op),
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
    }),
  ) as { Dir?: string; Error?: string };
  if (!download.Dir) throw new Error(`go mod download ${op.module}@${op.version}: ${download.Error ?? 'no directory'}`);
  // The module cache is read-only: the build runs in a copy, where go.mod and go.sum are the module's own.
  const src = join(work, 'src');
  cpSync(download.Dir, src, { recursive: true });
  chmodRecursive(src);
  const t0 = Date.now();
  const ldflags = ['-s', '-w', ...op.stamp.map((s) => `-X ${s.replaceAll('VERSION', op.version)}`)].join(' ');
  const build = spawnSync('go', ['build', '-trimpath', '-ldflags', ldflags, '-o', join(work, binaryName(name)), op.command], {
    cwd: src,
    env: goEnv(op),
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  if (build.status !== 0)
    throw new Error(
      `go build ${op.command} of ${op.module}@${op.version} failed (exit ${build.status ?? build.signal}); its output is above`,
    );
  for (const path of op.keep) {
    mkdirSync(dirname(join(work, path)), { recursive: true });
    cpSync(join(src, path), join(work, path), { recursive: true });
  }
  rmSync(src, { recursive: true, force: true });
  writeFileSync(join(work, DONE), `${op.module}@${op.version} built in ${Math.round((Date.now() - t0) / 1000)} s\n`);
  rmSync(dir, { recursive: true, force: true });
  renameSync(work, dir);
  return dir;
}

function chmodRecursive(dir: string): void {
  execFileSync('chmod', ['-R', 'u+w', dir]);
  chmodSync(dir, 0o755);
}

/** The marker's line: what was built and how long its `go build` took. */
export const builtNote = (name: string): string => readFileSync(join(shippedDir(name), DONE), 'utf8').trim();

if (import.meta.main) {
  const names = process.argv.length > 2 ? process.argv.slice(2) : Object.keys(OPERATORS);
  const unknown = names.filter((n) => !OPERATORS[n]);
  if (unknown.length > 0) {
    process.stderr.write(`build.ts: no shipped operator ${unknown.join(', ')} (there are: ${Object.keys(OPERATORS).join(', ')})\n`);
    process.exit(2);
  }
  for (const name of names) {
    const before = builtOperator(name);
    const t0 = Date.now();
    buildOperator(name);
    const op = OPERATORS[name]!;
    process.stdout.write(
      `${name} ${op.module}@${op.version}: ${before ? 'built before' : `built in ${Math.round((Date.now() - t0) / 1000)} s`}\n`,
    );
  }
  process.stdout.write(`${SHIPPED_CACHE}\n`);
}

/**
 * The image of operator NAME, tagged TAG: its binary at its published image's path (`imagePath`) in a context of its
 * own, built from CONTAINERFILE (the project's Dockerfile's last stage, FROM scratch), saved and imported into NODE.
 */
export function importOperatorImage(node: { importImages(files: string[]): void }, name: string, tag: string, containerfile: string): void {
  const op = OPERATORS[name]!;
  const dir = mkdtempSync(join(tmpdir(), `drainguard-${name}-image-`));
  try {
    const at = join(dir, op.imagePath);
    mkdirSync(dirname(at), { recursive: true });
    copyFileSync(join(buildOperator(name), basename(op.imagePath)), at);
    writeFileSync(join(dir, 'Containerfile'), containerfile);
    const podman = (...args: string[]) => execFileSync('podman', args, { stdio: ['ignore', 'ignore', 'pipe'] });
    podman('build', '--quiet', '--layers=false', '--timestamp', '0', '-f', join(dir, 'Containerfile'), '-t', tag, dir);
    podman('save', '--quiet', '--format', 'docker-archive', '-o', join(dir, 'image.tar'), tag);
    node.importImages([join(dir, 'image.tar')]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
