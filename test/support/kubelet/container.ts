// One container as a local process: its environment resolved as the kubelet
// resolves it, its paths and ports mapped onto the host (see README.md), and
// the image turned into a command by the test's Runner.

import { accessSync, constants, readFileSync, readdirSync } from 'node:fs';
import { isAbsolute } from 'node:path';
import { type Exit, Proc } from '../proc.ts';
import type { Api } from './api.ts';

/** What a Runner gets to decide how to run a container (or one of its exec hooks). */
export interface ContainerRun {
  readonly pod: any;
  readonly container: any;
  /** command + args (or the hook's command), $(VAR)s expanded, mount paths and ports mapped. */
  readonly argv: readonly string[];
  /** The container's environment as the kubelet gives it, mapped the same way, KUBECONFIG included. */
  readonly env: Readonly<Record<string, string>>;
  /** Set when this is an exec hook, not the container's own process. */
  readonly hook?: 'preStop';
  /** The host directory behind a path inside the container, when a volume is mounted there. */
  hostPath(containerPath: string): string | undefined;
  /** The host port that stands for a declared containerPort (number or name). */
  port(port: number | string): number;
}

/** How to start it. `probes: false`: the command serves none of the container's probes; they are not run. */
export interface Launch {
  readonly file: string;
  readonly args?: readonly string[];
  readonly env?: NodeJS.ProcessEnv;
  readonly cwd?: string;
  readonly probes?: boolean;
}

/** Maps a container to a command; undefined: run argv as it stands (a host path after mapping). */
export type Runner = (run: ContainerRun) => Launch | undefined;

/** The host side of a pod: its volumes' directories and its ports. */
export interface PodHost {
  readonly dir: string;
  readonly volumes: ReadonlyMap<string, string>;
  /** containerPort → host port, for every port the pod's containers declare. */
  readonly ports: ReadonlyMap<number, number>;
  readonly kubeconfig?: string;
  readonly podIP: string;
}

const VAR = /\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)/g;

/** The kubelet's $(VAR) expansion: defined names are replaced, $$ is a literal $, the rest stays. */
export function expand(text: string, vars: Readonly<Record<string, string>>): string {
  return text.replace(VAR, (whole, name: string | undefined) => (name === undefined ? '$' : (vars[name] ?? whole)));
}

function fieldValue(pod: any, host: PodHost, path: string): string {
  const label = /^metadata\.(labels|annotations)\['(.+)'\]$/.exec(path);
  if (label) return pod.metadata[label[1]!]?.[label[2]!] ?? '';
  const fields: Record<string, string | undefined> = {
    'metadata.name': pod.metadata.name,
    'metadata.namespace': pod.metadata.namespace,
    'metadata.uid': pod.metadata.uid,
    'spec.nodeName': pod.spec.nodeName,
    'spec.serviceAccountName': pod.spec.serviceAccountName,
    'status.podIP': host.podIP,
    'status.podIPs': host.podIP,
    'status.hostIP': host.podIP,
    'status.hostIPs': host.podIP,
  };
  if (!(path in fields)) throw new Error(`fieldRef ${path} is not supported by the kubelet stand-in`);
  return fields[path] ?? '';
}

async function keyOf(
  api: Api,
  namespace: string,
  kind: 'configmaps' | 'secrets',
  ref: { name: string; key: string; optional?: boolean },
): Promise<string | undefined> {
  const r = await api.call('GET', `/api/v1/namespaces/${namespace}/${kind}/${ref.name}`);
  const data = r.status === 200 ? (kind === 'secrets' ? r.body.data : r.body.data) : undefined;
  const raw = data?.[ref.key];
  if (raw === undefined) {
    if (ref.optional) return undefined;
    throw new Error(`${kind}/${ref.name} key ${ref.key} not found (${r.status})`);
  }
  return kind === 'secrets' ? Buffer.from(raw, 'base64').toString('utf8') : raw;
}

/** The container's environment: envFrom, then env in order, with downward API and $(VAR) expansion. */
export async function resolveEnv(api: Api, pod: any, container: any, host: PodHost): Promise<Record<string, string>> {
  const ns = pod.metadata.namespace;
  const out: Record<string, string> = { HOSTNAME: pod.metadata.name };
  for (const from of container.envFrom ?? []) {
    const kind = from.configMapRef ? 'configmaps' : 'secrets';
    const ref = from.configMapRef ?? from.secretRef;
    const r = await api.call('GET', `/api/v1/namespaces/${ns}/${kind}/${ref.name}`);
    if (r.status !== 200 && !ref.optional) throw new Error(`envFrom ${kind}/${ref.name}: ${r.status}`);
    for (const [k, v] of Object.entries<string>(r.body?.data ?? {}))
      out[`${from.prefix ?? ''}${k}`] = kind === 'secrets' ? Buffer.from(v, 'base64').toString('utf8') : v;
  }
  for (const e of container.env ?? []) {
    const from = e.valueFrom;
    let value: string | undefined;
    if (!from) value = expand(e.value ?? '', out);
    else if (from.fieldRef) value = fieldValue(pod, host, from.fieldRef.fieldPath);
    else if (from.configMapKeyRef) value = await keyOf(api, ns, 'configmaps', from.configMapKeyRef);
    else if (from.secretKeyRef) value = await keyOf(api, ns, 'secrets', from.secretKeyRef);
    else throw new Error(`env ${e.name}: ${Object.keys(from).join(', ')} is not supported by the kubelet stand-in`);
    if (value !== undefined) out[e.name] = value;
  }
  if (host.kubeconfig) out.KUBECONFIG = host.kubeconfig;
  return out;
}

/**
 * The mapping of a container's view onto the host: a value that starts with a
 * mount path (alone or after `=`) gets the volume's directory instead, and a
 * listen address `:PORT`, `0.0.0.0:PORT` or `127.0.0.1:PORT` of a declared port
 * gets `127.0.0.1:HOSTPORT`.
 */
export class ContainerMap {
  readonly #mounts: [string, string][];
  readonly #ports: ReadonlyMap<number, number>;
  readonly #named: Map<string, number>;

  constructor(container: any, host: PodHost) {
    this.#mounts = (container.volumeMounts ?? [])
      .map((m: any): [string, string] => {
        const dir = host.volumes.get(m.name);
        if (dir === undefined)
          throw new Error(`volumeMount ${m.name}: no such volume, or its kind is not supported by the kubelet stand-in`);
        return [m.mountPath.replace(/\/+$/, ''), m.subPath ? `${dir}/${m.subPath}` : dir];
      })
      .sort((a: [string, string], b: [string, string]) => b[0].length - a[0].length);
    this.#ports = host.ports;
    this.#named = new Map((container.ports ?? []).filter((p: any) => p.name).map((p: any) => [p.name, p.containerPort]));
  }

  hostPath(path: string): string | undefined {
    for (const [mount, dir] of this.#mounts) if (path === mount || path.startsWith(`${mount}/`)) return dir + path.slice(mount.length);
    return undefined;
  }

  port(port: number | string): number {
    const number = typeof port === 'number' ? port : (this.#named.get(port) ?? Number(port));
    const host = this.#ports.get(number);
    if (host === undefined) throw new Error(`port ${port} is not declared by any container of the pod`);
    return host;
  }

  value(text: string): string {
    const eq = text.indexOf('=');
    if (eq > 0 && !text.startsWith('/')) return text.slice(0, eq + 1) + this.#one(text.slice(eq + 1));
    return this.#one(text);
  }

  #one(text: string): string {
    const address = /^(?:0\.0\.0\.0|127\.0\.0\.1|localhost|\[::\])?:(\d+)$/.exec(text);
    const host = address && this.#ports.get(Number(address[1]));
    if (host !== undefined && host !== null) return `127.0.0.1:${host}`;
    return this.hostPath(text) ?? text;
  }
}

export interface Started {
  readonly proc?: Proc;
  /** The process itself ended (its output may still be held open by what it left behind). */
  readonly exited?: Promise<Exit>;
  /** Why it could not be started (the kubelet's StartError). */
  readonly error?: string;
  readonly probes: boolean;
}

/** Starts argv through the runner, in a process group of its own. */
export function start(runner: Runner | undefined, run: ContainerRun, cwd: string): Started {
  const launch = runner?.(run) ?? (run.argv.length > 0 ? { file: run.argv[0]!, args: run.argv.slice(1) } : undefined);
  if (!launch) return { error: `image ${run.container.image}: no command, and no runner for it`, probes: false };
  try {
    if (!isAbsolute(launch.file)) throw new Error('not an absolute path');
    accessSync(launch.file, constants.X_OK);
  } catch (err) {
    return { error: `${launch.file}: cannot be executed (${(err as Error).message})`, probes: false };
  }
  const proc = new Proc(launch.file, launch.args ?? [], { ...run.env, ...launch.env }, { cwd: launch.cwd ?? cwd, detached: true });
  proc.child.on('error', () => {});
  const exited = new Promise<Exit>((resolve) => proc.child.once('exit', (code, signal) => resolve({ code, signal })));
  return { proc, exited, probes: launch.probes ?? true };
}

/** Sends a signal to the container's main process (what a runtime does). */
export function signal(proc: Proc, sig: NodeJS.Signals): void {
  try {
    process.kill(proc.pid, sig);
  } catch {
    // Already gone.
  }
}

/** The processes below `pid`, from /proc (those in sessions of their own included). */
function descendants(pid: number): number[] {
  const parent = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // pid (comm) state ppid ...: comm may hold spaces and parentheses.
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      parent.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // Gone meanwhile.
    }
  }
  const found: number[] = [];
  const walk = (p: number) => {
    for (const [child, ppid] of parent) {
      if (ppid !== p) continue;
      found.push(child);
      walk(child);
    }
  };
  walk(pid);
  return found;
}

/**
 * SIGKILL to everything the container runs, as the end of its PID namespace
 * would be: the process group, and every process below the main one while it
 * still lives (drainguard starts the operator in a session of its own).
 */
export function killContainer(proc: Proc): void {
  const alive = proc.child.exitCode === null && proc.child.signalCode === null;
  for (const pid of [-proc.pid, ...(alive ? [proc.pid, ...descendants(proc.pid)] : [])]) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
}
