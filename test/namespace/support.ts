// What both namespace-deletion tests start from: a namespace of their own with
// a custom resource type of a group of its own (no other file has its CRD),
// the operator's ServiceAccount `op` with its rights there, drainguard's
// cluster-scoped ones, and two Widgets carrying the operator's finalizer.

import { randomBytes } from 'node:crypto';
import type { TestCluster } from '../support/cluster/index.ts';

export interface WidgetNamespace {
  readonly ns: string;
  readonly group: string;
  /** The Widgets' collection path in the namespace. */
  readonly widgets: string;
}

export async function widgetNamespace(c: TestCluster, prefix: string): Promise<WidgetNamespace> {
  const { name: ns } = await c.namespace(prefix);
  const group = `${prefix}-${randomBytes(4).toString('hex')}.example.io`;
  await c.create({
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `widgets.${group}` },
    spec: {
      group,
      scope: 'Namespaced',
      names: { plural: 'widgets', singular: 'widget', kind: 'Widget' },
      versions: [
        {
          name: 'v1',
          served: true,
          storage: true,
          schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
        },
      ],
    },
  });
  await c.waitFor(async () => (await c.api.get(`/apis/${group}/v1`).catch(() => undefined)) !== undefined, 30_000, 'the group served');
  await c.serviceAccount(ns, 'op');
  // The operator's rights in its namespace.
  await c.grant(ns, 'op', 'op', [{ apiGroups: ['*'], resources: ['*'], verbs: ['*'] }]);
  // A ClusterRole, which the namespace's deletion leaves, for what drainguard does there: get this
  // Namespace, and release the guarded Role and RoleBinding in any order (as the chart's does for its own).
  const release = {
    apiGroups: ['rbac.authorization.k8s.io'],
    resources: ['roles', 'rolebindings'],
    resourceNames: ['op'],
    verbs: ['get', 'patch'],
  };
  const namespace = { apiGroups: [''], resources: ['namespaces'], resourceNames: [ns], verbs: ['get'] };
  await c.grant(ns, 'op', `${ns}-namespace`, [namespace, release], { clusterWide: true });
  const widgets = `/apis/${group}/v1/namespaces/${ns}/widgets`;
  for (const name of ['w1', 'w2'])
    await c.api.create(widgets, {
      apiVersion: `${group}/v1`,
      kind: 'Widget',
      metadata: { name, namespace: ns, finalizers: [`${group}/cleanup`] },
    });
  return { ns, group, widgets };
}
