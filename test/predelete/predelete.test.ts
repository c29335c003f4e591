// `drainguard predelete` (the built executable) against the test API server,
// authorised by exactly the RBAC of the pre-delete hook in deploy/helm-hooks.
import { readFileSync } from 'node:fs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parseAllDocuments } from 'yaml';
import { type FakeApiServer, type KubeObject, startApiServer, writeKubeconfig } from '../support/apiserver/index.ts';
import { drainguard, tempDir } from '../support/proc.ts';

const NS = 'operator-system';
const GROUP = 'operator.example.io';
const FIN = 'operator.example.io/cleanup';

const hookObjects = (file: string) =>
  parseAllDocuments(readFileSync(`deploy/helm-hooks/${file}`, 'utf8')).map((d) => d.toJS() as KubeObject & { spec?: any });

function crd(plural: string, kind: string): KubeObject {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${plural}.${GROUP}` },
    spec: {
      group: GROUP,
      scope: 'Cluster',
      names: { plural, singular: kind.toLowerCase(), kind },
      versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } }],
    },
  } as KubeObject;
}

/** A cluster like the one the hook runs in: the CRDs, their objects held by the operator's finalizer, the hook's RBAC, a ready operator pod. */
async function cluster(): Promise<{ api: FakeApiServer; kubeconfig: string }> {
  const api = await startApiServer({ namespaces: ['default', NS] });
  api.create(crd('apiservers', 'APIServer'));
  api.create(crd('installations', 'Installation'));
  api.create({ apiVersion: `${GROUP}/v1`, kind: 'APIServer', metadata: { name: 'default', finalizers: [FIN] } });
  api.create({ apiVersion: `${GROUP}/v1`, kind: 'Installation', metadata: { name: 'default', finalizers: [FIN] } });
  api.create({ apiVersion: `${GROUP}/v1`, kind: 'Installation', metadata: { name: 'secondary', finalizers: [FIN] } });
  api.create({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'example-operator-abc', namespace: NS, labels: { 'app.kubernetes.io/name': 'example-operator' } },
    spec: { nodeName: 'node-1', containers: [{ name: 'manager', image: 'x' }] },
    status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] },
  } as KubeObject);
  for (const o of hookObjects('predelete.yaml')) if (o.kind !== 'Job') api.create(o);
  const kubeconfig = writeKubeconfig(tempDir(), api, api.tokenFor(NS, 'drainguard-predelete'));
  return { api, kubeconfig };
}

/** The arguments of the hook's own Job, so the test runs what a chart would. */
const jobArgs = (): string[] => hookObjects('predelete.yaml').find((o) => o.kind === 'Job')!.spec.template.spec.containers[0].args;

/** The operator's part: once an object is being deleted, finish its cleanup and drop the finalizer. */
function operator(api: FakeApiServer, resource: string): () => void {
  const onChange = () => {
    for (const o of api.list(`${GROUP}/v1`, resource)) {
      if (o.metadata.deletionTimestamp && o.metadata.finalizers?.includes(FIN)) api.setFinalizers(`${GROUP}/v1`, resource, undefined, o.metadata.name!, []);
    }
  };
  api.on('request', onChange);
  return () => api.off('request', onChange);
}

test("the hook's Job deletes stage by stage, waits for the operator's finalizers, and exits 0 when all are gone", async () => {
  const { api, kubeconfig } = await cluster();
  const stopA = operator(api, 'apiservers');
  const stopI = operator(api, 'installations');
  const p = drainguard(jobArgs(), { KUBECONFIG: kubeconfig });
  assert.equal((await p.exit(20_000)).code, 0, p.stderr.join('\n'));
  assert.equal(api.list(`${GROUP}/v1`, 'apiservers'), []);
  assert.equal(api.list(`${GROUP}/v1`, 'installations'), []);
  const deletes = api.requestsMatching((r) => r.method === 'DELETE');
  const apiServerGone = p.stdout.findIndex((l) => /apiserver\.operator\.example\.io\/default gone/.test(l));
  const installationDeleted = p.stdout.findIndex((l) => /stage 2\/2: installation\.operator\.example\.io\/default deleted/.test(l));
  assert.ok(apiServerGone >= 0 && installationDeleted > apiServerGone, `stage 2 after stage 1 is gone:\n${p.stdout.join('\n')}`);
  assert.equal(deletes.map((r) => r.resource), ['apiservers', 'installations', 'installations']);
  assert.ok(deletes.every((r) => r.status === 200 && r.user?.includes('drainguard-predelete')), 'as the hook ServiceAccount');
  assert.equal(p.stdout.at(-1), 'all gone');
  stopA();
  stopI();
  await api.close();
});

test('a finalizer nobody removes: exit 1 at the timeout, naming what is left and what holds it', async () => {
  const { api, kubeconfig } = await cluster();
  const p = drainguard(['predelete', '--timeout', '1s', '-n', NS, 'installations.operator.example.io'], { KUBECONFIG: kubeconfig });
  assert.equal((await p.exit()).code, 1);
  const err = p.stderr.join('\n');
  assert.match(err, /timed out with 2 left/);
  assert.match(err, /installation\.operator\.example\.io\/default: finalizers operator\.example\.io\/cleanup/);
  assert.match(err, /installation\.operator\.example\.io\/secondary: finalizers operator\.example\.io\/cleanup/);
  assert.ok(p.stdout.some((l) => /waiting for installation\.operator\.example\.io\/default: held by finalizers operator\.example\.io\/cleanup/.test(l)));
  assert.ok(api.get(`${GROUP}/v1`, 'installations', undefined, 'default')!.metadata.deletionTimestamp);
  await api.close();
});

test('a type the API server does not know: exit 2 with a clear message, nothing deleted', async () => {
  const { api, kubeconfig } = await cluster();
  const p = drainguard(['predelete', 'widgets.operator.example.io', 'installations.operator.example.io/default'], { KUBECONFIG: kubeconfig });
  assert.equal((await p.exit()).code, 2);
  assert.match(p.stderr.join('\n'), /has no resource type "widgets\.operator\.example\.io" \(is its CustomResourceDefinition installed\?\)/);
  assert.equal(api.requestsMatching((r) => r.method === 'DELETE'), []);
  const bad = drainguard(['predelete', 'installations/Not_A_Name'], { KUBECONFIG: kubeconfig });
  assert.equal((await bad.exit()).code, 2);
  assert.match(bad.stderr.join('\n'), /expected an object name/);
  await api.close();
});

test('--require-ready: without a ready operator pod nothing is deleted', async () => {
  const { api, kubeconfig } = await cluster();
  api.delete('v1', 'pods', NS, 'example-operator-abc', { gracePeriodSeconds: 0 });
  const p = drainguard(jobArgs(), { KUBECONFIG: kubeconfig });
  assert.equal((await p.exit()).code, 1);
  assert.match(p.stderr.join('\n'), /no ready pod matches "app\.kubernetes\.io\/name=example-operator" in namespace operator-system/);
  assert.equal(api.requestsMatching((r) => r.method === 'DELETE'), []);
  await api.close();
});

test('short names, kinds and all of a type resolve through discovery; objects already gone are fine', async () => {
  const { api } = await cluster();
  const kubeconfig = writeKubeconfig(tempDir(), api, api.adminToken);
  api.setFinalizers(`${GROUP}/v1`, 'installations', undefined, 'secondary', []);
  const stop = operator(api, 'installations');
  const p = drainguard(['predelete', 'Installation/default', 'installation.operator.example.io/secondary', 'installations.v1.operator.example.io/missing'], {
    KUBECONFIG: kubeconfig,
  });
  assert.equal((await p.exit()).code, 0, p.stderr.join('\n'));
  assert.ok(p.stdout.includes('installation.operator.example.io/missing already gone'));
  assert.equal(api.list(`${GROUP}/v1`, 'installations'), []);
  stop();
  await api.close();
});

test.run();
