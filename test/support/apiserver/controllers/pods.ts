// What the workload controllers read of pods and make of templates
// (pkg/controller/controller_utils.go).

import type { Registry } from '../registry.ts';
import type { KubeObject } from '../store.ts';

export const isTerminal = (pod: KubeObject): boolean => ['Succeeded', 'Failed'].includes(pod.status?.phase);
/** Neither finished nor being deleted (FilterActivePods). */
export const isActive = (pod: KubeObject): boolean => !isTerminal(pod) && !pod.metadata.deletionTimestamp;
export const isReady = (pod: KubeObject): boolean => (pod.status?.conditions ?? []).some((c: any) => c.type === 'Ready' && c.status === 'True');

/** Ready for at least minReadySeconds (podutil.IsPodAvailable). */
export function isAvailable(pod: KubeObject, minReadySeconds: number, now: number): boolean {
  const ready = (pod.status?.conditions ?? []).find((c: any) => c.type === 'Ready' && c.status === 'True');
  if (!ready) return false;
  return minReadySeconds === 0 || (ready.lastTransitionTime !== undefined && Date.parse(ready.lastTransitionTime) + minReadySeconds * 1000 <= now);
}

export const controllerOf = (o: KubeObject): Record<string, any> | undefined => (o.metadata.ownerReferences ?? []).find((r: any) => r.controller === true);

/** The objects of `storage` in `namespace` whose controller is `owner`. */
export function owned(registry: Registry, storage: string, owner: KubeObject): KubeObject[] {
  return registry.store.list(storage, owner.metadata.namespace).filter((o) => controllerOf(o)?.uid === owner.metadata.uid);
}

export function ownerReference(owner: KubeObject, apiVersion: string, kind: string): Record<string, unknown> {
  return { apiVersion, kind, name: owner.metadata.name, uid: owner.metadata.uid, controller: true, blockOwnerDeletion: true };
}

/** A pod of `template` controlled by `owner` (GetPodFromTemplate). */
export function podFromTemplate(template: any, owner: KubeObject, apiVersion: string, kind: string, extra: { finalizers?: string[] } = {}): KubeObject {
  const meta = template.metadata ?? {};
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      generateName: `${owner.metadata.name}-`,
      ...(meta.labels && { labels: { ...meta.labels } }),
      ...(meta.annotations && { annotations: { ...meta.annotations } }),
      ownerReferences: [ownerReference(owner, apiVersion, kind)],
      ...(extra.finalizers && { finalizers: extra.finalizers }),
    },
    spec: structuredClone(template.spec ?? {}),
  };
}

export const selectorMatches = (selector: any, labels: Record<string, string> | undefined): boolean =>
  Object.entries(selector?.matchLabels ?? {}).every(([k, v]) => labels?.[k] === v);
