// `drainguard predelete` (the built executable) against the real control plane
// (test/support/cluster): real CustomResourceDefinitions and custom resources
// held by the operator's finalizer, authorised by exactly the RBAC of the
// pre-delete hook in deploy/helm-hooks, applied to the real API server. Where a
// test counts the hook's requests it goes through the fault proxy, which
// injects nothing here and only records them.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parseAllDocuments } from 'yaml';
import { pathOf, resourcePath, useCluster } from '../support/cluster/index.ts';
import { startFaultProxy } from '../support/faultproxy/index.ts';
import { drainguard } from '../support/proc.ts';

const cluster = await useCluster();
const api = cluster.api;
// Cluster-scoped names unique to this file: the shared control plane has other tests' CRDs and RBAC.
const SUFFIX = randomBytes(4).toString('hex');
const GROUP = `operator-${SUFFIX}.example.io`;
const FIN = `${GROUP}/cleanup`;
const G = GROUP.replaceAll('.', '\\.');
const V1 = `${GROUP}/v1`;
/** The hook's names in namespace `ns` (its ClusterRole and ClusterRoleBinding are cluster-scoped: one per test). */
const hookName = (ns: string) => `drainguard-predelete-${ns}`;

/** The hook's objects from deploy/helm-hooks, for this namespace, group and names. */
const hookObjects = (ns: string) =>
  parseAllDocuments(
    readFileSync('deploy/helm-hooks/predelete.yaml', 'utf8')
      .replaceAll('operator-system', ns)
      .replaceAll('operator.example.io', GROUP)
      .replaceAll('drainguard-predelete', hookName(ns)),
  ).map((d) => d.toJS() as any);

function crd(plural: string, kind: string): any {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${plural}.${GROUP}` },
    spec: {
      group: GROUP,
      scope: 'Cluster',
      names: { plural, singular: kind.toLowerCase(), kind },
      versions: [
        {
          name: 'v1',
          served: true,
          storage: true,
          schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
        },
      ],
    },
  };
}

// The CRDs once for the file; established and served before any test runs.
await cluster.create(crd('apiservers', 'APIServer'));
await cluster.create(crd('installations', 'Installation'));
// Discovery lists a new type before its storage is ready: until then (1.37) a list answers 429 "storage is (re)initializing".
await cluster.waitFor(
  async () => {
    const r = await api.request('GET', `/apis/${V1}`);
    if (r.status !== 200 || r.body.resources?.length !== 2) return false;
    const lists = await Promise.all(['apiservers', 'installations'].map((plural) => api.request('GET', resourcePath(V1, plural))));
    return lists.every((l) => l.status === 200);
  },
  30_000,
  `the API group ${V1} served`,
);

const TYPES = ['apiservers', 'installations'];

/** No custom resource of this file's types is left (a test before may have left some terminating). */
async function noCustomResources(): Promise<void> {
  for (const plural of TYPES) {
    for (const o of await api.list(resourcePath(V1, plural))) {
      const path = resourcePath(V1, plural, undefined, o.metadata.name);
      await api.patch(path, { metadata: { finalizers: null } });
      await api.delete(path);
    }
  }
  await cluster.waitFor(
    async () => (await Promise.all(TYPES.map((p) => api.list(resourcePath(V1, p))))).every((l) => l.length === 0),
    15_000,
    'no custom resources left',
  );
}

/** A cluster like the one the hook runs in: the CRDs, their objects held by the operator's finalizer, the hook's RBAC, a ready operator pod. */
async function setup(): Promise<{ ns: string; kubeconfig: string; token: string }> {
  await noCustomResources();
  const { name: ns } = await cluster.namespace('predelete');
  await cluster.create({ apiVersion: V1, kind: 'APIServer', metadata: { name: 'default', finalizers: [FIN] } });
  await cluster.create({ apiVersion: V1, kind: 'Installation', metadata: { name: 'default', finalizers: [FIN] } });
  await cluster.create({ apiVersion: V1, kind: 'Installation', metadata: { name: 'secondary', finalizers: [FIN] } });
  await cluster.create({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'example-operator-abc', namespace: ns, labels: { 'app.kubernetes.io/name': 'example-operator' } },
    spec: { nodeName: await cluster.node(), containers: [{ name: 'manager', image: 'x' }] },
  });
  // What the kubelet would report (there is none): the operator's container is running and ready.
  await api.patch(resourcePath('v1', 'pods', ns, 'example-operator-abc') + '/status', {
    status: {
      phase: 'Running',
      conditions: [
        { type: 'Ready', status: 'True' },
        { type: 'ContainersReady', status: 'True' },
      ],
    },
  });
  for (const o of hookObjects(ns)) if (o.kind !== 'Job') await cluster.create(o);
  const token = await cluster.token(ns, hookName(ns));
  return { ns, kubeconfig: cluster.kubeconfigFor(token), token };
}

/** The arguments of the hook's own Job, so the test runs what a chart would. */
const jobArgs = (ns: string): string[] => hookObjects(ns).find((o) => o.kind === 'Job')!.spec.template.spec.containers[0].args;

/** The operator's part: once an object is being deleted, finish its cleanup and drop the finalizer (seen by watch). */
function operator(plural: string): () => void {
  return api.watch(resourcePath(V1, plural), (e) => {
    const o = e.object;
    if (e.type !== 'DELETED' && o?.metadata?.deletionTimestamp && o.metadata.finalizers?.includes(FIN)) {
      void api
        .patch(pathOf(o, plural), { metadata: { finalizers: o.metadata.finalizers.filter((f: string) => f !== FIN) } })
        .catch(() => {});
    }
  });
}

test("the hook's Job deletes stage by stage, waits for the operator's finalizers, and exits 0 when all are gone", async () => {
  const { ns, token } = await setup();
  const proxy = await startFaultProxy(cluster);
  const stopA = operator('apiservers');
  const stopI = operator('installations');
  try {
    const p = drainguard(jobArgs(ns), { KUBECONFIG: cluster.kubeconfigFor(token, { server: proxy.url }), DRAINGUARD_LOG_LEVEL: 'debug' });
    // A normal run is about 32 requests, 22 of them discovery. Under a load of 15 on 2 cores the hook
    // once printed nothing in 20 s after 143 requests, all answered: the open ones are named if it recurs.
    const exit = await p.exit(60_000).catch((err: Error) => {
      const open = proxy.requests.filter((r) => !r.done).map((r) => `${r.method} ${r.path}?${r.query}`);
      throw new Error(`${err.message}\nrequests still open at the proxy: ${JSON.stringify(open)} of ${proxy.requests.length}`);
    });
    assert.equal(exit.code, 0, p.stderr.join('\n'));
    if (process.env.TEST_VERBOSE)
      console.log(
        `  ${proxy.requests.length} requests, ${proxy.requests.filter((r) => r.path.startsWith('/api') && !r.resource).length} of them discovery`,
      );
    assert.equal(await api.list(resourcePath(V1, 'apiservers')), []);
    assert.equal(await api.list(resourcePath(V1, 'installations')), []);
    const deletes = proxy.requests.filter((r) => r.method === 'DELETE');
    const apiServerGone = p.stdout.findIndex((l) => new RegExp(`apiserver\\.${G}/default gone`).test(l));
    const installationDeleted = p.stdout.findIndex((l) => new RegExp(`stage 2/2: installation\\.${G}/default deleted`).test(l));
    assert.ok(apiServerGone >= 0 && installationDeleted > apiServerGone, `stage 2 after stage 1 is gone:\n${p.stdout.join('\n')}`);
    assert.equal(
      deletes.map((r) => r.resource),
      ['apiservers', 'installations', 'installations'],
    );
    assert.ok(
      deletes.every((r) => r.status === 200 && r.user?.includes(hookName(ns))),
      'as the hook ServiceAccount',
    );
    assert.equal(p.stdout.at(-1), 'all gone');
  } finally {
    stopA();
    stopI();
    await proxy.close();
  }
});

test('a finalizer nobody removes: exit 1 at the timeout, naming what is left and what holds it', async () => {
  const { ns, kubeconfig } = await setup();
  const p = drainguard(['predelete', '--timeout', '1s', '-n', ns, `installations.${GROUP}`], { KUBECONFIG: kubeconfig });
  assert.equal((await p.exit()).code, 1);
  const err = p.stderr.join('\n');
  assert.match(err, /timed out with 2 left/);
  assert.match(err, new RegExp(`installation\\.${G}/default: finalizers ${G}/cleanup`));
  assert.match(err, new RegExp(`installation\\.${G}/secondary: finalizers ${G}/cleanup`));
  assert.ok(p.stdout.some((l) => new RegExp(`waiting for installation\\.${G}/default: held by finalizers ${G}/cleanup`).test(l)));
  assert.ok((await api.get(resourcePath(V1, 'installations', undefined, 'default'))).metadata.deletionTimestamp);
});

test('a type the API server does not know: exit 2 with a clear message, nothing deleted', async () => {
  const { kubeconfig, token } = await setup();
  const proxy = await startFaultProxy(cluster);
  try {
    // A type no file of the run serves in any group (the control plane is shared: another group's `widgets` would be named).
    const p = drainguard(['predelete', `nosuchthings.${GROUP}`, `installations.${GROUP}/default`], {
      KUBECONFIG: cluster.kubeconfigFor(token, { server: proxy.url }),
    });
    assert.equal((await p.exit()).code, 2, p.stderr.join('\n'));
    assert.match(
      p.stderr.join('\n'),
      new RegExp(`has no resource type "nosuchthings\\.${G}" \\(is its CustomResourceDefinition installed\\?\\)`),
    );
    assert.equal(
      proxy.requests.filter((r) => r.method === 'DELETE'),
      [],
    );
    assert.ok(
      (await api.get(resourcePath(V1, 'installations', undefined, 'default'))).metadata.deletionTimestamp === undefined,
      'nothing deleted',
    );
  } finally {
    await proxy.close();
  }
  const bad = drainguard(['predelete', 'installations/Not_A_Name'], { KUBECONFIG: kubeconfig });
  assert.equal((await bad.exit()).code, 2);
  assert.match(bad.stderr.join('\n'), /expected an object name/);
});

test('--require-ready: without a ready operator pod nothing is deleted', async () => {
  const { ns, token } = await setup();
  await api.delete(resourcePath('v1', 'pods', ns, 'example-operator-abc'), { gracePeriodSeconds: 0 });
  const proxy = await startFaultProxy(cluster);
  try {
    const p = drainguard(jobArgs(ns), { KUBECONFIG: cluster.kubeconfigFor(token, { server: proxy.url }) });
    assert.equal((await p.exit()).code, 1);
    assert.match(p.stderr.join('\n'), new RegExp(`no ready pod matches "app\\.kubernetes\\.io/name=example-operator" in namespace ${ns}`));
    assert.equal(
      proxy.requests.filter((r) => r.method === 'DELETE'),
      [],
    );
  } finally {
    await proxy.close();
  }
});

test('short names, kinds and all of a type resolve through discovery; objects already gone are fine', async () => {
  await setup();
  await api.patch(resourcePath(V1, 'installations', undefined, 'secondary'), { metadata: { finalizers: null } });
  const stop = operator('installations');
  try {
    // The kind with its group: other files of the shared cluster serve an Installation kind too, so the bare kind can be ambiguous.
    const p = drainguard(
      ['predelete', `Installation.${GROUP}/default`, `installation.${GROUP}/secondary`, `installations.v1.${GROUP}/missing`],
      {
        KUBECONFIG: cluster.adminKubeconfig,
      },
    );
    assert.equal((await p.exit()).code, 0, p.stderr.join('\n'));
    assert.ok(p.stdout.includes(`installation.${GROUP}/missing already gone`));
    assert.equal(await api.list(resourcePath(V1, 'installations')), []);
  } finally {
    stop();
  }
});

test.run();
