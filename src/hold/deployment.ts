// The Deployment above this pod: the Pod's controller (a ReplicaSet), then
// the ReplicaSet's controller. Two reads, once at start; their names are what
// the hold's RBAC grants (get on replicasets, get and patch on the Deployment).

import type { KubeClient } from '../kube/client.ts';
import { type KubeObject, RESOURCES } from '../kube/objects.ts';
import type { PodRef } from '../kube/pod.ts';

export interface DeploymentTarget {
  readonly kind: 'deployment';
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
}

export type FoundDeployment = { readonly found: DeploymentTarget } | { readonly none: string };

const controllerOf = (o: KubeObject) => (o.metadata.ownerReferences ?? []).find((r) => r.controller === true);

/** Throws what the API said (unreachable, forbidden): the caller tries again. */
export async function findDeployment(client: KubeClient, pod: PodRef, signal?: AbortSignal): Promise<FoundDeployment> {
  const self = await client.get({ ...RESOURCES.pod, namespace: pod.namespace, name: pod.name }, { signal });
  const rsRef = controllerOf(self);
  if (rsRef?.kind !== 'ReplicaSet' || rsRef.apiVersion !== 'apps/v1')
    return { none: rsRef ? `this pod is controlled by ${rsRef.kind} ${rsRef.name}` : 'this pod has no controller' };
  const rs = await client.get({ ...RESOURCES.replicaset, namespace: pod.namespace, name: rsRef.name }, { signal });
  const dRef = controllerOf(rs);
  if (dRef?.kind !== 'Deployment' || dRef.apiVersion !== 'apps/v1')
    return {
      none: `its ReplicaSet ${rsRef.name} is ${dRef ? `controlled by ${dRef.kind} ${dRef.name}` : 'not controlled by a Deployment'}`,
    };
  return { found: { kind: 'deployment', namespace: pod.namespace, name: dRef.name, uid: dRef.uid } };
}
