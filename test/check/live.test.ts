// `drainguard check --deployment NAMESPACE/NAME` against the real API server:
// the wrap example (deploy/rendered/wrap.yaml, its names made unique) created
// as it is is clean; the same Deployment with its drainguard RBAC short of a
// guarded name gets that finding, and a RoleBinding of its ServiceAccount in
// another namespace is found there. No pod needs to run: only objects are read.

import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { type KubeObject, rendered } from '../deploy/support/manifests.ts';
import { type TestCluster, useCluster } from '../support/cluster/index.ts';
import { EXE } from '../support/proc.ts';

const RBAC = '/apis/rbac.authorization.k8s.io/v1';

/** The rendered example's objects, all but its Namespace, renamed (each key to its value) and created. */
async function createExample(cluster: TestCluster, example: string, names: Record<string, string>): Promise<void> {
  let text = JSON.stringify(rendered(example).filter((o) => o.kind !== 'Namespace'));
  for (const [from, to] of Object.entries(names)) text = text.replaceAll(from, to);
  for (const o of JSON.parse(text) as KubeObject[]) await cluster.create(o);
}

/** `drainguard check ARGS --deployment DEPLOYMENT` as the cluster admin. */
const runCheck = (cluster: TestCluster, deployment: string, args = ['-o', 'json']) =>
  spawnSync(EXE, ['check', ...args, '--deployment', deployment], {
    encoding: 'utf8',
    timeout: 30_000,
    env: { KUBECONFIG: cluster.adminKubeconfig },
  });

test('a live Deployment: clean as created, then the finding once its RBAC lacks a guarded name', async () => {
  const cluster = await useCluster();
  const ns = (await cluster.namespace('check')).name;
  const name = `eo-${randomBytes(3).toString('hex')}`;
  await createExample(cluster, 'wrap', { 'example-system': ns, 'example-operator': name });
  const check = () => runCheck(cluster, `${ns}/${name}`);

  const clean = check();
  assert.equal(clean.status, 0, clean.stdout + clean.stderr);
  assert.equal(JSON.parse(clean.stdout).findings, []);

  const role = `${RBAC}/clusterroles/drainguard:${ns}:${name}`;
  const current = await cluster.api.get(role);
  current.rules[0].resourceNames = current.rules[0].resourceNames.filter((n: string) => n !== name);
  await cluster.api.patch(role, { rules: current.rules });
  const broken = check();
  assert.equal(broken.status, 1, broken.stdout + broken.stderr);
  const findings = JSON.parse(broken.stdout).findings as { code: string; object: string; fix: string }[];
  assert.equal(
    findings.map((f) => `${f.code} ${f.object}`),
    [`guard-not-covered Deployment/${ns}/${name}`],
  );
  assert.match(findings[0]!.fix, `resources: [clusterroles], verbs: [get, patch], resourceNames: [${name}]`);

  // A RoleBinding of the operator's ServiceAccount in another namespace, which the guard leaves out.
  const other = (await cluster.namespace('check-other')).name;
  await cluster.create({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: { name: `${name}-leader`, namespace: other },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'view' },
    subjects: [{ kind: 'ServiceAccount', name, namespace: ns }],
  });
  const elsewhere = check();
  const found = JSON.parse(elsewhere.stdout).findings as { code: string; fix: string }[];
  assert.equal(
    found.map((f) => f.code),
    ['binding-not-guarded', 'guard-not-covered'],
    elsewhere.stdout,
  );
  assert.match(found[0]!.fix, `add rolebinding/${other}/${name}-leader to DRAINGUARD_GUARD`);

  const missing = runCheck(cluster, `${ns}/nothing-here`, []);
  assert.equal(missing.status, 1, 'a Deployment that is not there is a failure of the check (exit 1), with the API message');
  assert.match(missing.stderr, /404|not found/i);
});

test("a live Deployment with the hold: the held kinds' CRDs are read from the API, so the hold example is clean; a kind without one is found", async () => {
  const cluster = await useCluster();
  const ns = (await cluster.namespace('check')).name;
  const id = randomBytes(3).toString('hex');
  const name = `eo-${id}`;
  await createExample(cluster, 'hold', { 'example-hold': ns, 'example-operator': name, 'operator.example.io': `op-${id}.example.io` });
  const check = () => runCheck(cluster, `${ns}/${name}`);

  const clean = check();
  assert.equal([clean.status, JSON.parse(clean.stdout).findings], [0, []], clean.stdout + clean.stderr);
  assert.equal(JSON.parse(clean.stdout).layers.find((l: { way: string }) => l.way === 'kubectl delete -f / -k, Flux prune').hold, 'yes');

  const path = `/apis/apps/v1/namespaces/${ns}/deployments/${name}`;
  const deployment = await cluster.api.get(path);
  const spec = deployment.spec.template.spec;
  const hold = spec.initContainers
    .find((c: { name: string }) => c.name === 'drainguard')
    .env.find((e: { name: string }) => e.name === 'DRAINGUARD_HOLD');
  hold.value += `,widgets.op-${id}.example.io`;
  await cluster.api.patch(path, { spec: { template: { spec: { initContainers: spec.initContainers } } } });
  const missing = check();
  assert.equal(missing.status, 1, missing.stdout + missing.stderr);
  const findings = JSON.parse(missing.stdout).findings as { code: string; message: string }[];
  assert.equal(
    findings.map((f) => f.code),
    ['hold-kind-missing'],
  );
  assert.match(findings[0]!.message, `the hold lists widgets.op-${id}.example.io`);
});

test.run();
