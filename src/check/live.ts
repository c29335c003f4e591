// `drainguard check --deployment NAMESPACE/NAME`: the manifests a check needs,
// read from the API instead of files: the Deployment, every RBAC object and
// ServiceAccount that may grant to it or be guarded by it (Roles and
// RoleBindings of every namespace), the admission
// policies that may hold it to finalizers, and the CRDs of the kinds it holds.

import { GUARD_KINDS, POLICY_KINDS } from '../config/guard-kinds.ts';
import { parseHoldList } from '../config/hold-list.ts';
import type { KubeClient } from '../kube/client.ts';
import { isStatus } from '../kube/errors.ts';
import { RESOURCES, apiVersion, pathOf } from '../kube/objects.ts';
import type { Manifest } from './finding.ts';
import { placementOf, podSpecOf, settingOf } from './pod.ts';

interface List {
  readonly items: Omit<Manifest, 'apiVersion' | 'kind'>[];
}

export async function liveManifests(client: KubeClient, namespace: string, name: string): Promise<Manifest[]> {
  const deployment = await client.request<Manifest>('GET', `/apis/apps/v1/namespaces/${namespace}/deployments/${name}`, {
    what: `deployment/${namespace}/${name}`,
  });
  // The guarded kinds (the RBAC that may grant to the Deployment) and the admission policy's;
  // Roles and RoleBindings in every namespace, where an operator is bound too (leader election in kube-system).
  const kinds = [...GUARD_KINDS, ...POLICY_KINDS].map((kind) => RESOURCES[kind]);
  const everywhere = new Set(['role', 'rolebinding']);
  const read = await Promise.all(
    kinds.map((r, i) =>
      client.request<List>('GET', pathOf(r, everywhere.has([...GUARD_KINDS, ...POLICY_KINDS][i]!) ? undefined : namespace)),
    ),
  );
  const object: Manifest = { ...deployment, apiVersion: 'apps/v1', kind: 'Deployment' };
  // A list's items carry no apiVersion and kind.
  return [
    object,
    ...read.flatMap((list, i) => list.items.map((o) => ({ ...o, apiVersion: apiVersion(kinds[i]!), kind: kinds[i]!.kind }) as Manifest)),
    ...(await heldDefinitions(client, object)),
  ];
}

/** The CRDs of the kinds the Deployment's drainguard holds: those that exist (a missing one is a finding). */
async function heldDefinitions(client: KubeClient, deployment: Manifest): Promise<Manifest[]> {
  const pod = podSpecOf(deployment);
  const supervisor = pod && placementOf(pod)?.supervisor;
  let kinds: { plural: string; group: string }[] = [];
  try {
    kinds = supervisor ? parseHoldList(settingOf(supervisor, 'hold') ?? '', 'DRAINGUARD_HOLD') : [];
  } catch {
    // hold-invalid, found by the analysis.
  }
  const found = await Promise.all(
    kinds.map(async ({ plural, group }) => {
      try {
        const crd = await client.request<Omit<Manifest, 'apiVersion' | 'kind'>>(
          'GET',
          `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${plural}.${group}`,
        );
        return [{ ...crd, apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition' } as Manifest];
      } catch (err) {
        if (isStatus(err, 404)) return [];
        throw err;
      }
    }),
  );
  return found.flat();
}
