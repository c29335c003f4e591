// The fake API server against /work/shared/kubernetes-facts.md, case by case.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { type FakeApiServer, TOKEN_LEEWAY_MS, apiRequest, startApiServer } from '../support/apiserver/index.ts';

async function rejects(p: Promise<unknown>): Promise<void> {
  try {
    await p;
  } catch {
    return;
  }
  assert.unreachable('expected the request to fail');
}

const RBAC = '/apis/rbac.authorization.k8s.io/v1';
const FIN = 'example.com/hold';

async function withServer(fn: (s: FakeApiServer) => Promise<void>, options: Parameters<typeof startApiServer>[0] = {}): Promise<void> {
  const server = await startApiServer(options);
  try {
    await fn(server);
  } finally {
    await server.close();
  }
}

/** A ServiceAccount `ns/name` bound to a ClusterRole with these rules; returns its token. */
function serviceAccountWith(s: FakeApiServer, ns: string, name: string, rules: object[]): string {
  if (!s.get('v1', 'namespaces', undefined, ns)) s.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  s.create({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace: ns } });
  s.create({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: `${name}-access` }, rules });
  s.create({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: `${name}-access` },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: `${name}-access` },
    subjects: [{ kind: 'ServiceAccount', name, namespace: ns }],
  });
  return s.tokenFor(ns, name);
}

/** Returns once the garbage collector has acted on a change made now (a canary owner and its dependent). */
async function gcRound(s: FakeApiServer): Promise<void> {
  const name = `canary-${s.requests.length}-${Math.random().toString(36).slice(2, 7)}`;
  const owner = s.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'default' } });
  s.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `${name}-dep`, namespace: 'default', ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name, uid: owner.metadata.uid }] } });
  s.delete('v1', 'configmaps', 'default', name);
  await s.waitFor(() => s.get('v1', 'configmaps', 'default', `${name}-dep`) === undefined, 2000, 'a garbage collector round');
}

const clusterRole = (name: string, extra: object = {}) => ({
  apiVersion: 'rbac.authorization.k8s.io/v1',
  kind: 'ClusterRole',
  metadata: { name },
  rules: [{ apiGroups: ['apps'], resources: ['deployments'], verbs: ['*'] }],
  ...extra,
});

test('create, get, list with label selector, conflicts on stale resourceVersion (PUT and merge patch)', async () => {
  await withServer(async (s) => {
    const admin = s.adminToken;
    const created = await apiRequest(s, admin, 'POST', `${RBAC}/clusterroles`, clusterRole('a', { metadata: { name: 'a', labels: { app: 'x' } } }));
    assert.equal(created.status, 201);
    assert.ok(created.body.metadata.uid && created.body.metadata.resourceVersion && created.body.metadata.creationTimestamp);
    await apiRequest(s, admin, 'POST', `${RBAC}/clusterroles`, clusterRole('b'));
    assert.equal((await apiRequest(s, admin, 'POST', `${RBAC}/clusterroles`, clusterRole('b'))).status, 409);
    const listed = await apiRequest(s, admin, 'GET', `${RBAC}/clusterroles?labelSelector=app%3Dx`);
    assert.equal(listed.body.kind, 'ClusterRoleList');
    assert.equal(listed.body.items.map((i: any) => i.metadata.name), ['a']);
    const notIn = await apiRequest(s, admin, 'GET', `${RBAC}/clusterroles?labelSelector=${encodeURIComponent('app notin (x),!other')}`);
    assert.equal(notIn.body.items.map((i: any) => i.metadata.name), ['b']);

    const rv = created.body.metadata.resourceVersion;
    const merged = await apiRequest(s, admin, 'PATCH', `${RBAC}/clusterroles/a`, { metadata: { resourceVersion: rv, labels: { y: '1' } } }, 'application/merge-patch+json');
    assert.equal(merged.status, 200);
    assert.equal(merged.body.metadata.labels, { app: 'x', y: '1' });
    const stalePatch = await apiRequest(s, admin, 'PATCH', `${RBAC}/clusterroles/a`, { metadata: { resourceVersion: rv, labels: { z: '1' } } }, 'application/merge-patch+json');
    assert.equal(stalePatch.status, 409);
    assert.match(stalePatch.body.message, 'Operation cannot be fulfilled on clusterroles.rbac.authorization.k8s.io "a": the object has been modified');
    const stalePut = await apiRequest(s, admin, 'PUT', `${RBAC}/clusterroles/a`, { ...created.body, rules: [] });
    assert.equal(stalePut.status, 409);
    assert.equal(stalePut.body.reason, 'Conflict');
    const put = await apiRequest(s, admin, 'PUT', `${RBAC}/clusterroles/a`, { ...merged.body, rules: [] });
    assert.equal(put.status, 200);
    assert.equal(put.body.rules, []);

    const failedTest = await apiRequest(
      s,
      admin,
      'PATCH',
      `${RBAC}/clusterroles/a`,
      [{ op: 'test', path: '/metadata/resourceVersion', value: rv }, { op: 'add', path: '/metadata/finalizers', value: [FIN] }],
      'application/json-patch+json',
    );
    assert.equal(failedTest.status, 422);
    const jsonPatch = await apiRequest(
      s,
      admin,
      'PATCH',
      `${RBAC}/clusterroles/a`,
      [{ op: 'test', path: '/metadata/resourceVersion', value: put.body.metadata.resourceVersion }, { op: 'add', path: '/metadata/finalizers', value: [FIN] }],
      'application/json-patch+json',
    );
    assert.equal(jsonPatch.status, 200);
    assert.equal(jsonPatch.body.metadata.finalizers, [FIN]);
    assert.equal((await apiRequest(s, admin, 'GET', `${RBAC}/clusterroles/nope`)).status, 404);
    assert.equal((await apiRequest(s, undefined, 'GET', `${RBAC}/clusterroles`)).status, 401);
  });
});

test('a deleted object with a finalizer stays with a deletionTimestamp; no new finalizer (422); gone when the last is removed', async () => {
  await withServer(async (s) => {
    s.create(clusterRole('held', { metadata: { name: 'held', finalizers: [FIN] } }));
    const del = await apiRequest(s, s.adminToken, 'DELETE', `${RBAC}/clusterroles/held`, { propagationPolicy: 'Background' });
    assert.equal(del.status, 200);
    assert.ok(del.body.metadata.deletionTimestamp);
    assert.equal(del.body.metadata.deletionGracePeriodSeconds, 0);
    assert.equal(del.body.metadata.finalizers, [FIN]);
    const added = await apiRequest(s, s.adminToken, 'PATCH', `${RBAC}/clusterroles/held`, { metadata: { finalizers: [FIN, 'example.com/more'] } }, 'application/merge-patch+json');
    assert.equal(added.status, 422);
    assert.equal(added.body.reason, 'Invalid');
    assert.equal(
      added.body.message,
      'ClusterRole.rbac.authorization.k8s.io "held" is invalid: metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{"example.com/more"}',
    );
    const removed = await apiRequest(s, s.adminToken, 'PATCH', `${RBAC}/clusterroles/held`, [{ op: 'remove', path: '/metadata/finalizers/0' }], 'application/json-patch+json');
    assert.equal(removed.status, 200);
    assert.equal((await apiRequest(s, s.adminToken, 'GET', `${RBAC}/clusterroles/held`)).status, 404);
    // Without a finalizer, a delete is immediate and answers with a Status.
    s.create(clusterRole('free'));
    const gone = await apiRequest(s, s.adminToken, 'DELETE', `${RBAC}/clusterroles/free`);
    assert.equal(gone.body.status, 'Success');
  });
});

test('finalizer-only patches need no escalation; anything else on a role the caller does not hold is refused; resourceNames enforced', async () => {
  await withServer(async (s) => {
    s.create(clusterRole('guarded', { rules: [{ apiGroups: ['*'], resources: ['*'], verbs: ['*'] }] }));
    s.create(clusterRole('other'));
    const token = serviceAccountWith(s, 'op', 'op', [
      { apiGroups: ['rbac.authorization.k8s.io'], resources: ['clusterroles'], resourceNames: ['guarded'], verbs: ['get', 'patch', 'update'] },
    ]);
    const path = `${RBAC}/clusterroles/guarded`;
    for (const type of ['application/merge-patch+json', 'application/strategic-merge-patch+json']) {
      const cur = s.get('rbac.authorization.k8s.io/v1', 'clusterroles', undefined, 'guarded')!;
      const ok = await apiRequest(s, token, 'PATCH', path, { metadata: { finalizers: [...(cur.metadata.finalizers ?? []), `example.com/${type.length}`] } }, type);
      assert.equal(ok.status, 200, JSON.stringify(ok.body));
    }
    const jp = await apiRequest(s, token, 'PATCH', path, [{ op: 'add', path: '/metadata/finalizers/-', value: 'example.com/jp' }], 'application/json-patch+json');
    assert.equal(jp.status, 200);
    const cur = (await apiRequest(s, token, 'GET', path)).body;
    const put = await apiRequest(s, token, 'PUT', path, { ...cur, metadata: { ...cur.metadata, finalizers: [...cur.metadata.finalizers, 'example.com/put'] } });
    assert.equal(put.status, 200);

    const label = await apiRequest(s, token, 'PATCH', path, { metadata: { labels: { a: 'b' } } }, 'application/merge-patch+json');
    assert.equal(label.status, 403);
    assert.match(label.body.message, 'clusterroles.rbac.authorization.k8s.io "guarded" is forbidden: user "system:serviceaccount:op:op"');
    assert.match(label.body.message, 'is attempting to grant RBAC permissions not currently held');
    const both = await apiRequest(s, token, 'PATCH', path, { metadata: { finalizers: [], annotations: { a: 'b' } } }, 'application/merge-patch+json');
    assert.equal(both.status, 403, 'a finalizer change combined with an annotation is an escalation too');
    const rule = await apiRequest(s, token, 'PATCH', path, [{ op: 'add', path: '/rules/-', value: { apiGroups: [''], resources: ['pods'], verbs: ['get'] } }], 'application/json-patch+json');
    assert.equal(rule.status, 403);

    const elsewhere = await apiRequest(s, token, 'GET', `${RBAC}/clusterroles/other`);
    assert.equal(elsewhere.status, 403);
    assert.match(elsewhere.body.message, 'User "system:serviceaccount:op:op" cannot get resource "clusterroles" in API group "rbac.authorization.k8s.io" at the cluster scope');
    assert.equal((await apiRequest(s, token, 'PATCH', `${RBAC}/clusterroles/other`, { metadata: { finalizers: [FIN] } }, 'application/merge-patch+json')).status, 403);
  });
});

test('terminating roles and bindings keep granting; the permission goes with the last finalizer', async () => {
  await withServer(
    async (s) => {
      const token = serviceAccountWith(s, 'op', 'op', [{ apiGroups: [''], resources: ['configmaps'], verbs: ['list'] }]);
      const list = () => apiRequest(s, token, 'GET', '/api/v1/namespaces/op/configmaps');
      s.setFinalizers('rbac.authorization.k8s.io/v1', 'clusterroles', undefined, 'op-access', [FIN]);
      s.setFinalizers('rbac.authorization.k8s.io/v1', 'clusterrolebindings', undefined, 'op-access', [FIN]);
      s.delete('rbac.authorization.k8s.io/v1', 'clusterroles', undefined, 'op-access', { propagationPolicy: 'Background' });
      s.delete('rbac.authorization.k8s.io/v1', 'clusterrolebindings', undefined, 'op-access', { propagationPolicy: 'Background' });
      assert.equal((await list()).status, 200, 'terminating role and binding still grant');
      s.setFinalizers('rbac.authorization.k8s.io/v1', 'clusterroles', undefined, 'op-access', []);
      assert.equal(s.get('rbac.authorization.k8s.io/v1', 'clusterroles', undefined, 'op-access'), undefined);
      assert.equal((await list()).status, 403, 'gone role: no permission (strict authorizer)');
    },
    { authorizerLagMs: 0 },
  );
  // With the authorizer's cache (0.1 s by default) the permission lingers briefly, then goes.
  await withServer(async (s) => {
    const token = serviceAccountWith(s, 'op', 'op', [{ apiGroups: [''], resources: ['configmaps'], verbs: ['list'] }]);
    s.delete('rbac.authorization.k8s.io/v1', 'clusterroles', undefined, 'op-access');
    const soon = await apiRequest(s, token, 'GET', '/api/v1/namespaces/op/configmaps');
    assert.equal(soon.status, 200);
    const t0 = performance.now();
    while ((await apiRequest(s, token, 'GET', '/api/v1/namespaces/op/configmaps')).status === 200) {
      assert.ok(performance.now() - t0 < 2000, 'permission outlived the authorizer cache');
    }
  });
});

test('ServiceAccount tokens: 401 exactly 60 s after the deletionTimestamp while a finalizer holds it; at once without', async () => {
  await withServer(async (s) => {
    const token = serviceAccountWith(s, 'op', 'op', [{ apiGroups: [''], resources: ['configmaps'], verbs: ['list'] }]);
    const call = () => apiRequest(s, token, 'GET', '/api/v1/namespaces/op/configmaps');
    s.setFinalizers('v1', 'serviceaccounts', 'op', 'op', [FIN]);
    const deleted = s.delete('v1', 'serviceaccounts', 'op', 'op', { propagationPolicy: 'Background' });
    assert.not.ok(deleted.gone, 'ServiceAccounts have no graceful deletion, but a finalizer holds them');
    const at = Date.parse(deleted.object.metadata.deletionTimestamp);
    s.clock.advance(at + TOKEN_LEEWAY_MS - 1000 - s.clock.now());
    assert.equal((await call()).status, 200, 'accepted at deletionTimestamp + 59 s');
    s.clock.advance(1000);
    const rejected = await call();
    assert.equal(rejected.status, 401);
    assert.equal(rejected.body.reason, 'Unauthorized');
    assert.ok(s.get('v1', 'serviceaccounts', 'op', 'op'), 'the object still exists');

    const other = serviceAccountWith(s, 'op2', 'op2', [{ apiGroups: [''], resources: ['configmaps'], verbs: ['list'] }]);
    s.delete('v1', 'serviceaccounts', 'op2', 'op2');
    assert.equal((await apiRequest(s, other, 'GET', '/api/v1/namespaces/op2/configmaps')).status, 401);
  });
});

test('Pods: graceful deletion until the kubelet confirms; the owned Lease is collected right after the Pod is gone', async () => {
  await withServer(async (s) => {
    const pod = s.create({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', namespace: 'default' }, spec: { nodeName: 'n1', terminationGracePeriodSeconds: 45 } });
    s.create({
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name: 'l', namespace: 'default', ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: 'p', uid: pod.metadata.uid }] },
      spec: { holderIdentity: 'p' },
    });
    const before = s.clock.now();
    const del = await apiRequest(s, s.adminToken, 'DELETE', '/api/v1/namespaces/default/pods/p');
    assert.equal(del.status, 200);
    const dt = Date.parse(del.body.metadata.deletionTimestamp);
    assert.ok(dt >= before + 44_000 && dt <= before + 46_000, `deletionTimestamp = now + grace (${dt - before} ms)`);
    assert.equal(del.body.metadata.deletionGracePeriodSeconds, 45);
    // Controllers run on every change; give them a change to react to, then check the Lease is untouched.
    await gcRound(s);
    assert.ok(s.get('v1', 'pods', 'default', 'p'), 'terminating Pod stays');
    assert.ok(s.get('coordination.k8s.io/v1', 'leases', 'default', 'l'), 'Lease stays while its Pod terminates');
    s.finishPodTermination('default', 'p');
    assert.equal(s.get('v1', 'pods', 'default', 'p'), undefined);
    await s.waitFor(() => s.get('coordination.k8s.io/v1', 'leases', 'default', 'l') === undefined, 2000, 'Lease collected');

    s.create({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'q', namespace: 'default' }, spec: { nodeName: 'n1' } });
    const force = await apiRequest(s, s.adminToken, 'DELETE', '/api/v1/namespaces/default/pods/q', { gracePeriodSeconds: 0 });
    assert.equal(force.status, 200);
    assert.equal(s.get('v1', 'pods', 'default', 'q'), undefined, 'force delete removes at once');
  });
});

test('garbage collector: explicit Background strips a pre-set foregroundDeletion; an owner held by a finalizer holds back its dependents', async () => {
  await withServer(async (s) => {
    const owner = s.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'owner', namespace: 'default', finalizers: ['foregroundDeletion'] } });
    const dep = (name: string, uid: string) =>
      s.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'default', ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'owner', uid, blockOwnerDeletion: true }] } });
    dep('dep', owner.metadata.uid);
    const del = s.delete('v1', 'configmaps', 'default', 'owner', { propagationPolicy: 'Background' });
    assert.ok(del.gone, 'Background strips foregroundDeletion: the owner goes at once');
    await s.waitFor(() => s.get('v1', 'configmaps', 'default', 'dep') === undefined, 2000, 'dependent collected');

    const held = s.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'held', namespace: 'default', finalizers: [FIN] } });
    s.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'dep2', namespace: 'default', ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'held', uid: held.metadata.uid }] } });
    s.delete('v1', 'configmaps', 'default', 'held', { propagationPolicy: 'Background' });
    await gcRound(s);
    assert.ok(s.get('v1', 'configmaps', 'default', 'dep2'), 'dependent untouched while the owner is held');
    s.setFinalizers('v1', 'configmaps', 'default', 'held', []);
    await s.waitFor(() => s.get('v1', 'configmaps', 'default', 'dep2') === undefined, 2000, 'dependent collected once the owner is gone');

    // No policy: a pre-set foregroundDeletion takes effect and waits for blocking dependents.
    const fg = s.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'fg', namespace: 'default', finalizers: ['foregroundDeletion'] } });
    s.create({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'blocker', namespace: 'default', finalizers: [FIN], ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'fg', uid: fg.metadata.uid, blockOwnerDeletion: true }] },
    });
    assert.not.ok(s.delete('v1', 'configmaps', 'default', 'fg').gone);
    await s.waitFor(() => s.get('v1', 'configmaps', 'default', 'blocker')?.metadata.deletionTimestamp, 2000, 'blocker deleted in the foreground');
    assert.ok(s.get('v1', 'configmaps', 'default', 'fg'), 'owner held by its blocking dependent');
    s.setFinalizers('v1', 'configmaps', 'default', 'blocker', []);
    await s.waitFor(() => s.get('v1', 'configmaps', 'default', 'fg') === undefined, 2000, 'owner gone after its dependent');
  });
});

test('CustomResourceDefinitions: discovery, custom resources with finalizers, cleanup on CRD deletion', async () => {
  await withServer(async (s) => {
    const crd = await apiRequest(s, s.adminToken, 'POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: 'installations.operator.example.io' },
      spec: {
        group: 'operator.example.io',
        scope: 'Namespaced',
        names: { plural: 'installations', singular: 'installation', kind: 'Installation', shortNames: ['inst'] },
        versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } }],
      },
    });
    assert.equal(crd.status, 201);
    const groups = (await apiRequest(s, s.adminToken, 'GET', '/apis')).body;
    assert.ok(groups.groups.some((g: any) => g.name === 'operator.example.io'));
    const resources = (await apiRequest(s, s.adminToken, 'GET', '/apis/operator.example.io/v1')).body;
    assert.equal(resources.resources[0].name, 'installations');
    assert.equal(resources.resources[0].shortNames, ['inst']);
    assert.equal(resources.resources[0].namespaced, true);
    const core = (await apiRequest(s, s.adminToken, 'GET', '/api/v1')).body;
    assert.ok(core.resources.some((r: any) => r.name === 'serviceaccounts' && r.shortNames[0] === 'sa'));

    const base = '/apis/operator.example.io/v1/namespaces/default/installations';
    const cr = await apiRequest(s, s.adminToken, 'POST', base, { apiVersion: 'operator.example.io/v1', kind: 'Installation', metadata: { name: 'default', finalizers: [FIN] }, spec: { a: 1 } });
    assert.equal(cr.status, 201);
    assert.equal((await apiRequest(s, s.adminToken, 'GET', base)).body.items[0].kind, 'Installation');
    assert.equal((await apiRequest(s, s.adminToken, 'DELETE', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions/installations.operator.example.io')).status, 200);
    await s.waitFor(() => s.get('operator.example.io/v1', 'installations', 'default', 'default')?.metadata.deletionTimestamp, 2000, 'CR deleted with its CRD');
    assert.ok(s.get('apiextensions.k8s.io/v1', 'customresourcedefinitions', undefined, 'installations.operator.example.io'), 'CRD held by the CR');
    await apiRequest(s, s.adminToken, 'PATCH', `${base}/default`, { metadata: { finalizers: null } }, 'application/merge-patch+json');
    await s.waitFor(() => s.get('apiextensions.k8s.io/v1', 'customresourcedefinitions', undefined, 'installations.operator.example.io') === undefined, 2000, 'CRD gone');
    assert.equal((await apiRequest(s, s.adminToken, 'GET', base)).status, 404);
  });
});

test('faults: fail the next N matching requests, drop connections, delay; every request recorded', async () => {
  await withServer(async (s) => {
    s.create(clusterRole('x'));
    const conflicts = s.fault({ match: (r) => r.verb === 'patch', times: 2, status: 409 });
    const patch = () => apiRequest(s, s.adminToken, 'PATCH', `${RBAC}/clusterroles/x`, { metadata: { finalizers: [FIN] } }, 'application/merge-patch+json');
    assert.equal((await patch()).status, 409);
    assert.equal((await apiRequest(s, s.adminToken, 'GET', `${RBAC}/clusterroles/x`)).status, 200, 'GET not matched');
    assert.equal((await patch()).status, 409);
    assert.equal((await patch()).status, 200);
    assert.equal(conflicts.hits, 2);
    const drop = s.fault({ match: (r) => r.resource === 'clusterroles', times: 1, drop: true });
    await rejects(apiRequest(s, s.adminToken, 'GET', `${RBAC}/clusterroles/x`));
    assert.equal(drop.hits, 1);
    s.fault({ times: 1, delayMs: 150 });
    const t0 = performance.now();
    await apiRequest(s, s.adminToken, 'GET', `${RBAC}/clusterroles/x`);
    assert.ok(performance.now() - t0 >= 140);
    const patches = s.requestsMatching((r) => r.verb === 'patch');
    assert.equal(patches.map((r) => r.status), [409, 409, 200]);
    assert.equal(patches[2]!.resource, 'clusterroles');
    assert.equal(patches[2]!.name, 'x');
    assert.equal(patches[2]!.contentType, 'application/merge-patch+json');
    assert.equal(s.requests.at(-1)!.durationMs >= 140, true);
  });
});

test('the API goes down and comes back on the same port; namespaces must exist', async () => {
  await withServer(
    async (s) => {
      const url = s.url;
      await s.stopListening();
      await rejects(apiRequest(s, s.adminToken, 'GET', '/api'));
      await s.listenAgain();
      assert.equal(s.url, url);
      assert.equal((await apiRequest(s, s.adminToken, 'GET', '/api')).body.versions, ['v1']);
      const missing = await apiRequest(s, s.adminToken, 'POST', '/api/v1/namespaces/nope/configmaps', { metadata: { name: 'a' } });
      assert.equal(missing.status, 404);
      assert.equal((await apiRequest(s, s.adminToken, 'POST', '/api/v1/namespaces', { metadata: { name: 'nope' } })).status, 201);
      assert.equal((await apiRequest(s, s.adminToken, 'POST', '/api/v1/namespaces/nope/configmaps', { metadata: { name: 'a' } })).status, 201);
    },
    { tls: false },
  );
});

test.run();
