// A process-level stand-in for the kubelet (no container runtime starts here):
// it registers a Node, binds the Pending pods of its namespaces to it, and runs
// their containers as local processes through the test's runners. README.md
// says which parts of the kubelet it follows and which not.

import { randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import type { Proc } from '../proc.ts';
import { until } from '../wait.ts';
import { Api, type ClusterAccess } from './api.ts';
import type { Runner } from './container.ts';
import { PodWorker } from './pod.ts';

export type { ClusterAccess } from './api.ts';
export type { ContainerRun, Launch, Runner } from './container.ts';

export interface KubeletOptions {
  readonly cluster: ClusterAccess;
  /** The namespaces whose pods this kubelet binds and runs (test files share a cluster). */
  readonly namespaces: readonly string[];
  /** Runners by image, with or without its tag (`ghcr.io/drainguard/drainguard`); a function for anything else. */
  readonly images: Readonly<Record<string, Runner>> | ((image: string) => Runner | undefined);
}

/** What the kubelet did, in order: `started`, `exited N`, `preStop started`, `signal SIGTERM`, `deleted 200`, ... */
export interface KubeletEvent {
  readonly at: number;
  readonly pod: string;
  readonly uid: string;
  readonly container?: string;
  readonly what: string;
  /** The process, with `started` and `preStop process`. */
  readonly proc?: Proc;
}

const POD_IP = '127.0.0.1';

export class Kubelet {
  readonly nodeName: string;
  readonly events: KubeletEvent[] = [];
  /** Failures of the stand-in itself (a refused API call): a test should assert this stays empty. */
  readonly errors: string[] = [];
  readonly #api: Api;
  readonly #options: KubeletOptions;
  readonly #workers = new Map<string, PodWorker>();
  readonly #binding = new Set<string>();
  readonly #changes = new EventEmitter();
  readonly #stop = new AbortController();
  #watches: Promise<void>[] = [];

  private constructor(options: KubeletOptions) {
    this.#options = options;
    this.#api = new Api(options.cluster);
    this.nodeName = `stand-in-${randomBytes(4).toString('hex')}`;
    this.#changes.setMaxListeners(0);
  }

  static async start(options: KubeletOptions): Promise<Kubelet> {
    const k = new Kubelet(options);
    await k.#register();
    k.#watches = options.namespaces.map((ns) => k.#watch(ns));
    return k;
  }

  /** Waits until `predicate` returns a value, checked after every event. */
  waitFor<T>(predicate: () => T | undefined, ms: number, what: string): Promise<T> {
    return until(
      (check) => {
        this.#changes.on('change', check);
        return () => this.#changes.off('change', check);
      },
      () => {
        if (this.errors.length > 0) throw new Error(`kubelet stand-in failed: ${this.errors.join('; ')}`);
        return predicate();
      },
      ms,
      `${what}\nkubelet events:\n${this.timeline()}`,
    );
  }

  /** The first event that matches, waited for. */
  event(match: (e: KubeletEvent) => boolean, ms: number, what: string): Promise<KubeletEvent> {
    return this.waitFor(() => this.events.find(match), ms, what);
  }

  /** The process of the latest start of `container` in a pod whose name starts with `pod`, waited for. */
  async process(pod: string, container: string, ms = 20_000): Promise<Proc> {
    const e = await this.waitFor(
      () => this.events.findLast((x) => x.pod.startsWith(pod) && x.container === container && x.what === 'started'),
      ms,
      `${container} started in ${pod}`,
    );
    return e.proc!;
  }

  /** The events as text, for failure messages. */
  timeline(): string {
    const t0 = this.events[0]?.at ?? 0;
    return this.events
      .map((e) => `${String(e.at - t0).padStart(6)} ms  ${e.pod}${e.container ? `/${e.container}` : ''}: ${e.what}`)
      .join('\n');
  }

  /** Kills every container, force-deletes the pods it still runs, removes its Node. */
  async stop(): Promise<void> {
    this.#stop.abort();
    await Promise.all(this.#watches);
    const workers = [...this.#workers.values()];
    for (const w of workers) w.kill();
    await Promise.all(workers.map((w) => w.done));
    for (const ns of this.#options.namespaces) {
      const list = await this.#api.call('GET', `/api/v1/namespaces/${ns}/pods?fieldSelector=spec.nodeName%3D${this.nodeName}`);
      for (const pod of list.body?.items ?? [])
        await this.#api.call('DELETE', `/api/v1/namespaces/${ns}/pods/${pod.metadata.name}`, { gracePeriodSeconds: 0 });
    }
    await this.#api.call('DELETE', `/api/v1/nodes/${this.nodeName}`);
  }

  #note(pod: any, container: string | undefined, what: string, proc?: Proc): void {
    this.events.push({ at: Date.now(), pod: pod.metadata.name, uid: pod.metadata.uid, container, what, proc });
    proc?.child.on('close', () => this.#changes.emit('change'));
    this.#changes.emit('change');
  }

  #fail(pod: any, err: unknown): void {
    this.errors.push(`${pod?.metadata?.name ?? 'kubelet'}: ${(err as Error)?.message ?? err}`);
    this.#changes.emit('change');
  }

  #runner(image: string): Runner | undefined {
    const images = this.#options.images;
    if (typeof images === 'function') return images(image);
    return images[image] ?? images[image.replace(/@.*$/, '').replace(/:[^/:]+$/, '')];
  }

  async #register(): Promise<void> {
    await this.#api.must('POST', '/api/v1/nodes', {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: this.nodeName, labels: { 'kubernetes.io/hostname': this.nodeName, 'kubernetes.io/os': 'linux' } },
    });
    const at = new Date().toISOString();
    await this.#api.must(
      'PATCH',
      `/api/v1/nodes/${this.nodeName}/status`,
      {
        status: {
          conditions: [
            {
              type: 'Ready',
              status: 'True',
              reason: 'KubeletReady',
              message: 'kubelet stand-in',
              lastHeartbeatTime: at,
              lastTransitionTime: at,
            },
          ],
          addresses: [
            { type: 'InternalIP', address: POD_IP },
            { type: 'Hostname', address: this.nodeName },
          ],
          capacity: { cpu: '2', memory: '4Gi', pods: '110' },
          allocatable: { cpu: '2', memory: '4Gi', pods: '110' },
        },
      },
      'application/strategic-merge-patch+json',
    );
  }

  /** List, then watch from the list's resourceVersion; again whenever the watch ends. */
  async #watch(namespace: string): Promise<void> {
    const base = `/api/v1/namespaces/${namespace}/pods`;
    while (!this.#stop.signal.aborted) {
      let list;
      try {
        list = await this.#api.must('GET', base);
      } catch (err) {
        if (!this.#stop.signal.aborted) this.#fail(undefined, err);
        return;
      }
      const seen = new Set<string>();
      for (const pod of list.items) {
        seen.add(pod.metadata.uid);
        this.#observe(pod);
      }
      // Deleted while no watch was open.
      for (const [uid, w] of this.#workers) if (w.namespace === namespace && !seen.has(uid)) w.gone();
      await this.#api.watch(
        base,
        list.metadata.resourceVersion,
        (e) => {
          if (e.type === 'ADDED' || e.type === 'MODIFIED') this.#observe(e.object);
          else if (e.type === 'DELETED') this.#gone(e.object.metadata.uid);
        },
        this.#stop.signal,
      );
    }
  }

  #observe(pod: any): void {
    const uid = pod.metadata.uid;
    if (!pod.spec.nodeName) {
      if (!this.#binding.has(uid) && !pod.metadata.deletionTimestamp) void this.#bind(pod);
      return;
    }
    if (pod.spec.nodeName !== this.nodeName) return;
    const worker = this.#workers.get(uid);
    if (worker) return worker.update(pod);
    if (pod.metadata.deletionTimestamp && pod.status?.phase !== 'Running' && pod.status?.phase !== 'Pending') return;
    const events = {
      note: (p: any, c: string | undefined, w: string, proc?: Proc) => this.#note(p, c, w, proc),
      fail: (p: any, err: unknown) => this.#fail(p, err),
    };
    const w = new PodWorker(this.#api, pod, (image) => this.#runner(image), events, POD_IP);
    this.#workers.set(uid, w);
    w.update(pod);
  }

  #gone(uid: string): void {
    const w = this.#workers.get(uid);
    if (w) w.gone();
  }

  async #bind(pod: any): Promise<void> {
    this.#binding.add(pod.metadata.uid);
    const r = await this.#api.call('POST', `/api/v1/namespaces/${pod.metadata.namespace}/pods/${pod.metadata.name}/binding`, {
      apiVersion: 'v1',
      kind: 'Binding',
      metadata: { name: pod.metadata.name, uid: pod.metadata.uid },
      target: { apiVersion: 'v1', kind: 'Node', name: this.nodeName },
    });
    this.#note(pod, undefined, `bound ${r.status}`);
    if (r.status !== 201 && r.status !== 404 && r.status !== 409)
      this.#fail(pod, new Error(`binding: ${r.status} ${JSON.stringify(r.body?.message)}`));
  }
}
