// The ReplicaSet controller (pkg/controller/replicaset): as many active pods
// as spec.replicas, made from the template and controlled by the ReplicaSet
// (the least useful deleted first when there are too many), and the status:
// replicas, ready, available, fully labeled, observedGeneration.

import { ApiError } from '../errors.ts';
import type { ResourceType } from '../resources.ts';
import type { Change, KubeObject } from '../store.ts';
import { timestamp } from '../strategies.ts';
import { Controller } from './controller.ts';
import { controllerOf, isActive, isAvailable, isReady, owned, podFromTemplate, selectorMatches } from './pods.ts';

export class ReplicaSetController extends Controller {
  constructor(registry: ConstructorParameters<typeof Controller>[0]) {
    super(registry, 'replicaset-controller');
  }

  protected changed(c: Change): void {
    if (c.storage === 'apps/replicasets') this.enqueue(`${c.object.metadata.namespace}/${c.object.metadata.name}`);
    if (c.storage === '/pods') {
      for (const o of [c.object, c.previous]) {
        const ref = o && controllerOf(o);
        if (ref?.kind === 'ReplicaSet') this.enqueue(`${o!.metadata.namespace}/${ref.name}`);
      }
    }
  }

  protected resync(): void {
    for (const rs of this.registry.store.list('apps/replicasets')) this.enqueue(`${rs.metadata.namespace}/${rs.metadata.name}`);
  }

  #type(group: string, resource: string): ResourceType {
    return this.registry.types.find(group, 'v1', resource)!;
  }

  protected sync(key: string): void {
    const [namespace, name] = key.split('/') as [string, string];
    const rs = this.registry.store.get('apps/replicasets', namespace, name);
    if (!rs) return;
    const pods = owned(this.registry, '/pods', rs);
    const active = pods.filter(isActive);
    let failure: string | undefined;
    if (!rs.metadata.deletionTimestamp) {
      const diff = (rs.spec.replicas ?? 1) - active.length;
      try {
        if (diff > 0) for (let i = 0; i < diff; i++) this.registry.create(this.#type('', 'pods'), namespace, podFromTemplate(rs.spec.template, rs, 'apps/v1', 'ReplicaSet'), this.caller);
        if (diff < 0) for (const pod of rankForDeletion(active).slice(0, -diff)) this.#deletePod(pod);
      } catch (err) {
        if (!(err instanceof ApiError)) throw err;
        failure = err.message;
        this.enqueue(key, 1000);
      }
    }
    this.#status(rs, failure);
  }

  #deletePod(pod: KubeObject): void {
    try {
      this.registry.delete(this.#type('', 'pods'), pod.metadata.namespace, pod.metadata.name, { preconditions: { uid: pod.metadata.uid } }, this.caller);
    } catch (err) {
      if (!(err instanceof ApiError && (err.code === 404 || err.code === 409))) throw err;
    }
  }

  #status(rs: KubeObject, failure: string | undefined): void {
    const now = this.registry.now();
    const active = owned(this.registry, '/pods', rs).filter(isActive);
    const minReady = rs.spec.minReadySeconds ?? 0;
    const status: Record<string, any> = {
      replicas: active.length,
      fullyLabeledReplicas: active.filter((p) => selectorMatches({ matchLabels: rs.spec.template?.metadata?.labels ?? {} }, p.metadata.labels)).length,
      readyReplicas: active.filter(isReady).length,
      availableReplicas: active.filter((p) => isAvailable(p, minReady, now)).length,
      observedGeneration: rs.metadata.generation,
    };
    for (const k of ['readyReplicas', 'availableReplicas']) if (status[k] === 0) delete status[k];
    const old = (rs.status?.conditions ?? []).filter((c: any) => c.type !== 'ReplicaFailure');
    if (failure) status.conditions = [...old, { type: 'ReplicaFailure', status: 'True', lastTransitionTime: timestamp(now), reason: 'FailedCreate', message: failure }];
    else if (old.length) status.conditions = old;
    if (minReady > 0 && active.some((p) => isReady(p) && !isAvailable(p, minReady, now))) this.enqueue(`${rs.metadata.namespace}/${rs.metadata.name}`, 1000);
    this.registry.mutate(this.#type('apps', 'replicasets'), rs.metadata.namespace, rs.metadata.name, (o) => {
      o.status = status;
    }, this.caller, 'status');
  }
}

/** The pods to delete first: unscheduled, then pending, then not ready, then the most restarted, then the newest (ActivePodsWithRanks). */
function rankForDeletion(pods: KubeObject[]): KubeObject[] {
  const phase = (p: KubeObject) => ({ Pending: 0, Unknown: 1, Running: 2 } as Record<string, number>)[p.status?.phase] ?? 0;
  const restarts = (p: KubeObject) => (p.status?.containerStatuses ?? []).reduce((n: number, c: any) => n + (c.restartCount ?? 0), 0);
  const key = (p: KubeObject) => [p.spec.nodeName ? 1 : 0, phase(p), isReady(p) ? 1 : 0, -restarts(p), -Date.parse(p.metadata.creationTimestamp)];
  return [...pods].sort((a, b) => {
    const [x, y] = [key(a), key(b)];
    for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return x[i]! - y[i]!;
    return 0;
  });
}
