// kubebuilder for the tests, for real: its CLI built from the Go module
// sigs.k8s.io/kubebuilder/v4, a project it scaffolds in each of its two
// layouts (`init` or `init --namespaced`, `create api`, the Guestbook
// controller of test/fixtures/kubebuilder, `make manifests`,
// `edit --plugins=helm/v2-alpha`), and that project's manager with
// clients/go/ctrl added by the diff docs/deploy.md shows; and the same project
// in the multigroup layout (`init --multigroup`), without a manager. Each is built once
// into ~/.cache/drainguard/kubebuilder/VERSION/, under a key of what it is
// made from, into a temporary folder renamed into place when complete (a
// build cut short is never taken for a cached one). Only the Go module proxy
// is used: `make manifests` and the helm plugin install controller-gen and
// kustomize with `go install`; no make target that downloads from elsewhere
// (setup-envtest, golangci-lint) runs.
//
// test/run.ts prepares all of it before the first file that imports this
// module (cold, it takes minutes: more than a file's time limit), and prints
// the versions; a file then finds it cached. `node test/support/kubebuilder.ts`
// does the same by hand.

import { type ExecFileSyncOptions, execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { homedir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import type { Launch, Runner } from './kubelet/container.ts';
import { GO, goEnv } from './go.ts';

/** The newest sigs.k8s.io/kubebuilder/v4 the Go module proxy served when this was written. */
export const KUBEBUILDER_VERSION = 'v4.16.0';
export const KUBEBUILDER_VARIABLE = 'TEST_KUBEBUILDER';

const REPO = resolve(import.meta.dirname, '../..');
const CACHE = join(homedir(), '.cache/drainguard/kubebuilder', KUBEBUILDER_VERSION);
const CONTROLLER = join(REPO, 'test/fixtures/kubebuilder/guestbook_controller.go');
const PROJECT = 'guestbook';
const SELF = resolve(import.meta.filename);
/** The image the scaffold's Deployment names (config/manager's `controller`, the chart's `controller:APPVERSION`). */
export const MANAGER_IMAGE = 'controller';

/**
 * kubebuilder's two layouts: `cluster` (`kubebuilder init`: manager-role a
 * ClusterRole) and `namespaced` (`kubebuilder init --namespaced`, v4.14 and
 * later: manager-role a Role in the manager's namespace, WATCH_NAMESPACE).
 */
export type Layout = 'cluster' | 'namespaced';
/**
 * A layout `scaffold` makes: one of the two, or `multigroup` (`kubebuilder init
 * --multigroup`: cluster-scoped, its API under api/webapp/v1 and its controller
 * under internal/controller/webapp). No manager is built of a multigroup one.
 */
export type ScaffoldLayout = Layout | 'multigroup';

export interface Project {
  /** The project folder, as kubebuilder left it (without bin/): config/, dist/chart/, cmd/, ... Copy before changing. */
  readonly dir: string;
  readonly layout: ScaffoldLayout;
  /** The API group of its one kind, Guestbook: webapp.DOMAIN. */
  readonly group: string;
  /** sigs.k8s.io/controller-runtime's version in its go.mod. */
  readonly controllerRuntime: string;
}

const sha = (...parts: string[]) => createHash('sha256').update(parts.join('\0')).digest('hex').slice(0, 12);

function run(file: string, args: string[], opts: ExecFileSyncOptions & { cwd: string }): string {
  try {
    return execFileSync(file, args, {
      env: goEnv(),
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      maxBuffer: 64 << 20,
      ...opts,
    }) as string;
  } catch (err) {
    const e = err as { stderr?: string; stdout?: string; message: string };
    throw new Error(`${file} ${args.join(' ')} (in ${opts.cwd}) failed: ${e.message}\n${e.stdout ?? ''}${e.stderr ?? ''}`.slice(0, 8000), {
      cause: err,
    });
  }
}

/** An entry of a key no run used for this long is removed when another of its kind is built. */
const UNUSED_MS = 7 * 24 * 3600_000;

/**
 * Builds into a temporary folder beside `final` and renames it into place; an
 * existing `final` is the cache (its time says when it was last used). After
 * a build, the entries of the same kind (`final` up to its last `-`) unused
 * for a week go: each change of the clients or the controller makes a new key.
 */
function cached(final: string, build: (tmp: string) => void): string {
  const now = new Date();
  if (existsSync(final)) {
    utimesSync(final, now, now);
    return final;
  }
  mkdirSync(CACHE, { recursive: true });
  const tmp = mkdtempSync(join(CACHE, '.building-'));
  try {
    build(tmp);
    chmodSync(tmp, 0o755);
    try {
      renameSync(tmp, final);
    } catch (err) {
      // Another run finished the same build first: keep that one.
      if (!existsSync(final)) throw err;
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  const kind = basename(final).slice(0, basename(final).lastIndexOf('-') + 1);
  for (const name of kind ? readdirSync(CACHE) : []) {
    const entry = join(CACHE, name);
    if (name.startsWith(kind) && entry !== final && now.getTime() - statSync(entry).mtimeMs > UNUSED_MS)
      rmSync(entry, { recursive: true, force: true });
  }
  return final;
}

/** The kubebuilder CLI, `go install`ed from the module proxy. */
export function kubebuilderCli(): string {
  const dir = cached(join(CACHE, 'bin'), (tmp) => {
    run(GO, ['install', `sigs.k8s.io/kubebuilder/v4@${KUBEBUILDER_VERSION}`], {
      cwd: tmp,
      env: { ...goEnv(), GOBIN: tmp, CGO_ENABLED: '0' },
    });
  });
  return join(dir, 'kubebuilder');
}

/**
 * The project `guestbook` with one kind, Guestbook of webapp.DOMAIN (its own
 * domain, so that tests sharing a cluster do not share its CRD), scaffolded
 * as kubebuilder's quick start has it, in `layout`, its controller the test
 * fixture's (in the namespaced layout with `namespace=` in its RBAC markers,
 * as kubebuilder writes them there).
 */
export function scaffold(domain = 'my.domain', layout: ScaffoldLayout = 'cluster'): Project {
  ensurePrepared();
  const group = `webapp.${domain}`;
  let controller = readFileSync(CONTROLLER, 'utf8').replaceAll('webapp.my.domain', group);
  if (layout === 'namespaced')
    controller = controller.replace(/^(\/\/ \+kubebuilder:rbac:groups=[^,]*),/gm, `$1,namespace=${PROJECT}-system,`);
  // Multigroup: the controller's package is its group's, the API's package under api/GROUP/.
  if (layout === 'multigroup')
    controller = controller
      .replace(/^package controller$/m, 'package webapp')
      .replace(`"example.com/${PROJECT}/api/v1"`, `"example.com/${PROJECT}/api/webapp/v1"`);
  const kind = layout === 'cluster' ? 'project' : `project-${layout}`;
  const base = cached(join(CACHE, `${kind}-${domain}-${sha(controller)}`), (tmp) => {
    const cli = kubebuilderCli();
    const dir = join(tmp, PROJECT);
    mkdirSync(dir);
    const init = ['init', '--domain', domain, '--repo', `example.com/${PROJECT}`];
    run(cli, layout === 'cluster' ? init : [...init, `--${layout}`], { cwd: dir });
    run(cli, ['create', 'api', '--group', 'webapp', '--version', 'v1', '--kind', 'Guestbook', '--resource', '--controller'], { cwd: dir });
    // kubebuilder's own controller is kept beside the project: the doc's diff is checked against it too.
    const generated = join(dir, `internal/controller/${layout === 'multigroup' ? 'webapp/' : ''}guestbook_controller.go`);
    writeFileSync(join(tmp, 'scaffold_controller.go'), readFileSync(generated));
    writeFileSync(generated, controller);
    run('make', ['manifests'], { cwd: dir });
    run(cli, ['edit', '--plugins=helm/v2-alpha'], { cwd: dir });
    // controller-gen and kustomize, linked by absolute paths that the rename would break.
    rmSync(join(dir, 'bin'), { recursive: true, force: true });
  });
  const dir = join(base, PROJECT);
  const controllerRuntime =
    /^\s*sigs\.k8s\.io\/controller-runtime (\S+)/m.exec(readFileSync(join(dir, 'go.mod'), 'utf8'))?.[1] ?? 'unknown';
  return { dir, layout, group, controllerRuntime };
}

/**
 * docs/deploy.md's patch for a project of `layout`: its kubebuilder section's
 * first ```diff block (cmd/main.go and the controller); for a namespaced
 * project the second block's cmd/main.go, the controller's from the first.
 */
export function drainDiff(layout: Layout = 'cluster'): string {
  const doc = readFileSync(join(REPO, 'docs/deploy.md'), 'utf8');
  const start = doc.indexOf('\n## Adding drainguard to a kubebuilder project\n');
  const section = doc.slice(start, doc.indexOf('\n## ', start + 1));
  const [cluster, namespaced] = [...section.matchAll(/```diff\n([\s\S]*?)```/g)].map((m) => m[1]!);
  if (start === -1 || !cluster || !namespaced)
    throw new Error(
      'docs/deploy.md: the kubebuilder section has no two ```diff blocks (the drain in the manager, and its cmd/main.go in a namespaced project)',
    );
  if (layout === 'cluster') return cluster;
  const controller = cluster.indexOf('--- a/internal/controller/');
  return namespaced + cluster.slice(controller);
}

/** Go files of the clients (not their tests): what a manager built against this checkout depends on. */
function clientSources(): string[] {
  const files = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
      if (e.isDirectory()) return e.name === 'example' ? [] : files(join(dir, e.name));
      return /(\.go|go\.mod|go\.sum)$/.test(e.name) && !e.name.endsWith('_test.go') ? [join(dir, e.name)] : [];
    });
  return files(join(REPO, 'clients/go')).sort();
}

/**
 * The project's manager, `go build` of cmd/ after the doc's diff is applied
 * with `git apply` (to kubebuilder's own controller too, as a check) and
 * clients/go and clients/go/ctrl replaced by this checkout's, as a user of a
 * local checkout would (`go mod edit -replace`, `go mod tidy`).
 */
export function kubebuilderManager(project: Project): string {
  ensurePrepared();
  if (project.layout === 'multigroup') throw new Error("no manager of a multigroup project: docs/deploy.md's diff is of the other layouts");
  const diff = drainDiff(project.layout);
  const sources = clientSources();
  const key = sha(project.dir, diff, ...sources.flatMap((f) => [f, readFileSync(f, 'utf8')]));
  const dir = cached(join(CACHE, `manager-${key}`), (tmp) => {
    const src = join(tmp, 'src');
    cpSync(project.dir, src, { recursive: true, filter: (from) => !from.startsWith(join(project.dir, 'dist')) });
    const patch = join(tmp, 'drain.diff');
    writeFileSync(patch, diff);
    const scaffold = join(tmp, 'scaffold');
    mkdirSync(join(scaffold, 'internal/controller'), { recursive: true });
    cpSync(join(project.dir, 'cmd'), join(scaffold, 'cmd'), { recursive: true });
    cpSync(join(project.dir, '../scaffold_controller.go'), join(scaffold, 'internal/controller/guestbook_controller.go'));
    run('git', ['apply', '--check', patch], { cwd: scaffold });
    run('git', ['apply', patch], { cwd: src });
    for (const mod of ['clients/go', 'clients/go/ctrl']) {
      run(GO, ['mod', 'edit', `-replace=github.com/drainguard/drainguard/${mod}=${join(REPO, mod)}`], { cwd: src });
    }
    run(GO, ['mod', 'tidy'], { cwd: src });
    run(GO, ['build', '-o', join(tmp, 'manager'), './cmd'], { cwd: src, env: { ...goEnv(), CGO_ENABLED: '0' } });
  });
  return join(dir, 'manager');
}

/** Where a container finds its ServiceAccount's token, CA and namespace (the admission plugin's volume). */
const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

/**
 * The operator image's `/manager` is the built manager, wherever it stands in
 * argv (wrap: `/drainguard/drainguard run -- /manager ARGS`), with its flags;
 * it serves its own probes. `env` is added (GUESTBOOK_CLEANUP_AFTER).
 *
 * controller-runtime's leader election reads its namespace from the
 * ServiceAccount volume at its fixed path, which the kubelet stand-in keeps in
 * the pod's folder: the container runs in a mount namespace of its own (as
 * root, `unshare -m`) with a private tmpfs on /run and that folder bound at
 * /run/secrets/kubernetes.io/serviceaccount (/var/run is /run), the host's
 * /run left as it is. Every `exec` keeps the PID the kubelet signals.
 */
export function managerImage(manager: string, env: NodeJS.ProcessEnv = {}): Runner {
  return (r): Launch | undefined => {
    if (r.hook) return undefined;
    const i = r.argv.indexOf('/manager');
    if (i === -1) return undefined;
    const argv = r.argv.with(i, manager);
    const account = r.hostPath(SERVICE_ACCOUNT_DIR);
    if (!account) return { file: argv[0]!, args: argv.slice(1), env, probes: true };
    const mount = `mount -t tmpfs tmpfs /run && mkdir -p ${SERVICE_ACCOUNT_DIR} && mount --bind "$0" ${SERVICE_ACCOUNT_DIR} && exec "$@"`;
    return {
      file: '/usr/bin/unshare',
      args: ['--mount', '--propagation', 'private', '/bin/sh', '-c', mount, account, ...argv],
      env,
      probes: true,
    };
  };
}

/** Everything above, built or found: what the run uses, said in one line. Throws when it cannot be built. */
export function prepareKubebuilder(): string {
  const started = Date.now();
  const had = existsSync(CACHE) ? readdirSync(CACHE).length : 0;
  const project = scaffold();
  scaffold(undefined, 'namespaced');
  scaffold(undefined, 'multigroup');
  kubebuilderManager(scaffold(RUN_DOMAIN));
  kubebuilderManager(scaffold(RUN_DOMAIN, 'namespaced'));
  scaffold(APPLY_DOMAIN);
  const took = ((Date.now() - started) / 1000).toFixed(1);
  return `kubebuilder ${KUBEBUILDER_VERSION} (controller-runtime ${project.controllerRuntime}), ${had ? 'from' : 'built into'} ${CACHE} in ${took} s`;
}

/** The domain of the project whose manager runs on the cluster (its CRD apart from the kustomize tests'). */
export const RUN_DOMAIN = 'run.my.domain';

/** The domain of the project test/kubebuilder/apply.test.ts applies and deletes, CRD and all (a CRD no other file has). */
export const APPLY_DOMAIN = 'apply.my.domain';

/** Whether the test file imports this module, directly or through its relative imports (a text check). */
export function needsKubebuilder(file: string, seen = new Set<string>()): boolean {
  const path = resolve(file);
  if (seen.has(path) || !existsSync(path)) return false;
  seen.add(path);
  return [...readFileSync(path, 'utf8').matchAll(/\bfrom\s+'(\.[^']+\.ts)'/g)].some(([, spec]) => {
    const target = resolve(dirname(path), spec!);
    return target === SELF || needsKubebuilder(target, seen);
  });
}

/** The runner's answer, or prepared here: a file that needs the scaffold fails with the reason it could not be built. */
function ensurePrepared(): void {
  const given = process.env[KUBEBUILDER_VARIABLE];
  if (given !== undefined && given !== 'ok') throw new Error(`kubebuilder could not be built here: ${given}`);
}

if (import.meta.main) process.stdout.write(`${prepareKubebuilder()}\n`);
