// check/rbac.ts, the authorizer `drainguard check` evaluates manifests with,
// against what the API server's RBAC authorizer does for ServiceAccount
// my-ns/op: the subjects that name it (its User name and its groups, not only
// kind ServiceAccount), aggregated ClusterRoles (their rules the union of
// the ClusterRoles their selectors match, as the aggregation controller fills
// them in), and rules for non-resource URLs, which grant no resource.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Manifest } from '../../src/check/finding.ts';
import { authorizerFor } from '../../src/check/rbac.ts';

const RBAC = 'rbac.authorization.k8s.io/v1';
const NS = 'my-ns';
const SA = 'op';
const LEASES = { verb: 'get', group: 'coordination.k8s.io', resource: 'leases', namespace: NS };

const clusterRole = (name: string, rules: unknown[], extra: Record<string, unknown> = {}, labels?: Record<string, string>): Manifest => ({
  apiVersion: RBAC,
  kind: 'ClusterRole',
  metadata: { name, ...(labels ? { labels } : {}) },
  rules,
  ...extra,
});
const leaseRole = clusterRole('leases', [{ apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get'] }]);
const bindTo = (subject: Record<string, string>, role = 'leases'): Manifest => ({
  apiVersion: RBAC,
  kind: 'ClusterRoleBinding',
  metadata: { name: 'b' },
  roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
  subjects: [subject],
});
const allows = (objects: Manifest[], request: Parameters<ReturnType<typeof authorizerFor>['allows']>[0] = LEASES): boolean =>
  authorizerFor(objects, NS, SA).allows(request);

test("Group subjects: the ServiceAccount's groups system:serviceaccounts, system:serviceaccounts:NS and system:authenticated", () => {
  for (const group of ['system:serviceaccounts', `system:serviceaccounts:${NS}`, 'system:authenticated']) {
    assert.ok(allows([leaseRole, bindTo({ kind: 'Group', apiGroup: 'rbac.authorization.k8s.io', name: group })]), group);
  }
  // Groups it is not in.
  for (const group of ['system:serviceaccounts:other', 'system:unauthenticated', 'system:masters', NS]) {
    assert.not.ok(allows([leaseRole, bindTo({ kind: 'Group', apiGroup: 'rbac.authorization.k8s.io', name: group })]), group);
  }
});

test('a User subject system:serviceaccount:NS:NAME is the ServiceAccount; other user names are not', () => {
  assert.ok(
    allows([leaseRole, bindTo({ kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: `system:serviceaccount:${NS}:${SA}` })]),
  );
  for (const name of [SA, `system:serviceaccount:other:${SA}`, `system:serviceaccount:${NS}:other`, `system:serviceaccounts:${NS}`]) {
    assert.not.ok(allows([leaseRole, bindTo({ kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name })]), name);
  }
  // A ServiceAccount subject by that user name is no ServiceAccount.
  assert.not.ok(allows([leaseRole, bindTo({ kind: 'ServiceAccount', name: `system:serviceaccount:${NS}:${SA}`, namespace: NS })]));
});

test('a RoleBinding grants a group subject in its own namespace only', () => {
  const binding: Manifest = {
    apiVersion: RBAC,
    kind: 'RoleBinding',
    metadata: { name: 'b', namespace: NS },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'leases' },
    subjects: [{ kind: 'Group', apiGroup: 'rbac.authorization.k8s.io', name: `system:serviceaccounts:${NS}` }],
  };
  assert.ok(allows([leaseRole, binding]));
  assert.not.ok(allows([leaseRole, binding], { ...LEASES, namespace: 'other' }));
  // Nor cluster-wide; and one not placed in a namespace (namespace.ts does that first) grants nothing.
  assert.not.ok(allows([leaseRole, binding], { ...LEASES, namespace: undefined }));
  assert.not.ok(allows([leaseRole, { ...binding, metadata: { name: 'b' } }]));
});

const aggregated = (selectors: unknown[], rules: unknown[] = []): Manifest =>
  clusterRole('operator', rules, { aggregationRule: { clusterRoleSelectors: selectors } });
const piece = (name: string, labels: Record<string, string>, resource = 'leases'): Manifest =>
  clusterRole(name, [{ apiGroups: ['coordination.k8s.io'], resources: [resource], verbs: ['get'] }], {}, labels);
const OPERATOR_BINDING = bindTo({ kind: 'ServiceAccount', name: SA, namespace: NS }, 'operator');

test('an aggregated ClusterRole grants the rules of every ClusterRole its selectors match (matchLabels), not its own rendered rules', () => {
  const objects = [
    aggregated([{ matchLabels: { 'example.io/aggregate-to-operator': 'true' } }]),
    piece('piece', { 'example.io/aggregate-to-operator': 'true' }),
    OPERATOR_BINDING,
  ];
  assert.ok(allows(objects));
  // No piece matches: nothing (the controller empties the rules).
  assert.not.ok(
    allows([
      aggregated([{ matchLabels: { 'example.io/aggregate-to-operator': 'true' } }]),
      piece('piece', { 'example.io/aggregate-to-operator': 'false' }),
      OPERATOR_BINDING,
    ]),
  );
  const own = [{ apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get'] }];
  assert.not.ok(allows([aggregated([{ matchLabels: { 'example.io/aggregate-to-operator': 'true' } }], own), OPERATOR_BINDING]));
  // Any selector may match; the union of the pieces.
  const two = [
    aggregated([{ matchLabels: { a: '1' } }, { matchLabels: { b: '1' } }]),
    piece('pa', { a: '1' }),
    piece('pb', { b: '1' }, 'events'),
    OPERATOR_BINDING,
  ];
  assert.ok(allows(two));
  assert.ok(allows(two, { ...LEASES, resource: 'events' }));
});

test('aggregation selectors: matchExpressions In, NotIn, Exists, DoesNotExist, with matchLabels; an empty selector matches every ClusterRole', () => {
  const cases: [unknown, Record<string, string>, boolean][] = [
    [{ matchExpressions: [{ key: 'tier', operator: 'In', values: ['a', 'b'] }] }, { tier: 'b' }, true],
    [{ matchExpressions: [{ key: 'tier', operator: 'In', values: ['a', 'b'] }] }, { tier: 'c' }, false],
    [{ matchExpressions: [{ key: 'tier', operator: 'In', values: ['a'] }] }, {}, false],
    [{ matchExpressions: [{ key: 'tier', operator: 'NotIn', values: ['a'] }] }, { tier: 'b' }, true],
    [{ matchExpressions: [{ key: 'tier', operator: 'NotIn', values: ['a'] }] }, {}, true],
    [{ matchExpressions: [{ key: 'tier', operator: 'NotIn', values: ['a'] }] }, { tier: 'a' }, false],
    [{ matchExpressions: [{ key: 'tier', operator: 'Exists' }] }, { tier: '' }, true],
    [{ matchExpressions: [{ key: 'tier', operator: 'Exists' }] }, { other: 'x' }, false],
    [{ matchExpressions: [{ key: 'tier', operator: 'DoesNotExist' }] }, { other: 'x' }, true],
    [{ matchExpressions: [{ key: 'tier', operator: 'DoesNotExist' }] }, { tier: 'a' }, false],
    // Every requirement of one selector must hold.
    [{ matchLabels: { app: 'x' }, matchExpressions: [{ key: 'tier', operator: 'Exists' }] }, { app: 'x' }, false],
    [{ matchLabels: { app: 'x' }, matchExpressions: [{ key: 'tier', operator: 'Exists' }] }, { app: 'x', tier: 'a' }, true],
    [{}, { anything: 'at-all' }, true],
    // An operator the API server does not know selects nothing.
    [{ matchExpressions: [{ key: 'tier', operator: 'Gt', values: ['1'] }] }, { tier: '2' }, false],
  ];
  for (const [selector, labels, expected] of cases) {
    assert.is(
      allows([aggregated([selector]), piece('piece', labels), OPERATOR_BINDING]),
      expected,
      `${JSON.stringify(selector)} on ${JSON.stringify(labels)}`,
    );
  }
});

test('aggregation reaches through an aggregated ClusterRole to its pieces, and a cycle ends', () => {
  const middle = clusterRole(
    'middle',
    [],
    { aggregationRule: { clusterRoleSelectors: [{ matchLabels: { level: 'bottom' } }] } },
    { level: 'middle' },
  );
  const objects = [aggregated([{ matchLabels: { level: 'middle' } }]), middle, piece('bottom', { level: 'bottom' }), OPERATOR_BINDING];
  assert.ok(allows(objects));
  // Two aggregated ClusterRoles that select each other (and themselves): the pieces below either, once.
  const ring = (name: string) =>
    clusterRole(name, [], { aggregationRule: { clusterRoleSelectors: [{ matchLabels: { ring: 'a' } }] } }, { ring: 'a' });
  assert.not.ok(allows([ring('operator'), ring('other'), OPERATOR_BINDING]));
  assert.ok(allows([ring('operator'), ring('other'), piece('leaf', { ring: 'a' }), OPERATOR_BINDING]));
});

test('a rule for nonResourceURLs grants no resource, even with every verb', () => {
  const urls = clusterRole('urls', [{ nonResourceURLs: ['*'], verbs: ['*'] }]);
  const binding = bindTo({ kind: 'ServiceAccount', name: SA, namespace: NS }, 'urls');
  assert.not.ok(allows([urls, binding]));
  assert.not.ok(allows([urls, binding], { verb: 'get', group: '', resource: 'pods', namespace: NS }));
});

test.run();
