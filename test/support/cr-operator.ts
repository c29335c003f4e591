// The cr-operator fixture (test/uninstall/fixtures/cr-operator.ts) as the kubelet
// stand-in runs it, and the CRDs it finalizes (APIServer and Installation,
// cluster-scoped), for the files that uninstall it: test/uninstall and test/hold.

import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parse } from 'yaml';
import type { KubeletCluster } from './kubelet/cluster.ts';
import type { Runner } from './kubelet/index.ts';
import { operatorImage } from './kubelet/runners.ts';

export const CR_OPERATOR_IMAGE = 'example.com/cr-operator';
export const CR_PLURALS = ['apiservers', 'installations'] as const;
const CR_OPERATOR = join(import.meta.dirname, '../uninstall/fixtures/cr-operator.ts');

/** The fixture as the operator image's /manager for the CRDs of `group`; its API access from the pod's kubeconfig. */
export function crOperatorImage(env: NodeJS.ProcessEnv = {}, group?: string): Runner {
  const inner = operatorImage(CR_OPERATOR, env);
  return (run) => {
    const launch = inner(run);
    if (!launch) return launch;
    const kubeconfig = parse(readFileSync(run.env.KUBECONFIG!, 'utf8'));
    const ca = join(dirname(run.env.KUBECONFIG!), 'ca.crt');
    writeFileSync(ca, Buffer.from(kubeconfig.clusters[0].cluster['certificate-authority-data'], 'base64'));
    return {
      ...launch,
      env: {
        ...launch.env,
        FIXTURE_API: kubeconfig.clusters[0].cluster.server,
        FIXTURE_TOKEN: kubeconfig.users[0].user.token,
        FIXTURE_CA: ca,
        FIXTURE_NS: run.pod.metadata.namespace,
        ...(group && { FIXTURE_GROUP: group }),
      },
    };
  };
}

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
