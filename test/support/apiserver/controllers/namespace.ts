// The namespace controller (pkg/controller/namespace): a deleted namespace is
// looked at 5 s after each of its changes (namespaceDeletionGracePeriod); it
// deletes everything in it, reports what remains in the namespace's
// conditions, looks again after half the estimate (the pods' grace period,
// 15 s for finalizers) plus a second, and once nothing is left removes the
// `kubernetes` finalizer, which lets the namespace go.
//
// Ordered namespace deletion (KEP-5080, OrderedNamespaceDeletion: beta and on
// by default in 1.33, GA in 1.34): the pods go first. While any pod of the
// namespace remains (Terminating for its grace period), nothing else in it is
// deleted; the conditions say the pods remain, and the namespace is looked at
// again after half the pods' grace period plus a second.

import { ApiError } from '../errors.ts';
import type { ResourceType } from '../resources.ts';
import type { Change, KubeObject } from '../store.ts';
import { timestamp } from '../strategies.ts';
import { Controller } from './controller.ts';

const DELETION_GRACE_MS = 5_000;
const FINALIZER_ESTIMATE_S = 15;

export class NamespaceController extends Controller {
  constructor(registry: ConstructorParameters<typeof Controller>[0]) {
    super(registry, 'namespace-controller');
  }

  protected changed(c: Change): void {
    if (c.storage === '/namespaces' && c.type !== 'DELETED' && c.object.metadata.deletionTimestamp) this.enqueue(c.object.metadata.name, DELETION_GRACE_MS);
  }

  protected resync(): void {
    for (const ns of this.registry.store.list('/namespaces')) if (ns.metadata.deletionTimestamp) this.enqueue(ns.metadata.name, DELETION_GRACE_MS);
  }

  #nsType(): ResourceType {
    return this.registry.types.find('', 'v1', 'namespaces')!;
  }

  protected sync(name: string): void {
    const ns = this.registry.store.get('/namespaces', undefined, name);
    if (!ns?.metadata.deletionTimestamp) return;
    if ((ns.spec?.finalizers ?? []).length === 0) return;
    const { estimate, remaining, finalizers } = this.#deleteContent(name);
    this.#conditions(name, remaining, finalizers);
    if (remaining.size > 0 || estimate > 0) {
      this.enqueue(name, (Math.floor(Math.max(estimate, remaining.size > 0 ? 1 : 0) / 2) + 1) * 1000);
      return;
    }
    this.registry.update(this.#nsType(), undefined, name, { ...this.registry.get(this.#nsType(), undefined, name), spec: { finalizers: (ns.spec.finalizers as string[]).filter((f) => f !== 'kubernetes') } }, this.caller, 'finalize');
  }

  /** deleteAllContent: every namespaced resource deleted (background); what is left, with the estimate of when it goes. */
  #deleteContent(namespace: string): { estimate: number; remaining: Map<string, number>; finalizers: Map<string, number> } {
    let estimate = 0;
    const remaining = new Map<string, number>();
    const finalizers = new Map<string, number>();
    const namespaced = this.registry.types.stored().filter((t) => t.namespaced);
    const pods = namespaced.find((t) => t.storage === '/pods')!;
    // Pods first (OrderedNamespaceDeletion): the rest waits until every pod is gone.
    for (const type of [pods, ...namespaced.filter((t) => t !== pods)]) {
      if (type === pods) {
        for (const pod of this.registry.store.list(type.storage, namespace)) {
          if (['Succeeded', 'Failed'].includes(pod.status?.phase)) continue;
          estimate = Math.max(estimate, pod.spec?.terminationGracePeriodSeconds ?? 30);
        }
      } else if (remaining.has('pods')) {
        break;
      }
      for (const o of this.registry.store.list(type.storage, namespace)) {
        if (o.metadata.deletionTimestamp) continue;
        this.#delete(type, o);
      }
      const left = this.registry.store.list(type.storage, namespace);
      if (left.length === 0) continue;
      remaining.set(`${type.resource}${type.group ? `.${type.group}` : ''}`, left.length);
      for (const o of left) for (const f of o.metadata.finalizers ?? []) finalizers.set(f, (finalizers.get(f) ?? 0) + 1);
      if (left.some((o) => (o.metadata.finalizers ?? []).length > 0)) estimate = Math.max(estimate, FINALIZER_ESTIMATE_S);
    }
    return { estimate, remaining, finalizers };
  }

  #delete(type: ResourceType, o: KubeObject): void {
    try {
      this.registry.delete(type, o.metadata.namespace, o.metadata.name, { propagationPolicy: 'Background' }, this.caller);
    } catch (err) {
      if (!(err instanceof ApiError && (err.code === 404 || err.code === 409))) throw err;
    }
  }

  /** The conditions kube-controller-manager writes on a terminating namespace. */
  #conditions(name: string, remaining: Map<string, number>, finalizers: Map<string, number>): void {
    const now = timestamp(this.registry.now());
    const resources = [...remaining].sort(([a], [b]) => a.localeCompare(b));
    const fins = [...finalizers].sort(([a], [b]) => a.localeCompare(b));
    const wanted = [
      { type: 'NamespaceDeletionDiscoveryFailure', status: 'False', reason: 'ResourcesDiscovered', message: 'All resources successfully discovered' },
      { type: 'NamespaceDeletionGroupVersionParsingFailure', status: 'False', reason: 'ParsedGroupVersions', message: 'All legacy kube types successfully parsed' },
      { type: 'NamespaceDeletionContentFailure', status: 'False', reason: 'ContentDeleted', message: 'All content successfully deleted, may be waiting on finalization' },
      resources.length
        ? { type: 'NamespaceContentRemaining', status: 'True', reason: 'SomeResourcesRemain', message: `Some resources are remaining: ${resources.map(([r, n]) => `${r} has ${n} resource instances`).join(', ')}` }
        : { type: 'NamespaceContentRemaining', status: 'False', reason: 'ContentRemoved', message: 'All content successfully removed' },
      fins.length
        ? { type: 'NamespaceFinalizersRemaining', status: 'True', reason: 'SomeFinalizersRemain', message: `Some content in the namespace has finalizers remaining: ${fins.map(([f, n]) => `${f} in ${n} resource instances`).join(', ')}` }
        : { type: 'NamespaceFinalizersRemaining', status: 'False', reason: 'ContentHasNoFinalizers', message: 'All content-preserving finalizers finished' },
    ];
    this.registry.mutate(this.#nsType(), undefined, name, (ns) => {
      const old: any[] = ns.status?.conditions ?? [];
      const conditions = wanted.map((w) => {
        const prev = old.find((c) => c.type === w.type);
        return prev && prev.status === w.status && prev.reason === w.reason && prev.message === w.message ? prev : { ...w, lastTransitionTime: now };
      });
      ns.status = { ...ns.status, phase: 'Terminating', conditions };
    }, this.caller, 'status');
  }
}
