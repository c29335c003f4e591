// The test control plane itself (test/support/cluster): a real API server with
// RBAC and a working controller-manager, namespaces that are cleaned up, and
// pod-bound tokens that follow their Pod.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { useCluster } from './index.ts';
import { apiserverVersion, findBinaries } from './binaries.ts';

const cluster = await useCluster();

test('the admin is cluster-admin through the client certificate, RBAC is on for everyone else', async () => {
  const version = await cluster.api.get('/version');
  // The server the run started is the release its binaries were built as (test/support/kubernetes).
  assert.equal(`Kubernetes ${version.gitVersion}`, apiserverVersion(findBinaries()));
  const review = await cluster.api.create('/apis/authorization.k8s.io/v1/selfsubjectaccessreviews', {
    apiVersion: 'authorization.k8s.io/v1',
    kind: 'SelfSubjectAccessReview',
    spec: { resourceAttributes: { verb: '*', group: '*', resource: '*' } },
  });
  assert.ok(review.status.allowed);
  const ns = await cluster.namespace('rbac');
  await cluster.serviceAccount(ns.name, 'nobody');
  const token = await cluster.token(ns.name, 'nobody');
  const refused = await cluster.api.as(token).request('GET', `/api/v1/namespaces/${ns.name}/configmaps`);
  assert.equal(refused.status, 403);
  assert.match(refused.body.message, `User "system:serviceaccount:${ns.name}:nobody" cannot list resource "configmaps"`);
});

test('a namespace is fresh and its deletion is waited for, pods bound to a node included', async () => {
  const ns = await cluster.namespace('ns');
  assert.match(ns.name, /^ns-[0-9a-f]{8}$/);
  const node = await cluster.node();
  await cluster.create({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'p', namespace: ns.name },
    spec: { nodeName: node, containers: [{ name: 'c', image: 'x' }] },
  });
  // Without a kubelet a graceful delete leaves the pod Terminating: ns.delete() finishes it.
  await cluster.api.delete(`/api/v1/namespaces/${ns.name}/pods/p`);
  assert.ok((await cluster.api.get(`/api/v1/namespaces/${ns.name}/pods/p`)).metadata.deletionTimestamp);
  await ns.delete();
  assert.equal(await cluster.api.get(`/api/v1/namespaces/${ns.name}`), undefined);
});

test('a pod-bound token works while its Pod exists and is refused once the Pod is gone', async () => {
  const ns = await cluster.namespace('token');
  await cluster.serviceAccount(ns.name, 'op');
  const node = await cluster.node();
  const pod = await cluster.create({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'op-0', namespace: ns.name },
    spec: { nodeName: node, serviceAccountName: 'op', containers: [{ name: 'c', image: 'x' }] },
  });
  const bound = { name: 'op-0', uid: pod.metadata.uid as string };
  const before = await cluster.token(ns.name, 'op', { pod: bound });
  const unused = await cluster.token(ns.name, 'op', { pod: bound });
  const review = await cluster.api.as(before).request('POST', '/apis/authentication.k8s.io/v1/selfsubjectreviews', {
    apiVersion: 'authentication.k8s.io/v1',
    kind: 'SelfSubjectReview',
  });
  assert.equal(review.status, 201);
  assert.equal(review.body.status.userInfo.username, `system:serviceaccount:${ns.name}:op`);
  assert.equal(review.body.status.userInfo.extra['authentication.kubernetes.io/pod-name'], ['op-0']);
  await cluster.api.delete(`/api/v1/namespaces/${ns.name}/pods/op-0`, { gracePeriodSeconds: 0 });
  // A token never used before is not in the API server's 10 s token cache: refused once the Pod is
  // gone. The first tries may still find the Pod in the authenticator's informer and be cached as
  // accepted, for 10 s (kubernetes-facts.md): so up to 10 s more.
  const refused = await cluster.waitFor(
    async () => {
      const r = await cluster.api.as(unused).request('GET', '/api');
      return r.status === 401 ? r : undefined;
    },
    25_000,
    'the bound token refused',
  );
  assert.equal(refused.status, 401);
  const kubeconfig = cluster.kubeconfigFor(before, { namespace: ns.name });
  assert.ok(kubeconfig.endsWith('/kubeconfig'));
});

test('the controller-manager runs: the garbage collector takes a Lease owned by a deleted Pod', async () => {
  const ns = await cluster.namespace('gc');
  const node = await cluster.node();
  const pod = await cluster.create({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'owner', namespace: ns.name },
    spec: { nodeName: node, containers: [{ name: 'c', image: 'x' }] },
  });
  await cluster.create({
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: { name: 'l', namespace: ns.name, ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: 'owner', uid: pod.metadata.uid }] },
    spec: {},
  });
  await cluster.api.delete(`/api/v1/namespaces/${ns.name}/pods/owner`, { gracePeriodSeconds: 0 });
  await cluster.waitFor(
    async () => !(await cluster.api.get(`/apis/coordination.k8s.io/v1/namespaces/${ns.name}/leases/l`)),
    15_000,
    'the Lease collected',
  );
});

test.run();
