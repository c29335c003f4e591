// The checks issue 41 added, on small objects: what the guard must hold (a
// binding whatever it binds; a built-in role never, also when read from a
// cluster, where it is among the objects with the bootstrap label), Kubernetes
// quantities. What the manifests tell of a wrap's COMMAND: entrypoint.unit.test.ts.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parseGuardList } from '../../src/config/guard-list.ts';
import type { Manifest } from '../../src/check/finding.ts';
import { checkGuardScope } from '../../src/check/guard-scope.ts';
import { quantityBytes } from '../../src/check/memory.ts';

const RBAC = 'rbac.authorization.k8s.io/v1';
const subject = [{ kind: 'ServiceAccount', name: 'op', namespace: 'ops' }];
const scope = (guard: string, objects: Manifest[]) =>
  checkGuardScope(parseGuardList(guard, 'DRAINGUARD_GUARD'), objects, {
    namespace: 'ops',
    serviceAccount: 'op',
    where: 'container manager',
    kept: (o) => (o.metadata.annotations as Record<string, string> | undefined)?.['helm.sh/resource-policy'] === 'keep',
  }).map((f) => `${f.code} ${/^(\S+ [^\s,]+)/.exec(f.message)![1]}`);

test('a binding to a built-in role: the binding is expected, the role never (absent from a render, or labelled rbac-defaults in a cluster)', () => {
  const binding: Manifest = {
    apiVersion: RBAC,
    kind: 'ClusterRoleBinding',
    metadata: { name: 'op-view' },
    roleRef: { kind: 'ClusterRole', name: 'view' },
    subjects: subject,
  };
  assert.equal(scope('', [binding]), ['binding-not-guarded ClusterRoleBinding op-view']);
  const view: Manifest = {
    apiVersion: RBAC,
    kind: 'ClusterRole',
    metadata: { name: 'view', labels: { 'kubernetes.io/bootstrapping': 'rbac-defaults' } },
    aggregationRule: { clusterRoleSelectors: [{ matchLabels: { 'rbac.authorization.k8s.io/aggregate-to-view': 'true' } }] },
  };
  const source: Manifest = {
    apiVersion: RBAC,
    kind: 'ClusterRole',
    metadata: {
      name: 'system:aggregate-to-view',
      labels: { 'kubernetes.io/bootstrapping': 'rbac-defaults', 'rbac.authorization.k8s.io/aggregate-to-view': 'true' },
    },
  };
  assert.equal(scope('clusterrolebinding/op-view', [binding, view, source]), []);
  // The same role without the label is the release's own: expected, and its sources.
  const own = { ...view, metadata: { name: 'view' } };
  assert.equal(scope('clusterrolebinding/op-view', [binding, own, source]), [
    'role-not-guarded ClusterRole view',
    'aggregation-source-not-guarded ClusterRole system:aggregate-to-view',
  ]);
});

test("bindings in other namespaces, by ServiceAccount or user name; a group binding is not the operator's own; kept objects need no guard", () => {
  const role: Manifest = { apiVersion: RBAC, kind: 'Role', metadata: { name: 'leader', namespace: 'kube-system' } };
  const bySa: Manifest = {
    apiVersion: RBAC,
    kind: 'RoleBinding',
    metadata: { name: 'leader', namespace: 'kube-system' },
    roleRef: { kind: 'Role', name: 'leader' },
    subjects: subject,
  };
  const byUser: Manifest = {
    apiVersion: RBAC,
    kind: 'RoleBinding',
    metadata: { name: 'watch', namespace: 'apps' },
    roleRef: { kind: 'ClusterRole', name: 'edit' },
    subjects: [{ kind: 'User', name: 'system:serviceaccount:ops:op' }],
  };
  const byGroup: Manifest = {
    apiVersion: RBAC,
    kind: 'RoleBinding',
    metadata: { name: 'all', namespace: 'apps' },
    roleRef: { kind: 'ClusterRole', name: 'view' },
    subjects: [{ kind: 'Group', name: 'system:serviceaccounts' }],
  };
  assert.equal(scope('', [role, bySa, byUser, byGroup]), [
    'binding-not-guarded RoleBinding kube-system/leader',
    'role-not-guarded Role kube-system/leader',
    'binding-not-guarded RoleBinding apps/watch',
  ]);
  assert.equal(scope('role/kube-system/leader,rolebinding/kube-system/leader,rolebinding/apps/watch', [role, bySa, byUser, byGroup]), []);
  // A Role of the same name in another namespace is not the one bound.
  assert.equal(scope('role/ops/leader,rolebinding/kube-system/leader', [role, bySa]), ['role-not-guarded Role kube-system/leader']);
  const kept = { ...bySa, metadata: { ...bySa.metadata, annotations: { 'helm.sh/resource-policy': 'keep' } } };
  assert.equal(scope('role/kube-system/leader', [role, kept]), []);
});

test('quantities as Kubernetes writes them', () => {
  assert.equal(['128Mi', '1Gi', '134217728', '128M', '1e9', '0.5Gi', 256 * 2 ** 20].map(quantityBytes), [
    128 * 2 ** 20,
    2 ** 30,
    134217728,
    128e6,
    1e9,
    2 ** 29,
    256 * 2 ** 20,
  ]);
  assert.equal(quantityBytes('lots'), undefined);
});

test.run();
