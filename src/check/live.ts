// `drainguard check --deployment NAMESPACE/NAME`: the manifests a check needs,
// read from the API instead of files: the Deployment, and every RBAC object and
// ServiceAccount that may grant to it or be guarded by it.

import type { KubeClient } from '../kube/client.ts';
import type { Manifest } from './finding.ts';

const RBAC = '/apis/rbac.authorization.k8s.io/v1';

interface List {
  readonly items: Omit<Manifest, 'apiVersion' | 'kind'>[];
}

export async function liveManifests(client: KubeClient, namespace: string, name: string): Promise<Manifest[]> {
  const deployment = await client.request<Manifest>('GET', `/apis/apps/v1/namespaces/${namespace}/deployments/${name}`, { what: `deployment/${namespace}/${name}` });
  const lists: [string, string, string][] = [
    ['rbac.authorization.k8s.io/v1', 'ClusterRole', `${RBAC}/clusterroles`],
    ['rbac.authorization.k8s.io/v1', 'ClusterRoleBinding', `${RBAC}/clusterrolebindings`],
    ['rbac.authorization.k8s.io/v1', 'Role', `${RBAC}/namespaces/${namespace}/roles`],
    ['rbac.authorization.k8s.io/v1', 'RoleBinding', `${RBAC}/namespaces/${namespace}/rolebindings`],
    ['v1', 'ServiceAccount', `/api/v1/namespaces/${namespace}/serviceaccounts`],
  ];
  const read = await Promise.all(lists.map(([, , path]) => client.request<List>('GET', path)));
  // A list's items carry no apiVersion and kind.
  return [{ ...deployment, apiVersion: 'apps/v1', kind: 'Deployment' }, ...read.flatMap((list, i) => list.items.map((o) => ({ ...o, apiVersion: lists[i]![0], kind: lists[i]![1] }) as Manifest))];
}
