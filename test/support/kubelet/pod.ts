// One pod on the stand-in node, from its first container to the final delete:
// init containers in order, native sidecars kept running, main containers with
// their restart policy, the status the kubelet reports, and the kubelet's
// termination sequence when the pod is deleted (see README.md).

import { rmSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { constants } from 'node:os';
import type { Exit, Proc } from '../proc.ts';
import type { Api } from './api.ts';
import { type ContainerRun, ContainerMap, type PodHost, type Runner, killContainer, resolveEnv, signal, start } from './container.ts';
import { makePodHost } from './host.ts';

/** After its preStop hook, a container always gets this long before SIGKILL (the kubelet's minimumGracePeriodInSeconds). */
const MIN_GRACE_MS = 2000;
/** The kubelet's crash-loop backoff starts at 10 s; shortened so tests see restarts. */
const BACKOFF_START_MS = 200;
const BACKOFF_MAX_MS = 5000;
/** Readiness probes run this often, whatever periodSeconds says, so tests need not wait for them. */
const PROBE_MS = 300;

export interface PodEvents {
  note(pod: any, container: string | undefined, what: string, proc?: Proc): void;
  /** A problem of the stand-in itself (an API call that failed): the tests see it. */
  fail(pod: any, err: unknown): void;
}

type Kind = 'init' | 'sidecar' | 'main';

interface Terminated {
  exitCode: number;
  signal?: number;
  reason: string;
  message?: string;
  startedAt: string;
  finishedAt: string;
  containerID?: string;
}

interface Slot {
  readonly spec: any;
  readonly kind: Kind;
  map?: ContainerMap;
  env: Record<string, string>;
  proc?: Proc;
  exited?: Promise<Exit>;
  startedAt?: string;
  running: boolean;
  terminated?: Terminated;
  lastTerminated?: Terminated;
  waitingReason: string;
  restartCount: number;
  probes: boolean;
  probeOk: boolean;
  probeFailures: number;
  probeTimer?: NodeJS.Timeout;
  /** The last exit was final: no restart follows. */
  done: boolean;
}

const now = () => new Date().toISOString().replace(/\.\d+Z$/, 'Z');
const exitCode = (e: Exit) => e.code ?? 128 + (constants.signals[e.signal as keyof typeof constants.signals] ?? 0);
const path = (pod: any) => `/api/v1/namespaces/${pod.metadata.namespace}/pods/${pod.metadata.name}`;

export class PodWorker {
  readonly uid: string;
  #pod: any;
  readonly #api: Api;
  readonly #runners: (image: string) => Runner | undefined;
  readonly #events: PodEvents;
  readonly #podIP: string;
  readonly #slots: Slot[];
  #host?: PodHost;
  #startTime?: string;
  #initialized = false;
  #initFailed = false;
  #stopping = false;
  #stopped = false;
  #terminal = false;
  #deleted = false;
  #wake = new AbortController();
  /** When the grace period runs out (epoch ms): the deletion's, moved earlier by a second, shorter delete. */
  #killAt = Infinity;
  /** Timers that wait for #killAt, re-armed when it moves. */
  readonly #killAtMoved = new Set<() => void>();
  readonly #conditions = new Map<string, { status: string; lastTransitionTime: string; reason?: string }>();
  #pushing: Promise<void> = Promise.resolve();
  #dirty = false;
  readonly done: Promise<void>;

  constructor(api: Api, pod: any, runners: (image: string) => Runner | undefined, events: PodEvents, podIP: string) {
    this.#api = api;
    this.#pod = pod;
    this.uid = pod.metadata.uid;
    this.#runners = runners;
    this.#events = events;
    this.#podIP = podIP;
    const slot = (spec: any, kind: Kind): Slot => ({
      spec,
      kind,
      env: {},
      running: false,
      waitingReason: 'PodInitializing',
      restartCount: 0,
      probes: false,
      probeOk: false,
      probeFailures: 0,
      done: false,
    });
    this.#slots = [
      ...(pod.spec.initContainers ?? []).map((c: any) => slot(c, c.restartPolicy === 'Always' ? 'sidecar' : 'init')),
      ...pod.spec.containers.map((c: any) => slot(c, 'main')),
    ];
    this.done = this.#run().catch((err) => this.#events.fail(this.#pod, err));
  }

  /** The latest version of the Pod from the watch. */
  update(pod: any): void {
    this.#pod = pod;
    if (pod.metadata.deletionTimestamp && !this.#stopping) this.#beginStop(this.#effectiveGrace(pod), true);
    else if (pod.metadata.deletionTimestamp) this.#shorten(this.#effectiveGrace(pod));
  }

  /** The kubelet's calculateEffectiveGracePeriod (pod_workers.go): the deletion's, 0 (a force delete) included; at least 1 s. */
  #effectiveGrace(pod: any): number {
    return Math.max(1, pod.metadata.deletionGracePeriodSeconds ?? pod.spec.terminationGracePeriodSeconds ?? 30);
  }

  /** A second delete with a shorter grace period: the kubelet restarts the kill with it, from when it sees it. */
  #shorten(graceSeconds: number): void {
    const at = Date.now() + graceSeconds * 1000;
    if (at >= this.#killAt) return;
    this.#killAt = at;
    this.#events.note(this.#pod, undefined, `grace shortened to ${graceSeconds}s`);
    for (const rearm of this.#killAtMoved) rearm();
  }

  /** Resolves with 'late' at the moment `at()` gives, read again whenever the grace period is shortened. */
  #lateAt(at: () => number): { late: Promise<'late'>; cancel: () => void } {
    let timer: NodeJS.Timeout | undefined;
    let resolve!: (late: 'late') => void;
    const late = new Promise<'late'>((r) => (resolve = r));
    const arm = () => {
      clearTimeout(timer);
      timer = setTimeout(() => resolve('late'), Math.max(0, at() - Date.now()));
    };
    this.#killAtMoved.add(arm);
    arm();
    return { late, cancel: () => (clearTimeout(timer), this.#killAtMoved.delete(arm)) };
  }

  /**
   * The Pod is gone from the API (force-deleted): its containers are stopped and killed a second
   * later, whatever the spec's grace period, as the real kubelet does (docs/kubernetes.md); no final delete.
   */
  gone(): void {
    this.#deleted = true;
    if (!this.#stopping) this.#beginStop(1, false);
    else this.#shorten(1);
  }

  /** The kubelet itself stops: everything is killed at once. */
  kill(): void {
    this.#deleted = true;
    for (const s of this.#slots) if (s.proc) killContainer(s.proc);
    this.#beginStop(0, false);
  }

  get namespace(): string {
    return this.#pod.metadata.namespace;
  }

  #stopRequest?: (grace: number, finalDelete: boolean) => void;
  readonly #stopAsked = new Promise<[number, boolean]>((resolve) => (this.#stopRequest = (g, f) => resolve([g, f])));

  #beginStop(graceSeconds: number, finalDelete: boolean): void {
    this.#stopping = true;
    this.#wake.abort();
    this.#stopRequest!(graceSeconds, finalDelete);
  }

  async #run(): Promise<void> {
    this.#startTime = now();
    this.#condition('PodScheduled', 'True');
    this.#condition('PodReadyToStartContainers', 'False');
    this.#condition('Initialized', 'False', 'ContainersNotInitialized');
    this.#condition('Ready', 'False', 'ContainersNotReady');
    this.#condition('ContainersReady', 'False', 'ContainersNotReady');
    this.#push();
    this.#host = await makePodHost(this.#api, this.#pod, this.#podIP);
    const stopping = this.#stopAsked.then(([grace, finalDelete]) => this.#terminate(grace, finalDelete));
    if (!this.#stopping) {
      this.#condition('PodReadyToStartContainers', 'True');
      for (const s of this.#slots) await this.#prepare(s);
      await this.#lifecycle();
    }
    if (this.#terminal) await this.#stopAsked;
    await stopping;
  }

  async #prepare(s: Slot): Promise<void> {
    try {
      s.map = new ContainerMap(s.spec, this.#host!);
      const env = await resolveEnv(this.#api, this.#pod, s.spec, this.#host!);
      s.env = Object.fromEntries(Object.entries(env).map(([k, v]) => [k, s.map!.value(v)]));
    } catch (err) {
      s.waitingReason = 'CreateContainerConfigError';
      this.#events.note(this.#pod, s.spec.name, `config error: ${(err as Error).message}`);
    }
  }

  /** Init containers in order, then the main containers; returns when the pod is terminal or stopping. */
  async #lifecycle(): Promise<void> {
    const policy = this.#pod.spec.restartPolicy ?? 'Always';
    const sidecars: Promise<void>[] = [];
    for (const s of this.#slots.filter((x) => x.kind !== 'main')) {
      if (this.#stopping) return;
      if (s.kind === 'sidecar') {
        // Started, and the next init container follows (no startupProbe support).
        sidecars.push(this.#supervise(s, 'Always'));
        continue;
      }
      // A regular init container runs to completion, restarted on failure unless the policy is Never.
      await this.#supervise(s, policy === 'Never' ? 'Never' : 'OnFailure');
      if (this.#stopping) return;
      if (s.terminated?.exitCode !== 0) {
        this.#initFailed = true;
        this.#terminal = true;
        this.#push();
        return;
      }
    }
    this.#initialized = true;
    this.#condition('Initialized', 'True');
    this.#push();
    await Promise.all(this.#slots.filter((x) => x.kind === 'main').map((s) => this.#supervise(s, policy)));
    if (this.#stopping) return;
    // Every main container has finished for good: the pod is terminal; its sidecars are stopped.
    this.#terminal = true;
    for (const s of this.#slots.filter((x) => x.kind === 'sidecar').reverse()) {
      const deadline = Date.now() + (this.#pod.spec.terminationGracePeriodSeconds ?? 30) * 1000;
      await this.#stopSlot(s, () => deadline);
    }
    this.#push();
    await Promise.all(sidecars);
  }

  /** Runs a container until it is done for good under `policy`, or the pod stops. */
  async #supervise(s: Slot, policy: string): Promise<void> {
    let backoff = BACKOFF_START_MS;
    for (;;) {
      if (this.#stopping || !s.map || s.waitingReason === 'CreateContainerConfigError') return;
      const exit = await this.#startSlot(s);
      const failed = exit === undefined || s.terminated!.exitCode !== 0;
      const restart = !this.#stopping && (policy === 'Always' || (policy === 'OnFailure' && failed));
      s.done = !restart;
      if (!restart) {
        this.#push();
        return;
      }
      s.waitingReason = 'CrashLoopBackOff';
      this.#push();
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, backoff);
        this.#wake.signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
      });
      backoff = Math.min(backoff * 2, BACKOFF_MAX_MS);
      if (this.#stopping) return;
      s.restartCount++;
      s.lastTerminated = s.terminated;
      this.#events.note(this.#pod, s.spec.name, `restart ${s.restartCount}`);
    }
  }

  #containerRun(s: Slot, argv: readonly string[], hook?: 'preStop'): ContainerRun {
    const map = s.map!;
    return {
      pod: this.#pod,
      container: s.spec,
      argv: argv.map((a) => map.value(a)),
      env: s.env,
      hook,
      hostPath: (p) => map.hostPath(p),
      port: (p) => map.port(p),
    };
  }

  /** Starts the container once; resolves with its exit (undefined: it could not be started). */
  async #startSlot(s: Slot): Promise<Exit | undefined> {
    const argv = [...(s.spec.command ?? []), ...(s.spec.args ?? [])].map((a: string) =>
      a.replace(/\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)/g, (w, n?: string) => (n === undefined ? '$' : (s.env[n] ?? w))),
    );
    const started = start(this.#runners(s.spec.image), this.#containerRun(s, argv), this.#host!.dir);
    const at = now();
    if (!started.proc) {
      s.terminated = { exitCode: 128, reason: 'StartError', message: started.error, startedAt: at, finishedAt: at };
      s.running = false;
      this.#events.note(this.#pod, s.spec.name, `start failed: ${started.error}`);
      return undefined;
    }
    s.proc = started.proc;
    s.exited = started.exited;
    s.probes = started.probes;
    s.startedAt = at;
    s.running = true;
    s.terminated = undefined;
    s.probeOk = false;
    s.probeFailures = 0;
    this.#events.note(this.#pod, s.spec.name, 'started', started.proc);
    this.#startProbe(s);
    this.#push();
    const exit = await started.exited!;
    killContainer(started.proc);
    clearInterval(s.probeTimer);
    const code = exitCode(exit);
    s.running = false;
    s.terminated = {
      exitCode: code,
      ...(exit.signal && { signal: code - 128 }),
      reason: code === 0 ? 'Completed' : 'Error',
      startedAt: at,
      finishedAt: now(),
      containerID: this.#containerID(s),
    };
    this.#events.note(this.#pod, s.spec.name, `exited ${code}`);
    return exit;
  }

  #containerID(s: Slot): string {
    return `stand-in://${this.uid}/${s.spec.name}/${s.restartCount}`;
  }

  #startProbe(s: Slot): void {
    const probe = s.spec.readinessProbe;
    if (!probe?.httpGet || !s.probes) return;
    const threshold = probe.failureThreshold ?? 3;
    const check = () =>
      this.#httpGet(s, probe.httpGet, (probe.timeoutSeconds ?? 1) * 1000).then((ok) => {
        if (!s.running) return;
        s.probeFailures = ok ? 0 : s.probeFailures + 1;
        const ready = ok || (s.probeOk && s.probeFailures < threshold);
        if (ready !== s.probeOk) {
          s.probeOk = ready;
          this.#events.note(this.#pod, s.spec.name, ready ? 'ready' : 'not ready');
          this.#push();
        }
      });
    s.probeTimer = setInterval(check, PROBE_MS);
    void check();
  }

  /** An httpGet probe or hook: GET on the container's port on 127.0.0.1; 200–399 is success. */
  #httpGet(s: Slot, get: any, timeoutMs: number): Promise<boolean> {
    return new Promise((resolve) => {
      let port: number;
      try {
        port = s.map!.port(get.port);
      } catch {
        resolve(false);
        return;
      }
      const headers = Object.fromEntries((get.httpHeaders ?? []).map((h: any) => [h.name, h.value]));
      const request = get.scheme === 'HTTPS' ? httpsRequest : httpRequest;
      const req = request({ host: '127.0.0.1', port, path: get.path ?? '/', headers, rejectUnauthorized: false, agent: false }, (res) => {
        res.resume();
        resolve((res.statusCode ?? 0) >= 200 && (res.statusCode ?? 0) < 400);
      });
      req.setTimeout(Math.max(timeoutMs, 1), () => req.destroy());
      req.on('error', () => resolve(false));
      req.end();
    });
  }

  /** The kubelet's termination: main containers (preStop, stop signal, SIGKILL at the deadline), then sidecars in reverse order. */
  async #terminate(graceSeconds: number, finalDelete: boolean): Promise<void> {
    // Counted from when the deletion is seen, as the kubelet does: at or a moment after the deletionTimestamp.
    this.#killAt = Math.min(this.#killAt, Date.now() + graceSeconds * 1000);
    this.#events.note(this.#pod, undefined, `terminating, grace ${graceSeconds}s`);
    await Promise.all(this.#slots.filter((s) => s.kind !== 'sidecar').map((s) => this.#stopSlot(s, () => this.#killAt)));
    for (const s of this.#slots.filter((x) => x.kind === 'sidecar').reverse()) await this.#stopSlot(s, () => this.#killAt);
    await Promise.all(this.#slots.map((s) => s.exited));
    this.#stopped = true;
    this.#terminal = true;
    for (const s of this.#slots) s.done = true;
    if (this.#deleted) return this.#cleanup();
    this.#push();
    await this.#pushing;
    if (finalDelete) {
      const r = await this.#api.call('DELETE', path(this.#pod), {
        apiVersion: 'v1',
        kind: 'DeleteOptions',
        gracePeriodSeconds: 0,
        preconditions: { uid: this.uid },
      });
      this.#events.note(this.#pod, undefined, `deleted ${r.status}`);
    }
    this.#cleanup();
  }

  #cleanup(): void {
    if (this.#host) rmSync(this.#host.dir, { recursive: true, force: true });
  }

  async #stopSlot(s: Slot, deadline: () => number): Promise<void> {
    if (!s.running || !s.proc) return;
    const proc = s.proc;
    const hook = s.spec.lifecycle?.preStop;
    if (hook && !this.#deleted) {
      this.#events.note(this.#pod, s.spec.name, 'preStop started');
      const outcome = await this.#preStop(s, hook, deadline);
      this.#events.note(this.#pod, s.spec.name, `preStop ended: ${outcome}`);
    }
    const hookEnded = Date.now();
    if (!s.running) return;
    const stopSignal = (s.spec.lifecycle?.stopSignal ?? 'SIGTERM') as NodeJS.Signals;
    signal(proc, stopSignal);
    this.#events.note(this.#pod, s.spec.name, `signal ${stopSignal}`);
    // A pod gone from the API (force-deleted) gets no floor: the real kubelet kills it a second after the signal.
    const { late, cancel } = this.#lateAt(() => Math.max(deadline(), hookEnded + (this.#deleted ? 0 : MIN_GRACE_MS)));
    const result = await Promise.race([s.exited!, late]);
    cancel();
    if (result === 'late') {
      this.#events.note(this.#pod, s.spec.name, 'signal SIGKILL');
      killContainer(proc);
      await s.exited;
    }
  }

  async #preStop(s: Slot, hook: any, deadline: () => number): Promise<string> {
    const ms = Math.max(deadline() - Date.now(), 0);
    if (hook.httpGet) return (await this.#httpGet(s, hook.httpGet, ms)) ? 'succeeded' : 'failed';
    if (hook.sleep) {
      await new Promise((resolve) => setTimeout(resolve, Math.min(hook.sleep.seconds * 1000, ms)));
      return 'succeeded';
    }
    if (!hook.exec) return 'unsupported';
    const started = start(this.#runners(s.spec.image), this.#containerRun(s, hook.exec.command ?? [], 'preStop'), this.#host!.dir);
    if (!started.proc) return `failed: ${started.error}`;
    this.#events.note(this.#pod, s.spec.name, 'preStop process', started.proc);
    const { late, cancel } = this.#lateAt(deadline);
    const exit = await Promise.race([started.exited!, late]);
    cancel();
    killContainer(started.proc);
    if (exit === 'late') return 'timed out';
    return exitCode(exit) === 0 ? 'succeeded' : `failed: exit ${exitCode(exit)}`;
  }

  #condition(type: string, status: string, reason?: string): void {
    const old = this.#conditions.get(type);
    if (old?.status === status && old.reason === reason) return;
    this.#conditions.set(type, { status, reason, lastTransitionTime: old?.status === status ? old.lastTransitionTime : now() });
  }

  #ready(s: Slot): boolean {
    if (!s.running) return false;
    if (!s.spec.readinessProbe?.httpGet || !s.probes) return true;
    return s.probeOk;
  }

  #phase(): string {
    const mains = this.#slots.filter((s) => s.kind === 'main');
    if (this.#initFailed) return 'Failed';
    const allDone = mains.every((s) => s.done && s.terminated);
    if (this.#terminal && allDone) return mains.every((s) => s.terminated!.exitCode === 0) ? 'Succeeded' : 'Failed';
    if (this.#stopped) return 'Failed';
    if (!this.#initialized) return 'Pending';
    if (mains.some((s) => !s.running && !s.terminated)) return 'Pending';
    return 'Running';
  }

  #status(): any {
    const phase = this.#phase();
    const terminal = phase === 'Succeeded' || phase === 'Failed';
    const sidecarsReady = this.#slots.filter((s) => s.kind === 'sidecar').every((s) => this.#ready(s));
    const mainsReady = this.#slots.filter((s) => s.kind === 'main').every((s) => this.#ready(s));
    const ready = !terminal && this.#initialized && sidecarsReady && mainsReady;
    const reason = terminal ? 'PodCompleted' : 'ContainersNotReady';
    this.#condition('ContainersReady', ready ? 'True' : 'False', ready ? undefined : reason);
    this.#condition('Ready', ready ? 'True' : 'False', ready ? undefined : reason);
    if (this.#initialized || terminal) this.#condition('Initialized', 'True', this.#initialized ? undefined : 'PodCompleted');
    if (this.#stopped) this.#condition('PodReadyToStartContainers', 'False');
    const statusOf = (s: Slot) => {
      const state = s.running
        ? { running: { startedAt: s.startedAt } }
        : s.terminated && (s.done || s.waitingReason !== 'CrashLoopBackOff')
          ? { terminated: s.terminated }
          : { waiting: { reason: s.waitingReason } };
      return {
        name: s.spec.name,
        image: s.spec.image,
        imageID: `stand-in://${s.spec.image}`,
        ...(s.proc && { containerID: this.#containerID(s) }),
        ready: this.#ready(s),
        started: s.running,
        restartCount: s.restartCount,
        state,
        lastState: s.lastTerminated ? { terminated: s.lastTerminated } : {},
      };
    };
    return {
      phase,
      startTime: this.#startTime,
      hostIP: this.#podIP,
      hostIPs: [{ ip: this.#podIP }],
      podIP: this.#podIP,
      podIPs: [{ ip: this.#podIP }],
      conditions: [...this.#conditions].map(([type, c]) => ({
        type,
        status: c.status,
        lastProbeTime: null,
        lastTransitionTime: c.lastTransitionTime,
        ...(c.reason && { reason: c.reason }),
      })),
      initContainerStatuses: this.#slots.filter((s) => s.kind !== 'main').map(statusOf),
      containerStatuses: this.#slots.filter((s) => s.kind === 'main').map(statusOf),
    };
  }

  /** Sends the status as it is when the previous patch is answered (one patch in flight, the latest state). */
  #push(): void {
    if (this.#dirty || this.#deleted) return;
    this.#dirty = true;
    this.#pushing = this.#pushing
      .then(async () => {
        this.#dirty = false;
        if (this.#deleted) return;
        const r = await this.#api.call(
          'PATCH',
          `${path(this.#pod)}/status`,
          { metadata: { uid: this.uid }, status: this.#status() },
          'application/strategic-merge-patch+json',
        );
        if (r.status === 404) this.#deleted = true;
        else if (r.status !== 200) this.#events.fail(this.#pod, new Error(`status patch: ${r.status} ${JSON.stringify(r.body?.message)}`));
      })
      .catch((err) => this.#events.fail(this.#pod, err));
  }
}
