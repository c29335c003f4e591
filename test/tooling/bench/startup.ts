// Start time and idle memory, drainguard against the bare Node.js runtime it
// embeds.
//
// Both executables are copied to a private directory first, written the same
// way, so that no other process maps them and their pages are in the same
// state in the page cache. That state matters on Linux: a file just written
// is cached in large folios, and a page fault then maps a whole folio, so
// processes start with fewer faults but more resident pages than from a file
// read back from disk. Each figure is taken in both states: `written` (as
// right after an image pull) and `read` (dropped from the cache, then read
// back by page faults, as after a reboot or memory pressure). The goals are
// checked against `read`.

import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { type Install, withCluster } from '../../guard/cluster.ts';
import { nowMs } from '../../support/clock.ts';
import { useCluster } from '../../support/cluster/index.ts';
import { runFileEndHooks } from '../../support/file-end.ts';
import { goBuild } from '../../support/go.ts';
import { Proc } from '../../support/proc.ts';
import { MiB, median } from '../../support/stats.ts';
import { buildFloorExecutable } from './lib/floor-exe.ts';
import { type Rss, dropFromPageCache, rssOf } from './lib/mem.ts';
import { EXE, NODE } from './lib/paths.ts';

export type CacheState = 'written' | 'read';

interface Copies {
  readonly dir: string;
  readonly node: string;
  readonly drainguard: string;
  /** The floor: a supervisor that only listens, starts its command and waits, built as drainguard is (lib/floor-exe.ts). */
  readonly floor: string;
  /** lib/cputime, built here: runs a command and prints its CPU time in microseconds. */
  readonly cputime: string;
  readonly hasSidecar: boolean;
  /** Puts both executables in `state`. */
  prepare(state: CacheState): void;
  remove(): void;
}

export function privateCopies(): Copies {
  const dir = mkdtempSync(join(tmpdir(), 'drainguard-bench-'));
  const node = join(dir, 'node');
  const drainguard = join(dir, 'drainguard');
  const floor = join(dir, 'floor');
  const built = buildFloorExecutable(mkdtempSync(join(dir, 'floor-build-')));
  const cputime = goBuild(join(import.meta.dirname, 'lib/cputime'), './main.go', join(dir, 'cputime'));
  const write = () => {
    for (const [from, to] of [
      [NODE, node],
      [EXE, drainguard],
      [built, floor],
    ] as const) {
      writeFileSync(to, readFileSync(from));
      chmodSync(to, 0o755);
    }
  };
  write();
  const hasSidecar = spawnSync(drainguard, ['sidecar', '--help'], { stdio: 'ignore' }).status === 0;
  return {
    dir,
    node,
    drainguard,
    floor,
    cputime,
    hasSidecar,
    prepare(state) {
      if (state === 'written') write();
      else for (const f of [node, drainguard, floor]) dropFromPageCache(f);
    },
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

export interface StartFigures {
  /** `drainguard run -- /bin/true`, median ms. */
  readonly drainguardMs: number;
  /** In a pod's environment with DRAINGUARD_GUARD set: until the operator runs (it kills drainguard at once), median ms. */
  readonly podGuardMs: number;
  /** `node -e 0` through the same service account mount (unshare and a shell), median ms. */
  readonly podNodeMs: number;
  readonly podRatio: number;
  /** `drainguard --version`: the executable's own start, without listening or starting a child. */
  readonly versionMs: number;
  /** `node -e 0`. */
  readonly nodeMs: number;
  readonly ratio: number;
  /** The fastest of the runs of `drainguard run -- /bin/true` and of `node -e 0`, and their ratio: less noisy than the medians on a busy machine. */
  readonly drainguardMinMs: number;
  readonly nodeMinMs: number;
  readonly minRatio: number;
  /** The floor executable (lib/floor-exe.ts) with /bin/true: what any supervisor in a Node.js executable costs, median ms. */
  readonly floorMs: number;
  readonly floorRatio: number;
  /** CPU time (user + system, of the process and what it waited for) of the same starts, run alternately: less moved by a busy machine than wall time. */
  readonly cpu: StartCpu;
}

export interface StartCpu {
  /** `drainguard run -- /bin/true`, median ms. */
  readonly drainguardMs: number;
  /** The floor executable with /bin/true, median ms. */
  readonly floorMs: number;
  /** `node -e 0`, median ms. */
  readonly nodeMs: number;
  /** drainguard's own work: the median of drainguard's CPU time less the floor's of the same round, ms. */
  readonly aboveFloorMs: number;
}

export type StartResult = Record<CacheState, StartFigures> & { readonly runs: number };

/**
 * `drainguard run -- /bin/true`, `node -e 0` and `drainguard --version` in turn, then the start
 * in a pod with the guard set against `node -e 0` in the same pod-like wrapper; median wall time
 * of each. In the pod the API is never answered (a closed port): what is measured is that the
 * operator does not wait for drainguard's Kubernetes client.
 */
export async function runStart(copies: Copies, runs: number, progress: (label: string) => void): Promise<StartResult> {
  const warmup = 3;
  const mount = serviceAccountArgs(serviceAccountDir(copies.dir, 'not-a-token', '', 'bench'));
  const podEnv = {
    PATH: process.env.PATH,
    // SIGKILLed (below), drainguard cannot remove its socket's directory: it is made in ours.
    TMPDIR: copies.dir,
    KUBERNETES_SERVICE_HOST: '127.0.0.1',
    KUBERNETES_SERVICE_PORT: '1',
    DRAINGUARD_POD_NAME: 'op-0',
    DRAINGUARD_POD_NAMESPACE: 'bench',
    DRAINGUARD_POD_UID: '6f1c1a52-6e0c-4d8e-9a55-0c3f0e0b7a11',
    DRAINGUARD_GUARD: 'clusterrole/bench',
  };
  const result: Partial<Record<CacheState, StartFigures>> = {};
  for (const state of ['written', 'read'] as const) {
    copies.prepare(state);
    const samples = {
      dg: [] as number[],
      version: [] as number[],
      node: [] as number[],
      floor: [] as number[],
      pod: [] as number[],
      podNode: [] as number[],
    };
    const cpu = { dg: [] as number[], floor: [] as number[], node: [] as number[], above: [] as number[] };
    for (let i = 0; i < runs + warmup; i++) {
      const a = await timeToExit(copies.drainguard, ['run', '--', '/bin/true']);
      const b = await timeToExit(copies.node, ['-e', '0']);
      const c = await timeToExit(copies.drainguard, ['--version']);
      const f = await timeToExit(copies.floor, ['/bin/true']);
      // The operator's first act kills drainguard: the time is until the operator ran.
      const d = await timeToExit(
        'unshare',
        [...mount, copies.drainguard, 'run', '--', '/bin/sh', '-c', 'kill -KILL $PPID'],
        podEnv,
        'killed',
      );
      const e = await timeToExit('unshare', [...mount, copies.node, '-e', '0'], podEnv);
      const cd = await cpuOfRun(copies.cputime, copies.drainguard, ['run', '--', '/bin/true']);
      const cf = await cpuOfRun(copies.cputime, copies.floor, ['/bin/true']);
      const cn = await cpuOfRun(copies.cputime, copies.node, ['-e', '0']);
      if (i >= warmup) {
        cpu.dg.push(cd);
        cpu.floor.push(cf);
        cpu.node.push(cn);
        cpu.above.push(cd - cf);
        samples.dg.push(a);
        samples.node.push(b);
        samples.version.push(c);
        samples.floor.push(f);
        samples.pod.push(d);
        samples.podNode.push(e);
      }
      if ((i + 1) % 10 === 0) progress(`${state}: ${i + 1}/${runs + warmup}`);
    }
    result[state] = {
      drainguardMs: median(samples.dg),
      versionMs: median(samples.version),
      nodeMs: median(samples.node),
      ratio: median(samples.dg) / median(samples.node),
      drainguardMinMs: Math.min(...samples.dg),
      nodeMinMs: Math.min(...samples.node),
      minRatio: Math.min(...samples.dg) / Math.min(...samples.node),
      floorMs: median(samples.floor),
      floorRatio: median(samples.floor) / median(samples.node),
      podGuardMs: median(samples.pod),
      podNodeMs: median(samples.podNode),
      podRatio: median(samples.pod) / median(samples.podNode),
      cpu: { drainguardMs: median(cpu.dg), floorMs: median(cpu.floor), nodeMs: median(cpu.node), aboveFloorMs: median(cpu.above) },
    };
  }
  return { runs, written: result.written!, read: result.read! };
}

/** Wall time from spawn to exit; `expect`: exit 0, or death by SIGKILL. */
function timeToExit(
  file: string,
  args: string[],
  env: NodeJS.ProcessEnv = { PATH: process.env.PATH },
  expect: 'ok' | 'killed' = 'ok',
): Promise<number> {
  return new Promise((resolve, reject) => {
    const start = nowMs();
    const child = spawn(file, args, { stdio: 'ignore', env });
    child.once('error', reject);
    child.once('exit', (code, signal) =>
      (expect === 'ok' ? code === 0 : signal === 'SIGKILL')
        ? resolve(nowMs() - start)
        : reject(new Error(`${file} ${args.join(' ')} exited ${code ?? signal}`)),
    );
  });
}

/**
 * CPU time, user + system, of `file` and what it waited for, in ms, from wait4's rusage in
 * microseconds (lib/cputime): all threads, V8's helpers included. bash's `time` reads the same
 * figures but prints whole milliseconds, and the differences measured are fractions of one.
 */
function cpuOfRun(cputime: string, file: string, args: string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(cputime, [file, ...args], { stdio: ['ignore', 'pipe', 'inherit'], env: { PATH: process.env.PATH } });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.once('error', reject);
    child.once('close', (code) => {
      const m = /^(\d+) (\d+)\n$/.exec(out);
      if (code !== 0 || !m) reject(new Error(`${file} ${args.join(' ')}: exit ${code}, no CPU time from cputime: ${JSON.stringify(out)}`));
      else resolve((Number(m[1]) + Number(m[2])) / 1000);
    });
  });
}

export interface IdleRss {
  readonly rssMiB: number;
  readonly anonMiB: number;
  readonly fileMiB: number;
}

/**
 * run-pod: `run` in a pod's environment (DRAINGUARD_POD_NAME and the rest),
 * its API opened: the grace period read, Events possible; run-guard: the
 * same with DRAINGUARD_GUARD, the guard set; sidecar-pod: the sidecar in a
 * pod. The API is a real control plane (test/support/cluster), reached through
 * the tests' fault proxy, which records the requests (no faults), as a pod
 * reaches it: KUBERNETES_SERVICE_HOST/PORT and a pod-bound token, CA and
 * namespace at /var/run/secrets/kubernetes.io/serviceaccount, mounted there
 * in a mount namespace of the process's own (unshare), so nothing of the
 * machine's changes.
 */
type Subject = 'node' | 'run' | 'run-pod' | 'run-guard' | 'sidecar' | 'sidecar-pod';
const SUBJECTS: readonly Subject[] = ['node', 'run', 'run-pod', 'run-guard', 'sidecar', 'sidecar-pod'];

export type MemoryResult = Record<CacheState, Record<Subject, IdleRss | null>> & { readonly sidecarNote?: string };

type Cluster = Install;

/** Idle RSS of a bare `node`, of `drainguard run` and of `drainguard sidecar`, without and with a pod's environment. */
export async function runMemory(copies: Copies, reps: number, progress: (label: string) => void): Promise<MemoryResult> {
  let result: MemoryResult | undefined;
  try {
    await withCluster(async (c) => void (result = await measureAll(copies, reps, progress, c)), {
      proxy: true,
      cluster: await useCluster(),
    });
  } finally {
    // The control plane (private to this run) and what the install made.
    await runFileEndHooks();
  }
  return result!;
}

async function measureAll(copies: Copies, reps: number, progress: (label: string) => void, cluster: Cluster): Promise<MemoryResult> {
  const subjects = SUBJECTS.filter((s) => copies.hasSidecar || !s.startsWith('sidecar'));
  const measure = async (state: CacheState): Promise<Record<Subject, IdleRss | null>> => {
    const samples: Partial<Record<Subject, Rss[]>> = {};
    for (let r = 0; r < reps; r++) {
      for (const s of subjects) {
        progress(`${state} ${s} ${r + 1}/${reps}`);
        // Dropped again before each start: the previous one read the pages back.
        if (state === 'read') copies.prepare('read');
        (samples[s] ??= []).push(
          await idle(s, s === 'node' ? copies.node : copies.drainguard, copies.dir, cluster, `op-${state}-${s}-${r}`),
        );
      }
    }
    const out = Object.fromEntries(SUBJECTS.map((s) => [s, null])) as Record<Subject, IdleRss | null>;
    for (const s of subjects) {
      const list = samples[s]!;
      out[s] = {
        rssMiB: median(list.map((x) => x.rss)) / MiB,
        anonMiB: median(list.map((x) => x.anon)) / MiB,
        fileMiB: median(list.map((x) => x.file)) / MiB,
      };
    }
    return out;
  };
  copies.prepare('written');
  const written = await measure('written');
  const read = await measure('read');
  return { written, read, ...(!copies.hasSidecar && { sidecarNote: "this build has no 'drainguard sidecar'" }) };
}

/**
 * Idle is what a process settles to, not its state just after start: V8's memory reducer
 * collects about 8 s after the last allocation burst (the API's first answers), so RSS is
 * sampled each second until it has not moved for a few samples, from 10 s on, at most 20 s.
 */
const SETTLE = { minMs: 10_000, maxMs: 20_000, everyMs: 1000, stableSamples: 3, toleranceBytes: 64 * 1024 } as const;

async function settledRss(pid: number): Promise<Rss> {
  const started = Date.now();
  let last = rssOf(pid);
  let stable = 0;
  while (Date.now() - started < SETTLE.maxMs) {
    await delay(SETTLE.everyMs);
    const now = rssOf(pid);
    stable = Math.abs(now.rss - last.rss) <= SETTLE.toleranceBytes ? stable + 1 : 0;
    last = now;
    if (stable >= SETTLE.stableSamples && Date.now() - started >= SETTLE.minMs) break;
  }
  return last;
}

/** A service account directory as the kubelet projects it: token, ca.crt, namespace. */
function serviceAccountDir(dir: string, token: string, ca: string, namespace: string): string {
  const source = mkdtempSync(join(dir, 'serviceaccount-'));
  writeFileSync(join(source, 'token'), token);
  writeFileSync(join(source, 'ca.crt'), ca);
  writeFileSync(join(source, 'namespace'), namespace);
  return source;
}

/**
 * The arguments of `unshare` that run a command with `source` as the pod's service account
 * mount: a private /run (so /var/run/secrets/... can be made) with the directory bind-mounted
 * into it. The command execs in the same process, so the pid measured is drainguard's.
 */
function serviceAccountArgs(source: string): string[] {
  const target = '/run/secrets/kubernetes.io/serviceaccount';
  const script = `mount -t tmpfs tmpfs /run && mkdir -p ${target} && mount --bind "$0" ${target} && exec "$@"`;
  const user = process.getuid?.() === 0 ? [] : ['--user', '--map-root-user'];
  return [...user, '--mount', '--propagation', 'private', 'sh', '-c', script, source];
}

async function idle(subject: Subject, file: string, dir: string, cluster: Cluster, podName: string): Promise<Rss> {
  const pod = subject.endsWith('-pod') || subject === 'run-guard' ? await cluster.pod(podName) : undefined;
  const server = new URL(cluster.proxy!.url);
  const env = {
    HOME: dir,
    ...(pod && {
      KUBERNETES_SERVICE_HOST: server.hostname,
      KUBERNETES_SERVICE_PORT: server.port,
      DRAINGUARD_POD_NAME: pod.name,
      DRAINGUARD_POD_NAMESPACE: cluster.ns,
      DRAINGUARD_POD_UID: pod.uid,
    }),
    ...(subject === 'run-guard' && { DRAINGUARD_GUARD: cluster.guard }),
  };
  const serviceAccount =
    pod &&
    serviceAccountArgs(serviceAccountDir(dir, await cluster.cluster.token(cluster.ns, 'op', { pod }), cluster.cluster.ca, cluster.ns));
  const start = (args: string[], extra: NodeJS.ProcessEnv = {}) =>
    serviceAccount
      ? new Proc('unshare', [...serviceAccount, file, ...args], { ...env, ...extra }, { detached: true })
      : new Proc(file, args, { ...env, ...extra }, { detached: true });
  const proc =
    subject === 'node'
      ? new Proc(file, ['-e', "console.log('ready'); setInterval(() => {}, 1 << 30)"], env, { detached: true })
      : subject.startsWith('run')
        ? start(['run', '--', '/bin/sh', '-c', 'echo ready; exec sleep 600'])
        : start(['sidecar'], { DRAINGUARD_SOCKET: join(dir, 'drain.sock'), DRAINGUARD_HTTP_ADDR: '127.0.0.1:0' });
  try {
    if (subject.startsWith('sidecar')) await proc.stderrLine(/"sidecar ready"/, 30_000);
    else await proc.line(/^ready( |$)/, 30_000);
    // In a pod: idle once the API has answered the read of the Pod (and the guard is set).
    const requests = cluster.proxy!.requests;
    if (pod)
      await cluster.cluster.waitFor(
        async () => requests.some((r) => r.verb === 'get' && r.resource === 'pods' && r.name === pod.name && r.status === 200),
        30_000,
        `${subject}: the Pod read`,
      );
    const holder = pod && `drainguard.dev/holder-${pod.uid}`;
    if (subject === 'run-guard')
      await cluster.cluster.waitFor(
        async () => Object.values(await cluster.holders()).every((h) => h.includes(holder!)),
        30_000,
        'guard set',
      );
    return await settledRss(proc.pid);
  } finally {
    proc.kill('SIGTERM');
    await proc.exit(10_000).catch(() => proc.killAll());
  }
}
