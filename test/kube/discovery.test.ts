// Which version serves a resource, against the real API server: a group whose
// CRDs are served in different versions prefers the highest (v1), and a kind
// served only in v1alpha1 is not in the preferred version's list. The hold,
// the namespace step and predelete find it there all the same
// (External Secrets' PushSecret is such a kind).
import { randomBytes } from 'node:crypto';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { KubeClient } from '../../src/kube/client.ts';
import { loadApiAccess } from '../../src/kube/config.ts';
import { resolveResource } from '../../src/kube/discovery.ts';
import { useCluster } from '../support/cluster/index.ts';
import { tempDir } from '../support/proc.ts';

const cluster = await useCluster();
const group = `discovery-${randomBytes(4).toString('hex')}.example.io`;
const crd = (plural: string, kind: string, version: string) => ({
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: `${plural}.${group}` },
  spec: {
    group,
    scope: 'Namespaced',
    names: { plural, singular: kind.toLowerCase(), kind },
    versions: [
      {
        name: version,
        served: true,
        storage: true,
        schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
      },
    ],
  },
});
await cluster.create(crd('stores', 'Store', 'v1'));
await cluster.create(crd('pushes', 'Push', 'v1alpha1'));
const listed = async (version: string) =>
  ((await cluster.api.get(`/apis/${group}/${version}`).catch(() => undefined)) as any)?.resources?.map((r: any) => r.name) ?? [];
await cluster.waitFor(async () => (await listed('v1')).length > 0 && (await listed('v1alpha1')).length > 0, 30_000, 'both versions served');

const access = await loadApiAccess({ KUBECONFIG: cluster.adminKubeconfig }, { home: tempDir() });
const client = new KubeClient({ access });

test('the group prefers v1, whose list has no pushes: the control for what follows', async () => {
  const served = (await cluster.api.get(`/apis/${group}`)) as any;
  assert.is(served.preferredVersion.version, 'v1');
  assert.equal(await listed('v1'), ['stores']);
});

test('a resource served only in a version the group does not prefer is found in that version', async () => {
  const ref = await resolveResource(client, group, 'pushes');
  assert.equal(ref, { group, version: 'v1alpha1', resource: 'pushes', kind: 'Push', namespaced: true });
  assert.is((await resolveResource(client, group, 'stores'))?.version, 'v1');
});

test('a resource no version serves, and a group that is not there: undefined', async () => {
  assert.is(await resolveResource(client, group, 'missing'), undefined);
  assert.is(await resolveResource(client, `absent-${group}`, 'pushes'), undefined);
});

test.run();
