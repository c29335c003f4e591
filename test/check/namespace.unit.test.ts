// check/namespace.ts: where `kubectl apply -n NS` puts each object of a
// render. Objects that name no namespace go into NS (default without -n);
// cluster-scoped kinds, built in or defined by a CRD in the same manifests,
// stay cluster-scoped; an object naming another namespace than -n stays in
// it, as `helm install -n` creates it.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Manifest } from '../../src/check/finding.ts';
import { objectId } from '../../src/check/finding.ts';
import { placeInNamespace } from '../../src/check/namespace.ts';

const object = (apiVersion: string, kind: string, name: string, namespace?: string): Manifest => ({
  apiVersion,
  kind,
  metadata: { name, ...(namespace === undefined ? {} : { namespace }) },
});

const RENDER: Manifest[] = [
  object('v1', 'ServiceAccount', 'op'),
  object('apps/v1', 'Deployment', 'op'),
  object('rbac.authorization.k8s.io/v1', 'Role', 'op'),
  object('rbac.authorization.k8s.io/v1', 'RoleBinding', 'op'),
  object('rbac.authorization.k8s.io/v1', 'ClusterRole', 'op'),
  object('rbac.authorization.k8s.io/v1', 'ClusterRoleBinding', 'op'),
  object('v1', 'Namespace', 'my-ns'),
  object('admissionregistration.k8s.io/v1', 'ValidatingAdmissionPolicy', 'op'),
  object('apiextensions.k8s.io/v1', 'CustomResourceDefinition', 'widgets.example.io'),
  object('example.io/v1', 'Widget', 'w'),
];

const ids = (objects: Manifest[]) => objects.map((o) => objectId(o));

test('-n NS: namespaced objects that name none go into NS; cluster-scoped kinds stay cluster-scoped', () => {
  assert.equal(ids(placeInNamespace(RENDER, { name: 'my-ns', source: '-n' })), [
    'ServiceAccount/my-ns/op',
    'Deployment/my-ns/op',
    'Role/my-ns/op',
    'RoleBinding/my-ns/op',
    'ClusterRole/op',
    'ClusterRoleBinding/op',
    'Namespace/my-ns',
    'ValidatingAdmissionPolicy/op',
    'CustomResourceDefinition/widgets.example.io',
    'Widget/my-ns/w',
  ]);
  // Objects that name NS already are unchanged, and the input is not written to.
  const named = [object('v1', 'ServiceAccount', 'op', 'my-ns')];
  assert.equal(placeInNamespace(named, { name: 'my-ns', source: '-n' }), named);
  assert.equal(ids(RENDER).slice(0, 2), ['ServiceAccount/op', 'Deployment/op']);
});

test('without -n: default, as kubectl with no namespace in its context; objects that name theirs keep it', () => {
  const placed = placeInNamespace([
    object('v1', 'ServiceAccount', 'op'),
    object('apps/v1', 'Deployment', 'op', 'elsewhere'),
    object('rbac.authorization.k8s.io/v1', 'ClusterRole', 'op'),
  ]);
  assert.equal(ids(placed), ['ServiceAccount/default/op', 'Deployment/elsewhere/op', 'ClusterRole/op']);
});

test("an empty or null namespace is none (a template's namespace: {{ .Values.unset }}), also against -n", () => {
  const objects = [
    object('v1', 'ServiceAccount', 'a', ''),
    { ...object('v1', 'ServiceAccount', 'b'), metadata: { name: 'b', namespace: null as unknown as string } },
  ];
  assert.equal(ids(placeInNamespace(objects, { name: 'my-ns', source: '-n' })), ['ServiceAccount/my-ns/a', 'ServiceAccount/my-ns/b']);
  assert.equal(ids(placeInNamespace([object('rbac.authorization.k8s.io/v1', 'ClusterRole', 'op', '')])), ['ClusterRole/op']);
});

test('a namespace on a cluster-scoped object is dropped (the API server ignores it), and -n does not refuse it', () => {
  const placed = placeInNamespace([object('rbac.authorization.k8s.io/v1', 'ClusterRole', 'op', 'other')], { name: 'my-ns', source: '-n' });
  assert.equal(ids(placed), ['ClusterRole/op']);
});

test('a custom kind is cluster-scoped when a CRD in the manifests says so (scope: Cluster), by group and kind', () => {
  const crd = (group: string, scope: string): Manifest => ({
    ...object('apiextensions.k8s.io/v1', 'CustomResourceDefinition', `installations.${group}`),
    spec: { group, scope, names: { kind: 'Installation', plural: 'installations' } },
  });
  const cluster = placeInNamespace([crd('operator.example.io', 'Cluster'), object('operator.example.io/v1', 'Installation', 'default')], {
    name: 'my-ns',
    source: '-n',
  });
  assert.equal(ids(cluster)[1], 'Installation/default');
  // Another group's Installation is another kind.
  const other = placeInNamespace([crd('operator.example.io', 'Cluster'), object('other.example.io/v1', 'Installation', 'default')], {
    name: 'my-ns',
    source: '-n',
  });
  assert.equal(ids(other)[1], 'Installation/my-ns/default');
  const namespaced = placeInNamespace(
    [crd('operator.example.io', 'Namespaced'), object('operator.example.io/v1', 'Installation', 'default')],
    { name: 'my-ns', source: '-n' },
  );
  assert.equal(ids(namespaced)[1], 'Installation/my-ns/default');
});

test('-n NS and objects naming other namespaces: each stays in its own, as helm install -n creates it (kubectl would refuse it; Helm renders are what users pipe)', () => {
  const objects = [
    object('v1', 'ServiceAccount', 'op', 'other'),
    object('apps/v1', 'Deployment', 'op'),
    object('rbac.authorization.k8s.io/v1', 'RoleBinding', 'leader', 'kube-system'),
  ];
  assert.equal(ids(placeInNamespace(objects, { name: 'my-ns', source: 'DRAINGUARD_NAMESPACE' })), [
    'ServiceAccount/other/op',
    'Deployment/my-ns/op',
    'RoleBinding/kube-system/leader',
  ]);
});

test.run();
