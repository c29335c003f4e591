// The Deployment controller (pkg/controller/deployment): a ReplicaSet per
// pod template (named by the template's hash, labelled pod-template-hash,
// numbered by revision), the rolling update within maxSurge and
// maxUnavailable (or Recreate), the cleanup of old ReplicaSets past
// revisionHistoryLimit, and the status with its Available and Progressing
// conditions.

import { ApiError } from '../errors.ts';
import type { ResourceType } from '../resources.ts';
import type { Change, KubeObject } from '../store.ts';
import { timestamp } from '../strategies.ts';
import { Controller } from './controller.ts';
import { controllerOf, isActive, owned, ownerReference } from './pods.ts';

const HASH_LABEL = 'pod-template-hash';
const REVISION = 'deployment.kubernetes.io/revision';
const SAFE = 'bcdfghjklmnpqrstvwxz2456789';

/** A template's hash as a pod-template-hash value: FNV-1a of the template, SafeEncodeString'd. */
function templateHash(template: any, collisionCount = 0): string {
  let h = 0x811c9dc5;
  for (const ch of Buffer.from(JSON.stringify(canonical(template)) + (collisionCount ? String(collisionCount) : ''))) {
    h ^= ch;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return [...String(h)].map((c) => SAFE[c.charCodeAt(0) % SAFE.length]).join('');
}

function canonical(x: unknown): unknown {
  if (Array.isArray(x)) return x.map(canonical);
  if (x === null || typeof x !== 'object') return x;
  return Object.fromEntries(Object.keys(x).sort().map((k) => [k, canonical((x as any)[k])]));
}

function withoutHash(template: any): any {
  const t = structuredClone(template ?? {});
  if (t.metadata?.labels) {
    delete t.metadata.labels[HASH_LABEL];
    if (Object.keys(t.metadata.labels).length === 0) delete t.metadata.labels;
  }
  return canonical(t);
}

/** An intOrString of maxSurge/maxUnavailable against the replica count (percentages round up for surge, down for unavailable). */
function resolve(value: unknown, replicas: number, roundUp: boolean): number {
  if (typeof value === 'number') return value;
  const m = /^(\d+)%$/.exec(String(value ?? '25%'));
  if (!m) return Number(value) || 0;
  const exact = (Number(m[1]) * replicas) / 100;
  return roundUp ? Math.ceil(exact) : Math.floor(exact);
}

const revisionOf = (rs: KubeObject): number => Number(rs.metadata.annotations?.[REVISION] ?? 0);

export class DeploymentController extends Controller {
  constructor(registry: ConstructorParameters<typeof Controller>[0]) {
    super(registry, 'deployment-controller');
  }

  protected changed(c: Change): void {
    if (c.storage === 'apps/deployments') this.enqueue(`${c.object.metadata.namespace}/${c.object.metadata.name}`);
    if (c.storage === 'apps/replicasets' || c.storage === '/pods') {
      for (const o of [c.object, c.previous]) {
        const ref = o && controllerOf(o);
        if (ref?.kind === 'Deployment') this.enqueue(`${o!.metadata.namespace}/${ref.name}`);
        // Pods matter to a Recreate rollout (it waits for the old ones to be gone).
        if (ref?.kind === 'ReplicaSet') {
          const rs = this.registry.store.get('apps/replicasets', o!.metadata.namespace, ref.name);
          const owner = rs && controllerOf(rs);
          if (owner?.kind === 'Deployment') this.enqueue(`${o!.metadata.namespace}/${owner.name}`);
        }
      }
    }
  }

  protected resync(): void {
    for (const d of this.registry.store.list('apps/deployments')) this.enqueue(`${d.metadata.namespace}/${d.metadata.name}`);
  }

  #rsType(): ResourceType {
    return this.registry.types.find('apps', 'v1', 'replicasets')!;
  }

  #scale(rs: KubeObject, replicas: number, d: KubeObject, maxSurge: number): void {
    if (rs.spec.replicas === replicas) return;
    this.registry.mutate(this.#rsType(), rs.metadata.namespace, rs.metadata.name, (o) => {
      o.spec.replicas = replicas;
      o.metadata.annotations = { ...o.metadata.annotations, 'deployment.kubernetes.io/desired-replicas': String(d.spec.replicas), 'deployment.kubernetes.io/max-replicas': String(d.spec.replicas + maxSurge) };
    }, this.caller);
    rs.spec.replicas = replicas;
  }

  protected sync(key: string): void {
    const [namespace, name] = key.split('/') as [string, string];
    const d = this.registry.store.get('apps/deployments', namespace, name);
    if (!d) return;
    const all = owned(this.registry, 'apps/replicasets', d);
    const replicas: number = d.spec.replicas ?? 1;
    const rolling = d.spec.strategy?.type !== 'Recreate';
    const maxSurge = rolling ? resolve(d.spec.strategy?.rollingUpdate?.maxSurge, replicas, true) : 0;
    let maxUnavailable = rolling ? resolve(d.spec.strategy?.rollingUpdate?.maxUnavailable, replicas, false) : 0;
    if (rolling && maxSurge === 0 && maxUnavailable === 0) maxUnavailable = 1;
    let newRS = all.find((rs) => JSON.stringify(withoutHash(rs.spec.template)) === JSON.stringify(withoutHash(d.spec.template)));
    const old = all.filter((rs) => rs !== newRS).sort((a, b) => revisionOf(a) - revisionOf(b) || Date.parse(a.metadata.creationTimestamp) - Date.parse(b.metadata.creationTimestamp));
    let created = false;
    if (!d.metadata.deletionTimestamp && !d.spec.paused) {
      if (!newRS) {
        const oldTotal = old.reduce((n, rs) => n + (rs.spec.replicas ?? 0), 0);
        const initial = !rolling ? (old.some((rs) => rs.spec.replicas > 0 || owned(this.registry, '/pods', rs).some(isActive)) ? 0 : replicas) : old.length === 0 ? replicas : Math.max(0, Math.min(replicas, replicas + maxSurge - oldTotal));
        newRS = this.#createReplicaSet(d, initial, maxSurge, old);
        created = newRS !== undefined;
        if (!newRS) return;
      }
      if (rolling) this.#rollingUpdate(d, newRS, old, replicas, maxSurge, maxUnavailable);
      else this.#recreate(d, newRS, old, replicas);
      this.#cleanup(d, old);
    }
    // A Deployment being deleted may have no ReplicaSet of its template left (foreground deletion deletes them
    // first): its status is synced from what is there, as syncStatusOnly does.
    this.#status(d, newRS, newRS && !all.includes(newRS) ? [...all, newRS] : all, replicas, maxUnavailable, created);
  }

  #createReplicaSet(d: KubeObject, replicas: number, maxSurge: number, old: KubeObject[]): KubeObject | undefined {
    const hash = templateHash(withoutHash(d.spec.template), d.status?.collisionCount);
    const template = structuredClone(d.spec.template);
    template.metadata = { ...template.metadata, labels: { ...template.metadata?.labels, [HASH_LABEL]: hash } };
    const revision = Math.max(0, ...old.map(revisionOf)) + 1;
    const body = {
      metadata: {
        name: `${d.metadata.name}-${hash}`,
        labels: { ...d.spec.template?.metadata?.labels, [HASH_LABEL]: hash },
        annotations: { 'deployment.kubernetes.io/desired-replicas': String(d.spec.replicas ?? 1), 'deployment.kubernetes.io/max-replicas': String((d.spec.replicas ?? 1) + maxSurge), [REVISION]: String(revision) },
        ownerReferences: [ownerReference(d, 'apps/v1', 'Deployment')],
      },
      spec: { replicas, minReadySeconds: d.spec.minReadySeconds ?? 0, selector: { ...d.spec.selector, matchLabels: { ...d.spec.selector?.matchLabels, [HASH_LABEL]: hash } }, template },
    };
    try {
      const rs = this.registry.create(this.#rsType(), d.metadata.namespace, body, this.caller);
      this.registry.mutate(this.registry.types.find('apps', 'v1', 'deployments')!, d.metadata.namespace, d.metadata.name, (o) => {
        o.metadata.annotations = { ...o.metadata.annotations, [REVISION]: String(revision) };
      }, this.caller);
      return this.registry.store.get('apps/replicasets', rs.metadata.namespace, rs.metadata.name);
    } catch (err) {
      if (err instanceof ApiError && err.code === 409) {
        // A ReplicaSet of that name that is not ours: a hash collision (collisionCount).
        this.registry.mutate(this.registry.types.find('apps', 'v1', 'deployments')!, d.metadata.namespace, d.metadata.name, (o) => {
          o.status = { ...o.status, collisionCount: (o.status?.collisionCount ?? 0) + 1 };
        }, this.caller, 'status');
        return undefined;
      }
      throw err;
    }
  }

  #rollingUpdate(d: KubeObject, newRS: KubeObject, old: KubeObject[], replicas: number, maxSurge: number, maxUnavailable: number): void {
    const total = () => [newRS, ...old].reduce((n, rs) => n + (rs.spec.replicas ?? 0), 0);
    // reconcileNewReplicaSet
    if (newRS.spec.replicas > replicas) this.#scale(newRS, replicas, d, maxSurge);
    else if (newRS.spec.replicas < replicas) {
      const room = replicas + maxSurge - total();
      if (room > 0) this.#scale(newRS, newRS.spec.replicas + Math.min(room, replicas - newRS.spec.replicas), d, maxSurge);
    }
    // reconcileOldReplicaSets
    const oldCount = old.reduce((n, rs) => n + (rs.spec.replicas ?? 0), 0);
    if (oldCount === 0) return;
    const minAvailable = replicas - maxUnavailable;
    const newUnavailable = newRS.spec.replicas - (newRS.status?.availableReplicas ?? 0);
    let maxScaledDown = total() - minAvailable - newUnavailable;
    if (maxScaledDown <= 0) return;
    // cleanupUnhealthyReplicas: old pods that are not available go first.
    for (const rs of old) {
      if (maxScaledDown <= 0) break;
      const unhealthy = rs.spec.replicas - (rs.status?.availableReplicas ?? 0);
      if (rs.spec.replicas === 0 || unhealthy <= 0) continue;
      const down = Math.min(maxScaledDown, unhealthy);
      this.#scale(rs, rs.spec.replicas - down, d, maxSurge);
      maxScaledDown -= down;
    }
    // scaleDownOldReplicaSetsForRollingUpdate
    const available = [newRS, ...old].reduce((n, rs) => n + (rs.status?.availableReplicas ?? 0), 0);
    let scaleDown = available - minAvailable;
    for (const rs of old) {
      if (scaleDown <= 0) break;
      if (rs.spec.replicas === 0) continue;
      const down = Math.min(rs.spec.replicas, scaleDown);
      this.#scale(rs, rs.spec.replicas - down, d, maxSurge);
      scaleDown -= down;
    }
  }

  #recreate(d: KubeObject, newRS: KubeObject, old: KubeObject[], replicas: number): void {
    for (const rs of old) this.#scale(rs, 0, d, 0);
    if (old.some((rs) => owned(this.registry, '/pods', rs).some((p) => !['Succeeded', 'Failed'].includes(p.status?.phase)))) return;
    this.#scale(newRS, replicas, d, 0);
  }

  #cleanup(d: KubeObject, old: KubeObject[]): void {
    const limit = d.spec.revisionHistoryLimit ?? 10;
    const idle = old.filter((rs) => rs.spec.replicas === 0 && (rs.status?.replicas ?? 0) === 0 && !rs.metadata.deletionTimestamp);
    for (const rs of idle.slice(0, Math.max(0, idle.length - limit))) {
      try {
        this.registry.delete(this.#rsType(), rs.metadata.namespace, rs.metadata.name, { preconditions: { uid: rs.metadata.uid } }, this.caller);
      } catch (err) {
        if (!(err instanceof ApiError && (err.code === 404 || err.code === 409))) throw err;
      }
    }
  }

  #status(d: KubeObject, newRS: KubeObject | undefined, all: KubeObject[], replicas: number, maxUnavailable: number, created: boolean): void {
    const now = timestamp(this.registry.now());
    const current = all.map((rs) => this.registry.store.get('apps/replicasets', rs.metadata.namespace, rs.metadata.name)).filter((rs): rs is KubeObject => rs !== undefined);
    const sum = (f: (rs: KubeObject) => number) => current.reduce((n, rs) => n + f(rs), 0);
    const fresh = newRS && current.find((rs) => rs.metadata.uid === newRS.metadata.uid);
    const status: Record<string, any> = {
      observedGeneration: d.metadata.generation,
      replicas: sum((rs) => rs.status?.replicas ?? 0),
      updatedReplicas: fresh?.status?.replicas ?? 0,
      readyReplicas: sum((rs) => rs.status?.readyReplicas ?? 0),
      availableReplicas: sum((rs) => rs.status?.availableReplicas ?? 0),
      ...(d.status?.collisionCount !== undefined && { collisionCount: d.status.collisionCount }),
    };
    const unavailable = replicas - status.availableReplicas;
    if (unavailable > 0) status.unavailableReplicas = unavailable;
    for (const k of ['replicas', 'updatedReplicas', 'readyReplicas', 'availableReplicas']) if (status[k] === 0) delete status[k];
    const conditions: any[] = [...(d.status?.conditions ?? [])];
    const set = (c: { type: string; status: string; reason: string; message: string }) => {
      const i = conditions.findIndex((x) => x.type === c.type);
      const prev = conditions[i];
      if (prev && prev.status === c.status && prev.reason === c.reason && prev.message === c.message) return;
      const next = { ...c, lastUpdateTime: now, lastTransitionTime: prev && prev.status === c.status ? prev.lastTransitionTime : now };
      if (i !== -1) conditions.splice(i, 1);
      conditions.push(next);
    };
    const availableOk = (status.availableReplicas ?? 0) >= replicas - maxUnavailable;
    set(availableOk
      ? { type: 'Available', status: 'True', reason: 'MinimumReplicasAvailable', message: 'Deployment has minimum availability.' }
      : { type: 'Available', status: 'False', reason: 'MinimumReplicasUnavailable', message: 'Deployment does not have minimum availability.' });
    if (fresh) {
      const complete = (status.updatedReplicas ?? 0) === replicas && (status.replicas ?? 0) === replicas && (status.availableReplicas ?? 0) === replicas && status.observedGeneration === d.metadata.generation;
      const rsName = fresh.metadata.name;
      if (complete) set({ type: 'Progressing', status: 'True', reason: 'NewReplicaSetAvailable', message: `ReplicaSet "${rsName}" has successfully progressed.` });
      else if (created && !conditions.some((c) => c.type === 'Progressing')) set({ type: 'Progressing', status: 'True', reason: 'NewReplicaSetCreated', message: `Created new replica set "${rsName}"` });
      else set({ type: 'Progressing', status: 'True', reason: 'ReplicaSetUpdated', message: `ReplicaSet "${rsName}" is progressing.` });
    }
    status.conditions = conditions;
    this.registry.mutate(this.registry.types.find('apps', 'v1', 'deployments')!, d.metadata.namespace, d.metadata.name, (o) => {
      o.status = status;
    }, this.caller, 'status');
  }
}
