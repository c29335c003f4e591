// What drainguard costs a pod, measured where the kubelet measures it: on a
// real node (test/support/node: the kubelet of the control plane's release,
// containerd, runc), the pods of lib/pod-subjects.ts one after the other, and
// at each sample the cgroups the kubelet made for the pod and its containers
// read as cAdvisor reads them (lib/cgroup-memory.ts: the working set that
// `kubectl top` shows and the kubelet's eviction ranks by, anonymous and file
// memory), the kubelet's own /metrics/resource beside them (what metrics-server
// scrapes for `kubectl top`: cAdvisor's figure as of its last housekeeping),
// and drainguard's processes (smaps_rollup).
//
// Each pod: idle samples at the given seconds after all its containers run;
// then (drainguard's modes) N clients on the drain socket, connected from the
// host through the pod's socket volume (their own memory is the host's, not
// the pod's; drainguard's side of each connection is the pod's), a sample;
// the pod deleted as a rollout deletes it, the kubelet's SIGTERM (or, in the
// sidecar mode, the preStop hook) starting the drain; samples while the
// clients hold the drain open; then they say drained, and from the delete to
// the pod's end the cgroups are read every 20 ms: the guard release is the
// last read before drainguard's `guard released` line.
//
// After the idle samples, one reclaim pass through the pod's cgroup (what a
// node whose memory is full of page cache does to every pod, sooner or later:
// the inactive file pages go, the referenced executable ones turn active),
// a sample, and one 30 s later (--no-reclaim leaves it out).
//
// Page cache `cold` (the default): before each pod, the images' files are
// dropped from the page cache, so that every page the pod touches is charged
// to it, as on a node where they were reclaimed since the pull (Linux charges
// a file page to the cgroup that brought it in, for as long as it stays);
// `warm`: left as the pull (the import) left them, charged outside the pod.
//
//   node test/tooling/bench/pod-memory.ts [--modes LIST] [--idle 30,150,300] [--alone-idle LIST] [--clients 1000]
//     [--page-cache cold|warm]
//     [--no-reclaim] [--logs DIR] [--out FILE]
//   node test/tooling/bench/pod-memory.ts --print FILE     (the tables again, from an --out file)
//   npm run bench -- --only pod [...]

import { execFileSync } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { WRAP_MEMORY_MIB, sizedMemory } from '../../../src/check/memory.ts';
import { type TestCluster, useCluster } from '../../support/cluster/index.ts';
import { drainguardRbac } from '../../support/drainguard-rbac.ts';
import { runFileEndHooks } from '../../support/file-end.ts';
import { freePort } from '../../support/free-port.ts';
import { type RealNode, startNode } from '../../support/node/index.ts';
import { Proc } from '../../support/proc.ts';
import { MiB, percentile } from '../../support/stats.ts';
import {
  type CgroupMemory,
  type CgroupVersion,
  cgroupVersion,
  memoryHierarchy,
  readCgroupMemory,
  reclaimPass,
} from './lib/cgroup-memory.ts';
import { killReported, reportedPid } from './lib/fixture-output.ts';
import { NODE, fixture } from './lib/paths.ts';
import {
  DRAINGUARD_CONTAINER,
  MODES,
  MODE_TITLES,
  type Mode,
  SOCKET_VOLUME_NAME,
  buildOperatorImages,
  subjectPod,
} from './lib/pod-subjects.ts';

export interface PodMemoryOptions {
  readonly modes: readonly Mode[];
  /** Idle samples, seconds after every container of the pod runs. */
  readonly idleS: readonly number[];
  /** The operator alone's (default: the same); a shorter one for an hour-long run of drainguard's modes. */
  readonly aloneIdleS?: readonly number[];
  readonly clients: number;
  /** Samples while the clients hold the drain open, one a second. */
  readonly drainSamples: number;
  readonly pageCache: 'cold' | 'warm';
  /** After the idle samples, one reclaim pass through the pod's cgroup (lib/cgroup-memory.ts reclaimPass), and samples after it. */
  readonly reclaim: boolean;
  /** A directory to write drainguard's log of each pod to (MODE.log). */
  readonly logs?: string;
}

/** drainguard's processes in the pod (the launcher, drainguard, `prestop`), summed from /proc/PID/smaps_rollup. */
export interface ProcessMemory {
  readonly rss: number;
  readonly anon: number;
  /** Resident pages referenced since the kernel last looked: what reclaim would find in use. */
  readonly referenced: number;
}

export interface Sample {
  readonly label: string;
  /** Seconds since every container of the pod ran. */
  readonly atS: number;
  readonly pod: CgroupMemory;
  readonly containers: Readonly<Record<string, CgroupMemory>>;
  /** The kubelet's /metrics/resource at the same moment (what `kubectl top` shows): its working sets, as of `ageS` before. */
  readonly kubelet?: { readonly pod: number; readonly containers: Readonly<Record<string, number>>; readonly ageS: number };
  readonly drainguard?: ProcessMemory;
}

export interface SubjectResult {
  readonly mode: Mode;
  /** Pod created → every container running, seconds. */
  readonly startS: number;
  readonly samples: readonly Sample[];
  /** Every 20 ms read of the pod's cgroup from the delete to its end (working sets only). */
  readonly stopReads: number;
  readonly qosClass: string;
  readonly notes: readonly string[];
}

export interface PodMemoryResult {
  readonly kubelet: string;
  readonly containerd: string;
  readonly cgroup: CgroupVersion;
  readonly kernel: string;
  readonly options: PodMemoryOptions;
  readonly subjects: readonly SubjectResult[];
}

const FAST_MS = 20;
/** The idle after the reclaim pass, before the clients connect. */
const RECLAIMED_IDLE_MS = 30_000;
/** drainguard's log lines of the stop, given with their times in the notes. */
const STOP_STEPS = [
  'termination requested',
  'drain requested',
  'drain started',
  'drain ended',
  'stop signal sent',
  'operator exited',
  'operator stopped',
  'releasing the guard',
  'guard released',
];
const START_MS = 180_000;

/** The pod's cgroup (the kubelet's cgroupfs layout: ROOT/kubepods[/burstable|/besteffort]/podUID) and its containers'. */
function podCgroups(node: RealNode, version: CgroupVersion, pod: any): { pod: string; containers: Record<string, string> } {
  const qos = pod.status.qosClass as string;
  const kubepods = join(memoryHierarchy(version), node.cgroupRoot, 'kubepods');
  const dir = join(kubepods, qos === 'Guaranteed' ? '' : qos.toLowerCase(), `pod${pod.metadata.uid}`);
  if (!existsSync(dir))
    throw new Error(`no cgroup ${dir} for pod ${pod.metadata.name} (${qos}); under ${kubepods}: ${readdirSync(kubepods)}`);
  const containers: Record<string, string> = {};
  for (const s of [...(pod.status.containerStatuses ?? []), ...(pod.status.initContainerStatuses ?? [])]) {
    if (!s.state?.running || !s.containerID) continue;
    const id = String(s.containerID).replace(/^containerd:\/\//, '');
    if (!existsSync(join(dir, id))) throw new Error(`container ${s.name} of ${pod.metadata.name}: no cgroup ${join(dir, id)}`);
    containers[s.name] = join(dir, id);
  }
  return { pod: dir, containers };
}

function processMemory(pids: readonly number[]): ProcessMemory | undefined {
  let rss = 0;
  let anon = 0;
  let referenced = 0;
  let seen = 0;
  for (const pid of pids) {
    let text: string;
    try {
      text = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
    } catch {
      continue; // gone since cgroup.procs was read
    }
    const kib = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? 0) * 1024;
    rss += kib('Rss');
    anon += kib('Anonymous');
    referenced += kib('Referenced');
    seen++;
  }
  return seen === 0 ? undefined : { rss, anon, referenced };
}

/** drainguard's processes in a container's cgroup: those whose argv[0] is under /drainguard/ (the launcher sets drainguard's to its own). */
function drainguardPids(containerCgroup: string): number[] {
  let procs: string;
  try {
    procs = readFileSync(join(containerCgroup, 'cgroup.procs'), 'utf8');
  } catch {
    return [];
  }
  return procs
    .split('\n')
    .filter(Boolean)
    .map(Number)
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, 'utf8').startsWith('/drainguard/');
      } catch {
        return false;
      }
    });
}

/**
 * The kubelet's view of one pod: /metrics/resource, what metrics-server scrapes for `kubectl top`
 * (cAdvisor's working sets, as of its last housekeeping: the samples' timestamps).
 */
async function kubeletView(node: RealNode, namespace: string, pod: string): Promise<Sample['kubelet']> {
  const text = await node.kubeletGet('/metrics/resource');
  const containers: Record<string, number> = {};
  let podBytes: number | undefined;
  let stamp = Number.NaN;
  for (const line of text.split('\n')) {
    const m = /^(container|pod)_memory_working_set_bytes\{([^}]*)\} (\S+)(?: (\d+))?$/.exec(line);
    if (!m) continue;
    const labels = Object.fromEntries([...m[2]!.matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1], l[2]]));
    if (labels.namespace !== namespace || labels.pod !== pod) continue;
    if (m[1] === 'pod') {
      podBytes = Number(m[3]);
      stamp = Number(m[4]);
    } else containers[labels.container!] = Number(m[3]);
  }
  return podBytes === undefined ? undefined : { pod: podBytes, containers, ageS: (Date.now() - stamp) / 1000 };
}

/** Drops the files of the image layers on the node from the page cache (snapshots of ended containers vanish meanwhile). */
function dropImageFiles(node: RealNode): number {
  let dropped = 0;
  const walk = (dir: string): void => {
    let entries;
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      if (e.isDirectory()) walk(join(dir, e.name));
      else if (e.isFile()) {
        // GNU dd with count=0 and iflag=nocache: posix_fadvise DONTNEED on the whole file (the layers' files are clean).
        try {
          execFileSync('dd', [`if=${join(dir, e.name)}`, 'iflag=nocache', 'count=0', 'status=none'], { stdio: 'ignore' });
          dropped++;
        } catch {}
      }
    }
  };
  walk(join(node.containerdRoot, 'io.containerd.snapshotter.v1.overlayfs/snapshots'));
  return dropped;
}

/** drainguard's log lines in the container's CRI log, read through `fd` (opened while the pod ran: the kubelet removes the file with the pod). */
function logLines(fd: number): { msg: string; time: string; [k: string]: unknown }[] {
  const text = readFileSync(fd, 'utf8');
  return text.split('\n').flatMap((l) => {
    const json = l.indexOf(' {"');
    if (json === -1) return [];
    try {
      const line = JSON.parse(l.slice(json + 1));
      return typeof line.msg === 'string' ? [line] : [];
    } catch {
      return [];
    }
  });
}

interface Run {
  readonly c: TestCluster;
  readonly node: RealNode;
  readonly ns: string;
  readonly guard: string;
  readonly version: CgroupVersion;
}

async function waitFor<T>(what: string, ms: number, check: () => Promise<T | undefined> | T | undefined, detail = () => ''): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}\n${detail()}`);
    await sleep(100);
  }
}

async function measure(run: Run, mode: Mode, o: PodMemoryOptions, progress: (line: string) => void): Promise<SubjectResult> {
  const { c, node, ns, version } = run;
  const name = `pm-${mode}`;
  const path = `/api/v1/namespaces/${ns}/pods/${name}`;
  const notes: string[] = [];
  if (o.pageCache === 'cold') notes.push(`the page cache of ${dropImageFiles(node)} files of the images' layers dropped before the pod`);
  const created = Date.now();
  await c.api.create(
    `/api/v1/namespaces/${ns}/pods`,
    subjectPod(mode, name, { ...run, namespace: ns, serviceAccountName: 'op', apiUrl: c.url, httpPort: await freePort() }),
  );
  const dgContainer = DRAINGUARD_CONTAINER[mode];
  const expected = dgContainer && dgContainer !== 'manager' ? ['manager', dgContainer] : ['manager'];
  const pod = await waitFor(
    `every container of ${name} running`,
    START_MS,
    async () => {
      const p = await c.api.get(path);
      const statuses = [...(p?.status?.containerStatuses ?? []), ...(p?.status?.initContainerStatuses ?? [])];
      const terminated = statuses.find((s: any) => s.state?.terminated && s.name !== 'drainguard-install');
      if (terminated) throw new Error(`${name}: container ${terminated.name} ended: ${JSON.stringify(terminated.state)}`);
      return expected.every((n) => statuses.some((s: any) => s.name === n && s.state?.running)) ? p : undefined;
    },
    () => node.tail(),
  );
  const t0 = performance.now();
  const t0Wall = Date.now();
  const startS = (Date.now() - created) / 1000;
  const uid = pod.metadata.uid as string;
  const cgroups = podCgroups(node, version, pod);
  const at = () => (performance.now() - t0) / 1000;
  const read = () => {
    const p = readCgroupMemory(version, cgroups.pod);
    const containers: Record<string, CgroupMemory> = {};
    for (const [n, dir] of Object.entries(cgroups.containers)) {
      const m = readCgroupMemory(version, dir);
      if (m) containers[n] = m;
    }
    return p && { pod: p, containers };
  };
  const samples: Sample[] = [];
  const sample = async (label: string) => {
    const atS = at();
    const r = read();
    if (!r) throw new Error(`${name}: its cgroup is gone at ${label}`);
    const drainguard = dgContainer ? processMemory(drainguardPids(cgroups.containers[dgContainer]!)) : undefined;
    const kubelet = await kubeletView(node, ns, name).catch((err: Error) => {
      notes.push(`kubelet metrics at ${label}: ${err.message}`);
      return undefined;
    });
    samples.push({ label, atS, ...r, ...(kubelet && { kubelet }), ...(drainguard && { drainguard }) });
    progress(`${mode}: ${label}, pod working set ${(r.pod.workingSet / MiB).toFixed(1)} MiB`);
  };
  const logDir = join(node.podLogsDir, `${ns}_${name}_${uid}`, dgContainer ?? 'manager');
  const logFile = await waitFor(`the log of ${name}`, 30_000, () => readdirSync(logDir).find((f) => f.endsWith('.log')));
  const logFd = openSync(join(logDir, logFile), 'r');
  let clients: Clients | undefined;
  const linkDir = mkdtempSync(join(tmpdir(), 'pm-'));
  try {
    for (const s of mode === 'alone' ? (o.aloneIdleS ?? o.idleS) : o.idleS) {
      await sleep(Math.max(0, s * 1000 - (performance.now() - t0)));
      await sample(`idle ${s} s`);
    }
    if (o.reclaim) {
      const freed = reclaimPass(version, cgroups.pod);
      await sample('after a reclaim pass');
      notes.push(`the reclaim pass at ${at().toFixed(0)} s freed ${mib(freed)} MiB`);
      await sleep(RECLAIMED_IDLE_MS);
      await sample(`${RECLAIMED_IDLE_MS / 1000} s after it`);
    }
    if (dgContainer && o.clients > 0) {
      clients = await connectClients(
        join(node.kubeletDir, 'pods', uid, 'volumes/kubernetes.io~empty-dir', SOCKET_VOLUME_NAME),
        o.clients,
        linkDir,
      );
      await sample(`${o.clients} clients connected`);
    }

    // From the delete to the pod's end: the cgroups every 20 ms.
    const fast: { wallMs: number; atS: number; pod: CgroupMemory; containers: Record<string, CgroupMemory> }[] = [];
    const timer = setInterval(() => {
      const r = read();
      if (r) fast.push({ wallMs: Date.now(), atS: at(), ...r });
    }, FAST_MS);
    await c.api.delete(path);
    try {
      if (clients) {
        await within(clients.drainSeen, 60_000, `${o.clients} clients told to drain`, clients.proc);
        for (let i = 1; i <= o.drainSamples; i++) {
          await sleep(1000);
          await sample(`drain, ${o.clients} clients, ${i} s`);
        }
        for (const pid of clients.holders) process.kill(pid, 'SIGUSR2');
      }
      let closed = false;
      await waitFor(`${name} gone`, 120_000, async () => {
        if ((await c.api.get(path)) === undefined) return true;
        // The clients stand for the operator's connections: they close when its container ends (the sidecar waits for
        // that), seen here as its cgroup gone (runc removes it at the container's end, before the kubelet says so).
        if (clients && !closed && !existsSync(cgroups.containers.manager!)) {
          closed = true;
          clients.proc.killAll();
        }
        return undefined;
      });
    } finally {
      clearInterval(timer);
    }
    const log = logLines(logFd);
    if (o.logs) writeFileSync(join(o.logs, `${mode}.log`), log.map((l) => JSON.stringify(l)).join('\n') + '\n');
    const releasedAt = Date.parse(log.find((l) => l.msg === 'guard released')?.time ?? '');
    const steps = log.filter((l) => STOP_STEPS.some((m) => l.msg.startsWith(m)));
    if (steps.length > 0)
      notes.push(
        steps
          .map((l) => `${l.msg}${l.outcome ? ` (${l.outcome})` : ''} at ${((Date.parse(l.time) - t0Wall) / 1000).toFixed(1)} s`)
          .join(', '),
      );
    const peak = fast.reduce<(typeof fast)[number] | undefined>((m, f) => (!m || f.pod.workingSet > m.pod.workingSet ? f : m), undefined);
    if (peak) samples.push({ label: 'delete → pod gone, peak', ...peak });
    if (dgContainer) {
      const release = fast.filter((f) => f.wallMs <= releasedAt).at(-1);
      if (release) samples.push({ label: 'guard release', ...release });
      else notes.push(`no 'guard released' line read (${log.length} log lines), or no read before it`);
    }
    for (const f of fast) samples.push({ label: 'stop read', atS: f.atS, pod: f.pod, containers: f.containers });
    return { mode, startS, samples, stopReads: fast.length, qosClass: pod.status.qosClass, notes };
  } finally {
    closeSync(logFd);
    clients?.proc.killAll();
    rmSync(linkDir, { recursive: true, force: true });
  }
}

interface Clients {
  readonly proc: Proc;
  /** The processes holding the connections: SIGUSR2 has them say drained. */
  readonly holders: readonly number[];
  /** Every client has seen `drain`. */
  readonly drainSeen: Promise<void>;
}

/**
 * N clients on the pod's drain socket, from the host (fixtures/clients.ts, holding the drain open):
 * the socket's path is longer than a sockaddr_un holds, so they connect through a short symlink to
 * its directory in `linkDir` (not from inside it: the kubelet could not unmount the volume, and
 * the pod would never end). Resolves once every client was welcomed.
 */
async function connectClients(socketDir: string, n: number, linkDir: string): Promise<Clients> {
  symlinkSync(socketDir, join(linkDir, 's'));
  const proc = new Proc(
    NODE,
    [fixture('clients.ts')],
    { BENCH_CLIENTS: String(n), BENCH_PROCS: '4', BENCH_HOLD: '1', DRAINGUARD_SOCKET: join(linkDir, 's/drain.sock') },
    { detached: true },
  );
  const holders: number[] = [];
  let [ready, seen] = [0, 0];
  let allReady!: () => void;
  let allSeen!: () => void;
  const readyP = new Promise<void>((r) => (allReady = r));
  const drainSeen = new Promise<void>((r) => (allSeen = r));
  proc.onLine((line) => {
    const [kind, ...rest] = line.split(' ');
    if (kind === 'ready') {
      holders.push(Number(rest[1]));
      reportedPid(Number(rest[1]));
      if ((ready += Number(rest[0])) === n) allReady();
    }
    if (kind === 'd' && (seen += rest.length) === n) allSeen();
  });
  try {
    await within(readyP, 120_000, `${n} clients connected`, proc);
  } catch (err) {
    proc.killAll();
    throw err;
  }
  return { proc, holders, drainSeen };
}

async function within(p: Promise<void>, ms: number, what: string, proc: Proc): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: not after ${ms} ms`)), ms)));
  const exited = proc.exited.then(() => {
    throw new Error(`${what}: the clients exited first; ${proc.stderr.slice(-3).join(' | ')}`);
  });
  try {
    await Promise.race([p, timeout, exited]);
  } finally {
    clearTimeout(timer);
  }
}

/** Runs the benchmark on a node of its own, registered with the run's control plane (or a private one). */
export async function runPodMemory(o: PodMemoryOptions, progress: (line: string) => void): Promise<PodMemoryResult> {
  const c = await useCluster();
  progress('starting a real node (containerd, the kubelet, the images)');
  const node = await startNode(c);
  const images = mkdtempSync(join(tmpdir(), 'drainguard-pod-memory-'));
  try {
    node.importImages(buildOperatorImages(images));
  } finally {
    rmSync(images, { recursive: true, force: true });
  }
  const { name: ns } = await c.namespace('pod-memory');
  // The operator's ServiceAccount, ClusterRole and binding, and drainguard's own RBAC as deploy/components/rbac renders it.
  await c.serviceAccount(ns, 'op');
  const role = `${ns}-op`;
  await c.grant(ns, 'op', role, [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list'] }], { clusterWide: true });
  const rbac = drainguardRbac({ namespace: ns, deployment: 'op', serviceAccount: 'op', clusterRole: role, clusterRoleBinding: role });
  for (const object of rbac) await c.create(object);
  const own = rbac[0]!.metadata.name;
  const guard = [
    `clusterrole/${role}`,
    `clusterrolebinding/${role}`,
    `serviceaccount/${ns}/op`,
    `clusterrole/${own}`,
    `clusterrolebinding/${own}`,
    `role/${ns}/${own}`,
    `rolebinding/${ns}/${own}`,
  ].join(',');
  const version = cgroupVersion();
  const subjects: SubjectResult[] = [];
  for (const mode of o.modes) subjects.push(await measure({ c, node, ns, guard, version }, mode, o, progress));
  const versionOf = (cmd: string, args: string[]) => execFileSync(cmd, args, { encoding: 'utf8' }).trim().split('\n')[0]!;
  return {
    kubelet: c.release,
    containerd: versionOf('containerd', ['--version']),
    cgroup: version,
    kernel: readFileSync('/proc/sys/kernel/osrelease', 'utf8').trim(),
    options: o,
    subjects,
  };
}

const mib = (bytes: number | undefined) => (bytes === undefined ? '' : (bytes / MiB).toFixed(1));

/** Per sample label: the pod-level working set drainguard adds, against the operator alone's sample of the same label (or its last idle one). */
export function added(result: PodMemoryResult, subject: SubjectResult, sample: Sample): number | undefined {
  const alone = result.subjects.find((s) => s.mode === 'alone');
  if (!alone || subject.mode === 'alone') return undefined;
  const idle = alone.samples.filter((s) => s.label.startsWith('idle '));
  const same = alone.samples.find((s) => s.label === sample.label) ?? idle.at(-1);
  return same && sample.pod.workingSet - same.pod.workingSet;
}

/** Idle: the samples before any client connects (a pod's life nearly all of it), the reclaim pass's included. */
export const isIdle = (label: string): boolean => label.startsWith('idle ') || label.includes('reclaim') || label.endsWith(' s after it');

export interface ModeSummary {
  readonly mode: Mode;
  /** The pod-level working set drainguard adds, over the idle samples. */
  readonly addedIdleP99: number;
  /** The same over every sample and 20 ms read (the stop's reads are most of them). */
  readonly addedP99: number;
  readonly addedMax: number;
  /** The most drainguard's container held (its working set) beyond the operator's (wrap: the operator alone's container). */
  readonly containerMax: number;
  readonly anonAddedMax: number;
  readonly reads: number;
}

export function summarize(result: PodMemoryResult): ModeSummary[] {
  return result.subjects.flatMap((s) => {
    if (s.mode === 'alone') return [];
    const addedOf = (xs: readonly Sample[]) => xs.map((x) => added(result, s, x)).filter((x): x is number => x !== undefined);
    const adds = addedOf(s.samples);
    const alone = result.subjects.find((x) => x.mode === 'alone');
    const aloneIdle = alone?.samples.filter((x) => isIdle(x.label)).at(-1);
    const aloneAnon = aloneIdle?.pod.anon ?? 0;
    const aloneManager = aloneIdle?.containers.manager?.workingSet ?? 0;
    const dg = DRAINGUARD_CONTAINER[s.mode]!;
    return [
      {
        mode: s.mode,
        addedIdleP99: percentile(addedOf(s.samples.filter((x) => isIdle(x.label))), 99),
        addedP99: percentile(adds, 99),
        addedMax: percentile(adds, 100),
        containerMax: Math.max(...s.samples.map((x) => x.containers[dg]?.workingSet ?? 0)) - (dg === 'manager' ? aloneManager : 0),
        anonAddedMax: Math.max(...s.samples.map((x) => x.pod.anon)) - aloneAnon,
        reads: adds.length,
      },
    ];
  });
}

export function printPodMemory(result: PodMemoryResult): string {
  const o = result.options;
  const out: string[] = [];
  out.push(
    `drainguard in a pod, on the real kubelet ${result.kubelet} (${result.containerd}, cgroup ${result.cgroup}, Linux ${result.kernel}), ` +
      `in front of the Go example operator; page cache ${o.pageCache}`,
    `samples: idle at ${o.idleS.join(', ')} s after every container ran; ` +
      (o.reclaim ? `one reclaim pass through the pod's cgroup, a sample, one ${RECLAIMED_IDLE_MS / 1000} s later; ` : '') +
      `${o.clients} clients connected; ` +
      `${o.drainSamples} during the drain (1 s apart); every ${FAST_MS} ms from the delete to the pod's end (its peak, and the guard release)`,
    'working set = usage - inactive file (cAdvisor: what kubectl top and the eviction see); MiB',
    '',
  );
  const head = [
    '',
    's',
    'pod WS',
    'added',
    'container WS',
    'pod anon',
    'pod file (active)',
    'kubelet: pod / container (age s)',
    "drainguard's RSS / anon / ref",
  ];
  const rows: string[][] = [];
  for (const s of result.subjects) {
    const dg = DRAINGUARD_CONTAINER[s.mode] ?? 'manager';
    rows.push([`${MODE_TITLES[s.mode]} (${s.qosClass}, running ${s.startS.toFixed(1)} s after create)`]);
    for (const x of s.samples.filter((x) => x.label !== 'stop read')) {
      const a = added(result, s, x);
      rows.push([
        `  ${x.label}`,
        x.atS.toFixed(1),
        mib(x.pod.workingSet),
        a === undefined ? '' : mib(a),
        `${mib(x.containers[dg]?.workingSet)} (${dg})`,
        mib(x.pod.anon),
        `${mib(x.pod.file)} (${mib(x.pod.activeFile)})`,
        x.kubelet ? `${mib(x.kubelet.pod)} / ${mib(x.kubelet.containers[dg])} (${x.kubelet.ageS.toFixed(0)})` : '',
        x.drainguard ? `${mib(x.drainguard.rss)} / ${mib(x.drainguard.anon)} / ${mib(x.drainguard.referenced)}` : '',
      ]);
    }
    for (const n of s.notes) rows.push([`  note: ${n}`]);
  }
  const widths = head.map((h, i) => Math.max(h.length, ...rows.filter((r) => r.length > 1).map((r) => (r[i] ?? '').length)));
  const line = (r: string[]) =>
    r.length === 1 ? r[0]! : r.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  out.push(line(head), ...rows.map(line), '');
  for (const m of summarize(result)) {
    out.push(
      `${m.mode}: the pod-level working set drainguard adds: idle p99 ${mib(m.addedIdleP99)}; over all ${m.reads} reads ` +
        `p99 ${mib(m.addedP99)}, max ${mib(m.addedMax)} MiB; ` +
        `anonymous at most ${mib(m.anonAddedMax)} MiB more; ${DRAINGUARD_CONTAINER[m.mode]} container at most ${mib(m.containerMax)} MiB ` +
        `beyond the operator's`,
    );
  }
  const modes = summarize(result);
  if (modes.length > 0) {
    const worst = {
      idleAddedP99: Math.max(...modes.map((m) => m.addedIdleP99)) / MiB,
      containerMax: Math.max(...modes.map((m) => m.containerMax)) / MiB,
    };
    const sized = sizedMemory(worst);
    out.push(
      `sized as src/check/memory.ts sizes it (the worst mode: idle p99 ${worst.idleAddedP99.toFixed(1)}, container ${worst.containerMax.toFixed(1)} MiB): ` +
        `request ${sized.request}Mi, limit ${sized.limit}Mi; shipped: ${WRAP_MEMORY_MIB.request}Mi, ${WRAP_MEMORY_MIB.limit}Mi`,
    );
  }
  return `${out.join('\n')}\n`;
}

export const POD_MEMORY_DEFAULTS: PodMemoryOptions = {
  modes: MODES,
  idleS: [30, 150, 300],
  clients: 1000,
  drainSamples: 5,
  pageCache: 'cold',
  reclaim: true,
};

/** The options from the command line (the bench's own, or run.ts's --pod-* ones). */
export function podMemoryOptions(v: {
  modes?: string;
  idle?: string;
  clients?: string;
  pageCache?: string;
  reclaim?: boolean;
}): PodMemoryOptions | string {
  const modes = v.modes ? v.modes.split(',') : [...MODES];
  const unknown = modes.filter((m) => !(MODES as readonly string[]).includes(m));
  if (unknown.length > 0) return `--modes: unknown ${unknown.join(', ')}; of: ${MODES.join(', ')}`;
  const idleS = v.idle ? v.idle.split(',').map(Number) : POD_MEMORY_DEFAULTS.idleS;
  if (idleS.some((s) => !Number.isFinite(s) || s < 0) || idleS.some((s, i) => i > 0 && s <= idleS[i - 1]!))
    return `--idle: expected rising seconds, such as 30,150,300; got ${JSON.stringify(v.idle)}`;
  const clients = v.clients === undefined ? POD_MEMORY_DEFAULTS.clients : Number(v.clients);
  if (!Number.isSafeInteger(clients) || clients < 0) return `--clients: expected a whole number, got ${JSON.stringify(v.clients)}`;
  const pageCache = v.pageCache ?? 'cold';
  if (pageCache !== 'cold' && pageCache !== 'warm') return `--page-cache: expected cold or warm, got ${JSON.stringify(v.pageCache)}`;
  // The operator alone first: every other pod is compared with it.
  const ordered = [...new Set(['alone', ...modes])].filter((m) => modes.includes(m) || m === 'alone') as Mode[];
  return { modes: ordered, idleS, clients, drainSamples: POD_MEMORY_DEFAULTS.drainSamples, pageCache, reclaim: v.reclaim ?? true };
}

if (import.meta.main) {
  const { values } = parseArgs({
    options: {
      modes: { type: 'string' },
      idle: { type: 'string' },
      'alone-idle': { type: 'string' },
      clients: { type: 'string' },
      'page-cache': { type: 'string' },
      'no-reclaim': { type: 'boolean', default: false },
      logs: { type: 'string' },
      out: { type: 'string' },
      print: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    process.stdout.write(
      `node test/tooling/bench/pod-memory.ts [--modes ${MODES.join(',')}] [--idle 30,150,300] [--alone-idle LIST] [--clients 1000] [--page-cache cold|warm] [--no-reclaim] [--logs DIR] [--out FILE]\n` +
        '       node test/tooling/bench/pod-memory.ts --print FILE   (the tables of an --out file)\n' +
        '(as root, after npm run build; KUBEBUILDER_ASSETS or the built release for the kubelet; the operator alone is always measured)\n',
    );
    process.exit(0);
  }
  if (values.print) {
    // The tables again from an --out file, without running anything.
    process.stdout.write(printPodMemory(JSON.parse(readFileSync(values.print, 'utf8')) as PodMemoryResult));
    process.exit(0);
  }
  const parsed = podMemoryOptions({ ...values, pageCache: values['page-cache'], reclaim: !values['no-reclaim'] });
  const alone = values['alone-idle'] && podMemoryOptions({ idle: values['alone-idle'] });
  if (typeof alone === 'string') {
    process.stderr.write(`pod-memory: ${alone.replace('--idle', '--alone-idle')}\n`);
    process.exit(2);
  }
  const o =
    typeof parsed === 'string'
      ? parsed
      : { ...parsed, ...(values.logs && { logs: values.logs }), ...(alone && { aloneIdleS: alone.idleS }) };
  if (typeof o === 'string') {
    process.stderr.write(`pod-memory: ${o}\n`);
    process.exit(2);
  }
  // Interrupted: the node's containers, mounts and cgroups are removed before exiting (test/support/node stop()).
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.once(sig, () => {
      process.stderr.write(`pod-memory: ${sig}, stopping the node\n`);
      killReported();
      void runFileEndHooks().finally(() => process.exit(130));
    });
  }
  try {
    const result = await runPodMemory(o, (l) => process.stderr.write(`  ${l}\n`));
    process.stdout.write(printPodMemory(result));
    if (values.out) writeFileSync(values.out, `${JSON.stringify(result, null, 2)}\n`);
  } finally {
    killReported();
    await runFileEndHooks();
  }
}
