// What the rendered RBAC lets drainguard do, and nothing beyond it: get and
// patch on exactly the objects it guards (by resourceNames), Leases
// create/get/list/update/patch/delete (the guard renews its Lease with a patch
// and lists the other holders), Events create and Pods get in its own namespace.
// Evictions list and watch, and their status patch (the EvictionRequest responder).
// And the other way round: it can do all of that, so the guard can work. With
// the hold (deploy/examples/hold): get on ReplicaSets and get, list, watch,
// patch on its Deployment by name, list and watch on the held kinds' group; and
// every call the hold makes is allowed, as the API server's authorizer decides.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parseGuardList } from '../../src/config/guard-list.ts';
import { holdKindName, parseHoldList } from '../../src/config/hold-list.ts';
import { authorizerFor } from '../../src/check/rbac.ts';
import { type KubeObject, ofKind, render, rendered, theDeployment } from './support/manifests.ts';

const MODES = ['wrap', 'native-sidecar', 'sidecar'] as const;
/** The operator each example adds drainguard to: the hold's is in a namespace of its own. */
const operatorOf = (example: string) => render(example === 'hold' ? 'deploy/examples/hold/operator' : 'deploy/examples/operator');
const key = (o: KubeObject) => `${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`;

/** One permission: VERB on RESOURCE (GROUP) named NAME ('*' for any) in NAMESPACE ('' for cluster-wide). */
const grant = (namespace: string, group: string, resource: string, verb: string, name: string) => `${namespace}|${group}|${resource}|${verb}|${name}`;

const GUARD_RESOURCES: Record<string, { group: string; resource: string }> = {
  clusterrole: { group: 'rbac.authorization.k8s.io', resource: 'clusterroles' },
  clusterrolebinding: { group: 'rbac.authorization.k8s.io', resource: 'clusterrolebindings' },
  role: { group: 'rbac.authorization.k8s.io', resource: 'roles' },
  rolebinding: { group: 'rbac.authorization.k8s.io', resource: 'rolebindings' },
  serviceaccount: { group: '', resource: 'serviceaccounts' },
};

function envValue(deployment: KubeObject, name: string): string {
  const containers = [...deployment.spec.template.spec.containers, ...(deployment.spec.template.spec.initContainers ?? [])];
  const values = containers.flatMap((c: any) => (c.env ?? []).filter((e: any) => e.name === name).map((e: any) => e.value as string));
  assert.equal(values.length, 1, `${name} is set on exactly one container`);
  return values[0]!;
}
const guardValue = (deployment: KubeObject): string => envValue(deployment, 'DRAINGUARD_GUARD');

for (const mode of [...MODES, 'hold']) {
  const objects = rendered(mode);
  const deployment = theDeployment(objects);
  const namespace = deployment.metadata.namespace!;
  const serviceAccount = deployment.spec.template.spec.serviceAccountName as string;
  const operator = operatorOf(mode);
  const before = new Set(operator.map(key));
  // The hold example brings the operator's CRDs along; the admission policy has tests of its own below.
  const isPolicy = (o: KubeObject) => o.apiVersion.startsWith('admissionregistration.k8s.io/');
  const added = objects.filter((o) => !before.has(key(o)) && o.kind !== 'CustomResourceDefinition' && !isPolicy(o));
  const policy = objects.find((o) => o.kind === 'ValidatingAdmissionPolicy')!;
  const policyBinding = objects.find((o) => o.kind === 'ValidatingAdmissionPolicyBinding')!;
  const guard = parseGuardList(guardValue(deployment), 'DRAINGUARD_GUARD');
  const hold = parseHoldList(envValue(deployment, 'DRAINGUARD_HOLD'), 'DRAINGUARD_HOLD');

  test(`${mode}: drainguard's RBAC grants nothing beyond its list`, () => {
    const roles = added.filter((o) => o.kind === 'Role' || o.kind === 'ClusterRole');
    const bindings = added.filter((o) => o.kind === 'RoleBinding' || o.kind === 'ClusterRoleBinding');
    assert.equal(added.map((o) => o.kind).sort(), ['ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding'], 'drainguard adds RBAC objects and nothing else');

    // The bindings give drainguard's roles to the operator's ServiceAccount alone.
    for (const b of bindings) {
      assert.equal(b.subjects, [{ kind: 'ServiceAccount', name: serviceAccount, namespace }], `${key(b)} subjects`);
      const role = roles.find((r) => r.kind === b.roleRef.kind && r.metadata.name === b.roleRef.name && (r.kind === 'ClusterRole' || r.metadata.namespace === b.metadata.namespace));
      assert.ok(role, `${key(b)} binds a role drainguard added`);
      if (b.kind === 'RoleBinding') assert.equal(b.metadata.namespace, namespace);
    }

    const granted = new Set<string>();
    for (const role of roles) {
      assert.equal(role.aggregationRule, undefined);
      const scope = role.kind === 'Role' ? role.metadata.namespace! : '';
      if (role.kind === 'Role') assert.equal(scope, namespace, `${key(role)} is in the operator's namespace`);
      for (const rule of role.rules) {
        assert.equal(rule.nonResourceURLs, undefined, `${key(role)}: no non-resource URLs`);
        for (const group of rule.apiGroups) for (const resource of rule.resources) for (const verb of rule.verbs) {
          for (const name of rule.resourceNames ?? ['*']) granted.add(grant(scope, group, resource, verb, name));
        }
      }
    }

    const allowed = new Set<string>();
    for (const t of guard) {
      const { group, resource } = GUARD_RESOURCES[t.kind]!;
      if (t.namespace !== undefined) assert.equal(t.namespace, namespace, `${t.kind}/${t.namespace}/${t.name} is in drainguard's own namespace`);
      for (const verb of ['get', 'patch']) allowed.add(grant(t.namespace ?? '', group, resource, verb, t.name));
    }
    // Its own Role and RoleBinding and the ServiceAccount again in the ClusterRole, which a namespace's
    // deletion leaves: by name in any namespace (RBAC cannot say which), the admission policy's to hold.
    const self = `drainguard:${namespace}:${deployment.metadata.name}`;
    for (const t of guard.filter((x) => x.namespace === namespace && (x.kind === 'serviceaccount' || x.name === self))) {
      const { group, resource } = GUARD_RESOURCES[t.kind]!;
      for (const verb of ['get', 'patch']) allowed.add(grant('', group, resource, verb, t.name));
      // The pin of a release with no safe order (docs/guard.md): delete on the same, here and in any namespace.
      allowed.add(grant('', group, resource, 'delete', t.name));
      allowed.add(grant(namespace, group, resource, 'delete', t.name));
    }
    for (const t of guard.filter((x) => x.namespace === undefined && x.name === self)) {
      const { group, resource } = GUARD_RESOURCES[t.kind]!;
      allowed.add(grant('', group, resource, 'delete', t.name));
    }
    for (const verb of ['create', 'list', 'patch', 'delete']) allowed.add(grant(namespace, 'coordination.k8s.io', 'leases', verb, '*'));
    allowed.add(grant(namespace, '', 'events', 'create', '*'));
    allowed.add(grant(namespace, '', 'pods', 'get', '*'));
    // The EvictionRequest responder (src/kube/eviction-request.ts): the namespace's Evictions, its own status entry.
    for (const verb of ['list', 'watch']) allowed.add(grant(namespace, 'lifecycle.k8s.io', 'evictions', verb, '*'));
    allowed.add(grant(namespace, 'lifecycle.k8s.io', 'evictions/status', 'patch', '*'));
    if (hold.length > 0) {
      allowed.add(grant(namespace, 'apps', 'replicasets', 'get', '*'));
      for (const verb of ['get', 'list', 'watch', 'patch']) allowed.add(grant(namespace, 'apps', 'deployments', verb, deployment.metadata.name));
      for (const group of new Set(hold.map((k) => k.group))) allowed.add(grant('', group, '*', 'list', '*'));
      // Whether its own Namespace is being deleted (docs/namespace.md).
      allowed.add(grant('', '', 'namespaces', 'get', namespace));
    }

    assert.equal([...granted].filter((g) => !allowed.has(g)).sort(), [], 'granted beyond the list');
    assert.equal([...allowed].filter((g) => !granted.has(g)).sort(), [], 'needed but not granted');
  });

  test(`${mode}: the admission policy holds the operator's ServiceAccount to the finalizers of exactly the guarded objects${hold.length > 0 ? ' and its Deployment' : ''}`, () => {
    assert.ok(policy && policyBinding, 'a ValidatingAdmissionPolicy and its binding');
    assert.equal(policyBinding.spec, { policyName: policy.metadata.name, validationActions: ['Deny'] });
    assert.is(policy.spec.failurePolicy, 'Fail');
    assert.equal(policy.spec.matchConditions.map((c: any) => c.expression), [`request.userInfo.username == 'system:serviceaccount:' + '${namespace}' + ':' + '${serviceAccount}'`]);
    // Every rule: UPDATE (a patch is an update in admission), by name.
    const matched = new Set<string>();
    for (const rule of policy.spec.matchConstraints.resourceRules) {
      assert.equal(rule.operations, ['UPDATE']);
      for (const resource of rule.resources) for (const name of rule.resourceNames) matched.add(`${rule.apiGroups[0]}|${resource}|${name}`);
    }
    const guarded = guard.map((t) => `${GUARD_RESOURCES[t.kind]!.group}|${GUARD_RESOURCES[t.kind]!.resource}|${t.name}`);
    const held = hold.length > 0 ? [`apps|deployments|${deployment.metadata.name}`] : [];
    // Every guarded object is matched; what else is matched is a role or binding of drainguard's own name of the other kind.
    assert.equal(guarded.filter((g) => !matched.has(g)), [], 'every guarded object is matched');
    assert.ok(held.every((h) => matched.has(h)), 'the held Deployment is matched');
    const own = added.find((o) => o.kind === 'Role')!.metadata.name;
    assert.equal([...matched].filter((m) => !guarded.includes(m) && !held.includes(m)), [], `nothing else but ${own}`);
    // Kept through the uninstall, deleted last: as drainguard's own RBAC.
    for (const o of [policy, policyBinding]) {
      assert.is(o.metadata.annotations?.['helm.sh/resource-policy'], 'keep');
      assert.is(o.metadata.labels?.['drainguard.dev/uninstall'], 'last');
    }
  });

  test(`${mode}: the guard holds the operator's RBAC and ServiceAccount, and drainguard's own RBAC`, () => {
    const names = guard.map((t) => `${t.kind}/${t.namespace ? `${t.namespace}/` : ''}${t.name}`).sort();
    const own = added.map((o) => `${o.kind.toLowerCase()}/${o.metadata.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata.name}`);
    const operatorRbac = ofKind(operator, 'ClusterRole').concat(ofKind(operator, 'ClusterRoleBinding')).map((o) => `${o.kind.toLowerCase()}/${o.metadata.name}`);
    assert.equal(names, [...own, ...operatorRbac, `serviceaccount/${namespace}/${serviceAccount}`].sort());
  });
}

test('hold: the example holds its two kinds, and every call of the hold is allowed (an authorizer evaluating the rendered RBAC)', () => {
  const objects = rendered('hold');
  const deployment = theDeployment(objects);
  const namespace = deployment.metadata.namespace!;
  const name = deployment.metadata.name;
  const hold = parseHoldList(envValue(deployment, 'DRAINGUARD_HOLD'), 'DRAINGUARD_HOLD');
  assert.equal(hold.map(holdKindName), ['installations.operator.example.io', 'apiservers.operator.example.io']);
  const can = authorizerFor(objects, namespace, deployment.spec.template.spec.serviceAccountName);
  // From the pod to its Deployment (the ReplicaSet's name is any), the Deployment's watch by name and its finalizer, the listed kinds everywhere.
  const calls = [
    { verb: 'get', group: '', resource: 'pods', name: 'example-operator-5d9c7b6f4-x2x7k', namespace },
    { verb: 'get', group: 'apps', resource: 'replicasets', name: 'example-operator-5d9c7b6f4', namespace },
    ...['get', 'list', 'watch', 'patch'].map((verb) => ({ verb, group: 'apps', resource: 'deployments', name, namespace })),
    ...hold.map((k) => ({ verb: 'list', group: k.group, resource: k.plural })),
  ];
  assert.equal(calls.filter((c) => !can.allows(c)), [], 'every call allowed');
  // And nothing else of the kind: another Deployment, a delete, another group.
  const refused = [
    { verb: 'patch', group: 'apps', resource: 'deployments', name: 'another', namespace },
    { verb: 'delete', group: 'apps', resource: 'deployments', name, namespace },
    { verb: 'delete', group: 'operator.example.io', resource: 'installations', name: 'default' },
    { verb: 'list', group: 'apps', resource: 'deployments', namespace },
    { verb: 'list', group: 'example.com', resource: 'widgets' },
  ];
  assert.equal(refused.filter((c) => can.allows(c)), [], 'nothing beyond');
});

test('without the hold component DRAINGUARD_HOLD is empty: off', () => {
  for (const mode of MODES) assert.is(envValue(theDeployment(rendered(mode)), 'DRAINGUARD_HOLD'), '');
});

test.run();
