// The cr-operator fixture (test/fixtures/cr-operator.ts), which the kubelet stand-in
// runs as an operator image's /manager (runners.ts `operatorImage`) or as the example
// chart's image (test/helm/support/example.ts), and the CRDs it finalizes (APIServer
// and Installation, cluster-scoped) for test/scenarios/uninstall, in a group of its own.

import { join } from 'node:path';
import type { KubeletCluster } from './kubelet/cluster.ts';

export const CR_OPERATOR = join(import.meta.dirname, '../fixtures/cr-operator.ts');
export const CR_PLURALS = ['apiservers', 'installations'] as const;

/** Creates the APIServer and Installation CRDs of `group` and waits until they are served. */
export async function createCrds(c: KubeletCluster, group: string): Promise<void> {
  for (const [plural, kind] of [
    ['apiservers', 'APIServer'],
    ['installations', 'Installation'],
  ] as const) {
    await c.cluster.create({
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: `${plural}.${group}` },
      spec: {
        group,
        scope: 'Cluster',
        names: { plural, singular: kind.toLowerCase(), kind },
        versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object' } } }],
      },
    });
  }
  for (const plural of CR_PLURALS) {
    await c.cluster.waitFor(
      async () => (await c.api.call('GET', `/apis/${group}/v1/${plural}`)).status === 200,
      20_000,
      `the ${plural} CRD served`,
    );
  }
}

/** Deletes them and waits until they are gone (a CRD keeps a finalizer of its own for a moment). */
export async function deleteCrds(c: KubeletCluster, group: string): Promise<void> {
  for (const plural of CR_PLURALS) {
    await c.api.call('DELETE', `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${plural}.${group}`);
    await c.poll(
      `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${plural}.${group}`,
      (_b, s) => s === 404,
      30_000,
      `the ${plural} CRD gone`,
    );
  }
}

/** Removes the custom resources' finalizers and deletes them: what a test leaves stuck. */
export async function stripCustomResources(c: KubeletCluster, group: string): Promise<void> {
  for (const plural of CR_PLURALS) {
    const list = await c.api.call('GET', `/apis/${group}/v1/${plural}`);
    for (const o of list.body?.items ?? []) {
      await c.api.call(
        'PATCH',
        `/apis/${group}/v1/${plural}/${o.metadata.name}`,
        { metadata: { finalizers: null } },
        'application/merge-patch+json',
      );
      await c.api.call('DELETE', `/apis/${group}/v1/${plural}/${o.metadata.name}`);
    }
  }
}
