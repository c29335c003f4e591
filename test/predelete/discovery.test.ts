// `drainguard predelete` (the built executable) on a control plane where one
// aggregated API is down, as a metrics server often is: its APIService names a
// Service with no endpoints, so the API server lists its group and answers its
// discovery 503. kubectl and Helm leave such a group out with a warning; so
// does predelete, and the uninstall of the operator's types goes on. A control
// plane of this file's own: the namespace controller and the garbage collector
// of a shared one would stall on that group while the APIService is there.
import { randomBytes } from 'node:crypto';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { privateCluster, resourcePath } from '../support/cluster/index.ts';
import { drainguard } from '../support/proc.ts';

const { cluster } = await privateCluster();
const api = cluster.api;
const SUFFIX = randomBytes(4).toString('hex');
const GROUP = `operator-${SUFFIX}.example.io`;
const DOWN = `metrics-${SUFFIX}.example.io`;
const V1 = `${GROUP}/v1`;

await cluster.create({
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: `widgets.${GROUP}` },
  spec: {
    group: GROUP,
    scope: 'Cluster',
    names: { plural: 'widgets', singular: 'widget', kind: 'Widget' },
    versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object' } } }],
  },
});
await cluster.create({
  apiVersion: 'apiregistration.k8s.io/v1',
  kind: 'APIService',
  metadata: { name: `v1.${DOWN}` },
  spec: {
    group: DOWN,
    version: 'v1',
    groupPriorityMinimum: 1000,
    versionPriority: 15,
    insecureSkipTLSVerify: true,
    service: { namespace: 'default', name: 'nowhere', port: 443 },
  },
});
await cluster.waitFor(
  async () => (await api.request('GET', resourcePath(V1, 'widgets'))).status === 200,
  30_000,
  `the API group ${V1} served`,
);
await cluster.waitFor(
  async () =>
    (await api.request('GET', `/apis/${DOWN}/v1`)).status === 503 &&
    (await api.request('GET', '/apis')).body.groups.some((g: { name: string }) => g.name === DOWN),
  30_000,
  `${DOWN} listed in /apis and its discovery answering 503`,
);

test("another group's discovery answering 503: left out with a warning, the operator's types deleted", async () => {
  await cluster.create({ apiVersion: V1, kind: 'Widget', metadata: { name: 'default' } });
  const p = drainguard(['predelete', '--timeout', '20s', `widgets.${GROUP}`], { KUBECONFIG: cluster.adminKubeconfig });
  assert.equal((await p.exit()).code, 0, p.stderr.join('\n'));
  assert.equal(await api.list(resourcePath(V1, 'widgets')), []);
  assert.ok(
    p.stderr.some((l) => l.includes('an API group is left out of discovery') && l.includes(`${DOWN}/v1`) && l.includes('503')),
    p.stderr.join('\n'),
  );
  assert.equal(p.stdout.at(-1), 'all gone');
});

test('a type only that group could serve: exit 1, DG_PREDELETE_DISCOVERY, naming the group', async () => {
  const p = drainguard(['predelete', `nodemetrics.${DOWN}`], { KUBECONFIG: cluster.adminKubeconfig });
  assert.equal((await p.exit()).code, 1, p.stderr.join('\n'));
  const stderr = p.stderr.join('\n');
  assert.ok(
    new RegExp(`DG_PREDELETE_DISCOVERY: .*could not read ${DOWN.replaceAll('.', '\\.')}/v1 \\(503: service unavailable\\)`).test(stderr),
    stderr,
  );
});

test.run();
