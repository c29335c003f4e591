// The release order keeps drainguard's own permissions until the last wave:
// what grants it the right to patch an object goes no earlier than that object.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parseGuardList } from '../../src/config/guard-list.ts';
import { releaseWaves } from '../../src/guard/release-order.ts';

const me = { namespace: 'op', serviceAccount: 'op' };
const sa = [{ kind: 'ServiceAccount', name: 'op', namespace: 'op' }];
const rule = (resources: string[], names: string[], group = 'rbac.authorization.k8s.io') => ({ apiGroups: [group], resources, resourceNames: names, verbs: ['get', 'patch'] });

function install(objects: Record<string, Record<string, unknown>>) {
  return parseGuardList(Object.keys(objects).join(','), 'G').map((target, i) => ({ target, object: { metadata: { name: target.name }, ...Object.values(objects)[i] } }));
}
const names = (waves: { target: { kind: string; name: string } }[][]) => waves.map((w) => w.map((o) => `${o.target.kind}/${o.target.name}`).sort());

test("the shipped layout: the operator's pair first, drainguard's own RBAC and the ServiceAccount together last", () => {
  const waves = releaseWaves(
    install({
      'clusterrole/manager': { rules: [rule(['configmaps'], [], '')] },
      'clusterrolebinding/manager': { roleRef: { kind: 'ClusterRole', name: 'manager' }, subjects: sa },
      'clusterrole/dg': { rules: [rule(['clusterroles'], ['manager', 'dg']), rule(['clusterrolebindings'], ['manager', 'dg'])] },
      'clusterrolebinding/dg': { roleRef: { kind: 'ClusterRole', name: 'dg' }, subjects: sa },
      'role/op/dg': { rules: [rule(['serviceaccounts'], ['op'], ''), rule(['roles', 'rolebindings'], ['dg'])] },
      'rolebinding/op/dg': { roleRef: { kind: 'Role', name: 'dg' }, subjects: sa },
      'serviceaccount/op/op': {},
    }),
    me,
  );
  assert.equal(names(waves), [
    ['clusterrole/manager', 'clusterrolebinding/manager'],
    ['clusterrole/dg', 'clusterrolebinding/dg'],
    ['role/dg', 'rolebinding/dg', 'serviceaccount/op'],
  ]);
});

test("a binding of another ServiceAccount grants drainguard nothing; without drainguard's own name, every one in its namespace may be its own", () => {
  const objects = install({
    'clusterrole/other': { rules: [rule(['clusterroles'], ['other'])] },
    'clusterrolebinding/other': { roleRef: { kind: 'ClusterRole', name: 'other' }, subjects: [{ kind: 'ServiceAccount', name: 'someone', namespace: 'op' }] },
    'serviceaccount/op/op': {},
  });
  assert.equal(names(releaseWaves(objects, me)), [['clusterrole/other', 'clusterrolebinding/other'], ['serviceaccount/op']]);
  // Then the binding lets it patch the role (and not itself): the role goes before the binding.
  assert.equal(names(releaseWaves(objects, { namespace: 'op' })), [['clusterrole/other'], ['clusterrolebinding/other'], ['serviceaccount/op']]);
});

test('a RoleBinding grants only in its namespace; groups of service accounts count', () => {
  const waves = releaseWaves(
    install({
      'clusterrole/edit': { rules: [{ apiGroups: ['*'], resources: ['*'], verbs: ['*'] }] },
      'rolebinding/other/edit': { roleRef: { kind: 'ClusterRole', name: 'edit' }, subjects: [{ kind: 'Group', name: 'system:serviceaccounts:op' }] },
      'role/op/r': {},
      'role/other/r': {},
    }),
    me,
  );
  // role/op/r is out of the binding's reach; role/other/r is in it, and so is the binding itself.
  assert.equal(names(waves), [['role/r', 'role/r'], ['rolebinding/edit'], ['clusterrole/edit']]);
});

test.run();
