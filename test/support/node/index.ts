// A real node for the tests that are about the kubelet: Debian's containerd
// and runc, the kubelet of the control plane's release (or an older one's,
// kubeletRelease), registered with the
// run's control plane under a name of its own, one per test file. Pods run
// with hostNetwork on the host's loopback (no CNI is ever called: the network
// config containerd reads is a placeholder that makes the node Ready and fails
// any pod that is not hostNetwork), images are built here and imported
// (images.ts), and everything lives in a temporary directory and a cgroup of
// its own, removed by stop() (which the end of the file runs by itself).
// containerd and the kubelet run under `setpriv --pdeathsig SIGKILL`, in a
// process group of their own: they die with the test file however it ends.
// The measured facts of running them here are in README.md beside this file.

import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { request } from 'node:https';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Daemon } from '../daemon-process.ts';
import { locateNode } from './locate.ts';
import { freePort } from '../free-port.ts';
import { onFileEnd } from '../file-end.ts';
import { type TestCluster, useCluster } from '../cluster/index.ts';
import { signed } from '../cluster/pki.ts';
import { PAUSE_IMAGE, buildNodeImages } from './images.ts';
import { type Logind, startLogind } from '../logind/index.ts';

export { locateNode } from './locate.ts';
export { CHECKOUT, DRAINGUARD_IMAGE, TOOLS_IMAGE, buildContainerImage, saveImage, toolsImageStoppedBy, toolsMounts } from './images.ts';
export {
  type WrapPod,
  fieldRef,
  installedParts,
  outLines,
  wrapLogs,
  wrapOperatorPid,
  wrapPod,
  wrapStderr,
  wrapStdout,
} from './wrap-pod.ts';

const READY_MS = 120_000;

export interface RealNode {
  readonly name: string;
  /** A host directory for pods to mount (hostPath) and write what the test reads back. */
  readonly outDir: string;
  /** The kubelet's root directory: a pod's volumes are under `pods/UID/volumes/PLUGIN/NAME` (kubernetes.io~empty-dir). */
  readonly kubeletDir: string;
  /** Where the kubelet has the containers' logs written: `NAMESPACE_POD_UID/CONTAINER/RESTARTS.log`, CRI's format. */
  readonly podLogsDir: string;
  /** The kubelet's cgroupRoot (`/drainguard-NAME`), in every hierarchy: its pods' cgroups are under `ROOT/kubepods`. */
  readonly cgroupRoot: string;
  /** containerd's root: the images' layers unpacked under `io.containerd.snapshotter.v1.overlayfs/snapshots`. */
  readonly containerdRoot: string;
  /** Imports docker archives (`podman save --format docker-archive`) into the node's containerd, as the tools images are. */
  importImages(archives: readonly string[]): void;
  /** GET `path` of the kubelet's own API (`/metrics/resource`), as the node's client certificate; the body. */
  kubeletGet(path: string): Promise<string>;
  /** The kubelet's and containerd's last lines, for a failure's message. */
  tail(): string;
  /** The kubelet's log so far (--v=2, klog's format). */
  kubeletLog(): string;
  /** containerd's log so far (logrus's format). */
  containerdLog(): string;
  /** With NodeOptions.shutdown: logind's PrepareForShutdown(true), the kubelet's real graceful shutdown; resolves once emitted. */
  shutdown(): Promise<void>;
  stop(): Promise<void>;
}

/** The cgroup hierarchies mounted under /sys/fs/cgroup (v1: one per controller; v2: the unified one). */
function cgroupHierarchies(): string[] {
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((l) => l.split(' '))
    .filter((f) => f.length > 4 && f[4]!.startsWith('/sys/fs/cgroup') && ['cgroup', 'cgroup2'].includes(f[f.indexOf('-') + 1]!))
    .map((f) => f[4]!);
}

/**
 * Removes a cgroup tree, deepest first (a cgroup is removed with rmdir once
 * empty); a process still in it is one of this node's containers that outlived
 * its shim: killed by its pid.
 */
function removeCgroup(path: string): void {
  if (!existsSync(path)) return;
  for (const e of readdirSync(path, { withFileTypes: true })) if (e.isDirectory()) removeCgroup(join(path, e.name));
  for (const pid of readFileSync(join(path, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean)) {
    try {
      process.kill(Number(pid), 'SIGKILL');
    } catch {}
  }
  try {
    rmdirSync(path);
  } catch {
    // A process still in it: left for the leftovers report rather than hidden.
  }
}

/** Unmounts what is still mounted under `dir` (the kubelet's bind mount of its root, volumes of pods killed with it), deepest first. */
function unmountUnder(dir: string): void {
  const mounts = readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((l) => l.split(' ')[4])
    .filter((m): m is string => !!m && (m === dir || m.startsWith(`${dir}/`)));
  for (const m of mounts.sort((a, b) => b.length - a.length)) {
    try {
      execFileSync('umount', ['-l', m], { stdio: 'ignore' });
    } catch {}
  }
}

function containerdConfig(dir: string): string {
  return `version = 2
root = "${dir}/containerd"
state = "${dir}/run"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]
[grpc]
  address = "${dir}/c.sock"
[ttrpc]
  address = "${dir}/c.sock.ttrpc"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "${PAUSE_IMAGE}"
  # Without CAP_SYS_RESOURCE (a sandbox VM) runc cannot lower oom_score_adj below containerd's: clamped to it.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "${dir}/cni/bin"
    conf_dir = "${dir}/cni/conf"
`;
}

/** Whether the host's cgroups are v1 (the kubelet refuses them since 1.35 unless failCgroupV1 is false). */
const cgroupV1 = () => !existsSync('/sys/fs/cgroup/cgroup.controllers');

function kubeletConfig(
  dir: string,
  caCert: string,
  cgroupRoot: string,
  port: number,
  containerdSocket: string,
  featureGates: Readonly<Record<string, boolean>>,
  shutdown?: NodeShutdown,
  eviction?: SoftEviction,
): string {
  return `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
featureGates: ${JSON.stringify(featureGates)}
failCgroupV1: ${cgroupV1() ? 'false' : 'true'}
cgroupDriver: cgroupfs
cgroupRoot: ${cgroupRoot}
containerRuntimeEndpoint: unix://${containerdSocket}
address: 127.0.0.1
port: ${port}
readOnlyPort: 0
healthzPort: 0
authentication: { anonymous: { enabled: false }, webhook: { enabled: false }, x509: { clientCAFile: ${caCert} } }
authorization: { mode: AlwaysAllow }
enforceNodeAllocatable: []
failSwapOn: false
podLogsDir: ${dir}/logs
resolvConf: ""
serializeImagePulls: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: { memory.available: "0%", nodefs.available: "0%", imagefs.available: "0%" }
localStorageCapacityIsolation: ${eviction ? 'true' : 'false'}
${shutdown ? `shutdownGracePeriod: ${shutdown.gracePeriod}\nshutdownGracePeriodCriticalPods: ${shutdown.criticalPods}\n` : ''}${
    eviction
      ? `evictionSoft: ${JSON.stringify(eviction.soft)}\nevictionSoftGracePeriod: ${JSON.stringify(eviction.softGracePeriod)}\n` +
        `evictionMaxPodGracePeriod: ${eviction.maxPodGracePeriodSeconds}\n`
      : ''
  }`;
}

const NODE_DIR_PREFIX = 'drainguard-node-';
const OWNER_FILE = 'owner.json';

/** Whether process `pid` is alive. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Removes what a node left on the host once its daemons are gone: the
 * containers still in its cgroup and the shims serving them (both the node's
 * own processes, killed by pid), its mounts, its cgroups and its directory.
 */
async function reap(dir: string, cgroupRoot: string): Promise<void> {
  const shims = readdirSync('/proc')
    .filter((p) => /^\d+$/.test(p))
    .filter((p) => {
      try {
        return readFileSync(`/proc/${p}/cmdline`, 'utf8').includes(`${dir}/c.sock`);
      } catch {
        return false;
      }
    });
  const cgroups = cgroupHierarchies().map((h) => join(h, cgroupRoot));
  // A killed container's cgroup can stay busy for a moment after its process is gone.
  await until(
    () => {
      for (const c of cgroups) removeCgroup(c);
      return cgroups.every((c) => !existsSync(c));
    },
    10_000,
    `the cgroups ${cgroupRoot} removed`,
  ).catch((err: Error) => process.stderr.write(`${err.message}\n`));
  for (const pid of shims) {
    try {
      process.kill(Number(pid), 'SIGKILL');
    } catch {}
  }
  unmountUnder(dir);
  rmSync(dir, { recursive: true, force: true });
}

/** Reaps the nodes whose test file ended without stopping them (killed past its time limit, say), and says so. */
async function reapLeftovers(): Promise<void> {
  for (const entry of readdirSync('/tmp').filter((e) => e.startsWith(NODE_DIR_PREFIX))) {
    const dir = join('/tmp', entry);
    let owner: { pid: number; cgroupRoot: string } | undefined;
    try {
      owner = JSON.parse(readFileSync(join(dir, OWNER_FILE), 'utf8')) as { pid: number; cgroupRoot: string };
    } catch {
      continue;
    }
    if (alive(owner.pid)) continue;
    process.stderr.write(
      `test/support/node: a real node left in ${dir} by process ${owner.pid}, gone: its containers, mounts and cgroups removed\n`,
    );
    await reap(dir, owner.cgroupRoot);
  }
}

/** What a real-node test file's before hook makes: the run's control plane, a node of the file's own, a namespace `prefix`-…. */
export async function nodeWithNamespace(prefix: string): Promise<{ c: TestCluster; node: RealNode; ns: string }> {
  const c = await useCluster();
  const node = await startNode(c);
  return { c, node, ns: (await c.namespace(prefix)).name };
}

export interface NodeOptions {
  /** The kubelet's feature gates (the control plane's are privateCluster's). */
  readonly featureGates?: Readonly<Record<string, boolean>>;
  /** Also build TOOLS_IMAGE with each of these as its STOPSIGNAL (toolsImageStoppedBy). */
  readonly stopSignalImages?: readonly string[];
  /** The kubelet's graceful node shutdown, on a private system bus with our logind (test/support/logind). */
  readonly shutdown?: NodeShutdown;
  /** Soft node-pressure eviction (SoftEviction). */
  readonly eviction?: SoftEviction;
  /**
   * The kubelet of another release than the control plane's ('v1.37.2'), as the version-skew policy allows
   * (a kubelet up to three minors older than the API server): for a control plane whose own kubelet cannot be built.
   */
  readonly kubeletRelease?: string;
}

/**
 * With it the kubelet's localStorageCapacityIsolation is on: off, its cadvisor collects no disk usage, and the
 * eviction manager fails every round at HasDedicatedImageFs ("cannot find filesystem info for device") before it
 * looks at any signal, memory's included. The kubelet's soft eviction thresholds (`{ 'memory.available': '1000Gi' }`: a node always under them), how long each
 * must hold before the kubelet evicts (`{ 'memory.available': '90s' }`, counted from its start when met at once), and
 * evictionMaxPodGracePeriod, the grace (capped by the Pod's) it evicts with.
 */
export interface SoftEviction {
  readonly soft: Readonly<Record<string, string>>;
  readonly softGracePeriod: Readonly<Record<string, string>>;
  readonly maxPodGracePeriodSeconds: number;
}

/** The kubelet's shutdownGracePeriod and shutdownGracePeriodCriticalPods, as its config writes them (12s, 4s). */
export interface NodeShutdown {
  readonly gracePeriod: string;
  readonly criticalPods: string;
}

/**
 * Starts containerd and a kubelet registered as a Node of `cluster`, with the
 * images imported; resolves once the Node is Ready. Stopped at the end of the
 * file: every container killed, mounts, cgroup and directory removed, Node deleted.
 */
export async function startNode(cluster: TestCluster, options: NodeOptions = {}): Promise<RealNode> {
  const found = locateNode(process.env, options.kubeletRelease);
  if ('missing' in found) throw new Error(`no real node: ${found.missing} (see test/support/node/README.md)`);
  const name = `node-${randomBytes(3).toString('hex')}`;
  await reapLeftovers();
  // In /tmp, not the test file's TMPDIR: what a killed file leaves mounted there is found by
  // the next start (reapLeftovers), and a mount would fail the runner's removal of TMPDIR.
  // Short: containerd's socket path must fit in 107 bytes.
  const dir = mkdtempSync(join('/tmp', NODE_DIR_PREFIX));
  const outDir = join(dir, 'out');
  for (const d of ['out', 'pki', 'cni/bin', 'cni/conf', 'logs', 'images']) mkdirSync(join(dir, d), { recursive: true });
  writeFileSync(
    join(dir, 'cni/conf/10-host-network-only.conflist'),
    JSON.stringify({ cniVersion: '0.4.0', name: 'host-network-only', plugins: [{ type: 'loopback' }] }),
  );
  const socket = join(dir, 'c.sock');
  const cgroupRoot = `/drainguard-${name}`;
  const cgroups = cgroupHierarchies().map((h) => join(h, cgroupRoot));
  writeFileSync(join(dir, OWNER_FILE), JSON.stringify({ pid: process.pid, cgroupRoot }));

  const containerd = new Daemon('containerd', found.containerd, ['--config', join(dir, 'containerd.toml')], join(dir, 'containerd.log'));
  // With a shutdown: the kubelet on the private bus, through env (the Daemon passes on the test's environment).
  const logind: Logind | undefined = options.shutdown ? await startLogind(join(dir, 'logind')) : undefined;
  const kubelet = new Daemon(
    'kubelet',
    logind ? '/usr/bin/env' : found.kubelet,
    [
      ...(logind ? [`DBUS_SYSTEM_BUS_ADDRESS=${logind.address}`, found.kubelet] : []),
      `--config=${join(dir, 'kubelet.yaml')}`,
      `--kubeconfig=${join(dir, 'kubelet.kubeconfig')}`,
      `--root-dir=${join(dir, 'kubelet')}`,
      `--cert-dir=${join(dir, 'kubelet-pki')}`,
      `--hostname-override=${name}`,
      '--v=2',
    ],
    join(dir, 'kubelet.log'),
  );
  const kubeletPort = await freePort();
  const daemons = [containerd, kubelet];
  const onExit = () => daemons.forEach((d) => d.killNow());
  process.once('exit', onExit);
  const ctr = (...args: string[]) =>
    execFileSync(found.ctr, ['--address', socket, '--namespace', 'k8s.io', ...args], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  const tail = () => daemons.map((d) => `--- ${d.name}\n${d.tail()}`).join('\n');

  let stopped: Promise<void> | undefined;
  const stop = () =>
    (stopped ??= (async () => {
      process.off('exit', onExit);
      await kubelet.stop();
      if (containerd.running) {
        // The kubelet leaves its pods running; the shims outlive containerd: kill every task and remove it here.
        try {
          const tasks = ctr('tasks', 'ls', '--quiet').split('\n').filter(Boolean);
          for (const t of tasks) ctr('tasks', 'kill', '--all', '--signal', 'SIGKILL', t);
          for (const t of tasks) await deleteTask(ctr, t);
          for (const c of ctr('containers', 'ls', '--quiet').split('\n').filter(Boolean)) ctr('containers', 'rm', c);
        } catch (err) {
          process.stderr.write(`node ${name}: cleaning containerd: ${(err as Error).message}\n`);
        }
      }
      await containerd.stop();
      await logind?.stop();
      // TEST_NODE_LOGS=DIR keeps the kubelet's and containerd's logs of each node there.
      const keep = process.env.TEST_NODE_LOGS;
      if (keep) for (const d of daemons) copyFileSync(join(dir, `${d.name}.log`), join(keep, `${name}-${d.name}.log`));
      await reap(dir, cgroupRoot);
      await cluster.api.delete(`/api/v1/nodes/${name}`).catch(() => {});
    })());
  onFileEnd(stop);

  try {
    for (const c of cgroups) mkdirSync(c, { recursive: true });
    const [caCert, caKey] = [cluster.state.caFile, cluster.state.caKey];
    signed(join(dir, 'pki'), 'node', `/O=system:nodes/CN=system:node:${name}`, 'extendedKeyUsage=clientAuth\n', {
      cert: caCert,
      key: caKey,
    });
    writeFileSync(join(dir, 'kubelet.kubeconfig'), kubeconfig(cluster.url, caCert, join(dir, 'pki/node.crt'), join(dir, 'pki/node.key')), {
      mode: 0o600,
    });
    writeFileSync(join(dir, 'containerd.toml'), containerdConfig(dir));
    writeFileSync(
      join(dir, 'kubelet.yaml'),
      kubeletConfig(dir, caCert, cgroupRoot, kubeletPort, socket, options.featureGates ?? {}, options.shutdown, options.eviction),
    );
    containerd.start();
    const archives = await buildNodeImages(join(dir, 'images'), options.stopSignalImages);
    await until(() => existsSync(socket) || !containerd.running, 30_000, 'containerd serving');
    if (!containerd.running) throw new Error(`containerd exited:\n${containerd.tail()}`);
    for (const a of archives) ctr('images', 'import', a);
    rmSync(join(dir, 'images'), { recursive: true, force: true });
    kubelet.start();
    await until(
      async () => {
        if (!kubelet.running) throw new Error(`the kubelet exited:\n${kubelet.tail()}`);
        const node = await cluster.api.get(`/api/v1/nodes/${name}`);
        return node?.status?.conditions?.some((c: { type: string; status: string }) => c.type === 'Ready' && c.status === 'True') ?? false;
      },
      READY_MS,
      `Node ${name} Ready`,
      tail,
    );
  } catch (err) {
    await stop();
    throw err;
  }
  const shutdown = async () => {
    if (!logind) throw new Error('startNode without the shutdown option: no logind to shut the node down with');
    // The kubelet takes its inhibitor lock once its shutdown manager runs, after the Node is Ready at the latest.
    await until(
      () => logind.lines().some((l) => l.startsWith('inhibit kubelet shutdown delay')),
      30_000,
      "the kubelet's inhibitor lock",
      tail,
    );
    await logind.shutdown();
  };
  return {
    name,
    outDir,
    kubeletDir: join(dir, 'kubelet'),
    podLogsDir: join(dir, 'logs'),
    cgroupRoot,
    containerdRoot: join(dir, 'containerd'),
    importImages: (archives) => archives.forEach((a) => ctr('images', 'import', a)),
    kubeletGet: (path) => kubeletGet(kubeletPort, dir, path),
    tail,
    kubeletLog: () => readFileSync(join(dir, 'kubelet.log'), 'utf8'),
    containerdLog: () => readFileSync(join(dir, 'containerd.log'), 'utf8'),
    shutdown,
    stop,
  };
}

/** A container the kubelet began to stop: when (epoch ms, its clock) and with what grace. */
export interface KubeletKill {
  readonly at: number;
  readonly gracePeriodS: number;
  /** The container's ID in containerd. */
  readonly containerId: string;
  /** When containerd's StopContainer returned (its log): the container had exited, by itself or by the SIGKILL; undefined while it runs. */
  readonly stoppedAt?: number;
}

/**
 * Each time the kubelet began to stop container `container` of pod NAMESPACE/NAME, from its
 * log (`Killing container with a grace period`, at --v=2; klog's time has no year, and the
 * node's clock is UTC): the moment its runtime sends the stop signal, and the grace after
 * which it sends SIGKILL. The real SIGKILL is at or after `at + gracePeriodS`.
 */
export function kubeletKills(node: RealNode, namespace: string, pod: string, container: string): KubeletKill[] {
  const year = new Date().getUTCFullYear();
  return node
    .kubeletLog()
    .split('\n')
    .filter((l) => l.includes('"Killing container with a grace period"') && l.includes(`pod="${namespace}/${pod}"`))
    .filter((l) => l.includes(`containerName="${container}"`))
    .map((l) => {
      const [, mm, dd, time] = /^[IWE](\d\d)(\d\d) (\d\d:\d\d:\d\d\.\d+)/.exec(l)!;
      const at = Date.parse(`${year}-${mm}-${dd}T${time!.slice(0, 12)}Z`);
      const containerId = /containerID="containerd:\/\/([0-9a-f]+)"/.exec(l)?.[1] ?? '';
      const returned = node
        .containerdLog()
        .split('\n')
        .find((x) => x.includes(`msg="StopContainer for \\"${containerId}\\" returns successfully"`));
      const stoppedAt = returned && Date.parse(/^time="([^"]+)"/.exec(returned)?.[1] ?? '');
      return { at, gracePeriodS: Number(/gracePeriod=(\d+)/.exec(l)?.[1]), containerId, ...(stoppedAt && { stoppedAt }) };
    });
}

/**
 * A GET on the kubelet's API, authenticated by the node's own client certificate (the kubelet
 * trusts the control plane's CA). The kubelet serves a self-signed certificate of its own
 * (in its --cert-dir): that certificate is the only one trusted, so its names need no check.
 */
function kubeletGet(port: number, dir: string, path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path,
        ca: readFileSync(join(dir, 'kubelet-pki/kubelet.crt')),
        cert: readFileSync(join(dir, 'pki/node.crt')),
        key: readFileSync(join(dir, 'pki/node.key')),
        checkServerIdentity: () => undefined,
        timeout: 10_000,
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => (res.statusCode === 200 ? resolve(body) : reject(new Error(`kubelet ${path}: ${res.statusCode} ${body}`))));
      },
    );
    req.on('timeout', () => req.destroy(new Error(`kubelet ${path}: no answer in 10 s`)));
    req.on('error', reject);
    req.end();
  });
}

async function deleteTask(ctr: (...args: string[]) => string, task: string): Promise<void> {
  await until(
    () => {
      try {
        ctr('tasks', 'delete', task);
        return true;
      } catch {
        return false;
      }
    },
    10_000,
    `task ${task} deleted`,
  );
}

function kubeconfig(url: string, ca: string, cert: string, key: string): string {
  return `apiVersion: v1
kind: Config
clusters: [{ name: test, cluster: { server: '${url}', certificate-authority: '${ca}' } }]
users: [{ name: node, user: { client-certificate: '${cert}', client-key: '${key}' } }]
contexts: [{ name: test, context: { cluster: test, user: node } }]
current-context: test
`;
}

/** Polls `check` every 100 ms until it holds; rejects after `ms` with `what` and `detail()`. */
async function until(check: () => boolean | Promise<boolean>, ms: number, what: string, detail: () => string = () => ''): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}\n${detail()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
