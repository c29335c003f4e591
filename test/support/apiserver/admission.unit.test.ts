// admission.ts and cel.ts through the registry, without a server: drainguard's
// policy as shipped (deploy/components/rbac/admission-policy.yaml, names
// filled) on the writes its operator makes, and the plugin's matching, CEL
// environment, failure policy and wording on small policies. contract.test.ts
// holds the same to the real API server over HTTP.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ApiError } from './errors.ts';
import type { RbacView, UserInfo } from './rbac.ts';
import { type Caller, Registry } from './registry.ts';
import { ResourceTypes } from './resources.ts';
import { type KubeObject, Store } from './store.ts';

const ADMIN: Caller = { user: { name: 'admin', groups: ['system:masters', 'system:authenticated'] } };
const OPERATOR: UserInfo = { name: 'system:serviceaccount:ns:op', groups: ['system:serviceaccounts', 'system:serviceaccounts:ns', 'system:authenticated'] };
const AS_OPERATOR: Caller = { user: OPERATOR };
const RBAC = 'rbac.authorization.k8s.io';

function setUp() {
  const store = new Store();
  const types = new ResourceTypes();
  const view: RbacView = {
    clusterRoles: () => store.list(`${RBAC}/clusterroles`),
    clusterRoleBindings: () => store.list(`${RBAC}/clusterrolebindings`),
    roles: (ns) => store.list(`${RBAC}/roles`, ns),
    roleBindings: (ns) => store.list(`${RBAC}/rolebindings`, ns),
  };
  const registry = new Registry(store, types, () => Date.now(), () => view);
  const type = (group: string, resource: string) => types.find(group, group === '' ? 'v1' : 'v1', resource)!;
  return { registry, type };
}

type Env = ReturnType<typeof setUp>;

/** The shipped policy with NAMESPACE=ns, DEPLOYMENT=web, SERVICE_ACCOUNT=op, OPERATOR_CLUSTER_ROLE(_BINDING)=operator. */
function shippedPolicy(): KubeObject {
  const rest = (fields: string[]) => fields.map((f) => `has(object.${f}) == has(oldObject.${f}) && (!has(object.${f}) || object.${f} == oldObject.${f})`).join('\n        && ');
  return {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicy',
    metadata: { name: 'drainguard.ns.web' },
    spec: {
      failurePolicy: 'Fail',
      matchConstraints: {
        resourceRules: [
          { apiGroups: [RBAC], apiVersions: ['*'], operations: ['UPDATE'], resources: ['clusterroles'], resourceNames: ['operator', 'drainguard:ns:web'] },
          { apiGroups: [RBAC], apiVersions: ['*'], operations: ['UPDATE'], resources: ['clusterrolebindings'], resourceNames: ['operator', 'drainguard:ns:web'] },
          { apiGroups: [RBAC], apiVersions: ['*'], operations: ['UPDATE'], resources: ['roles', 'rolebindings'], resourceNames: ['drainguard:ns:web'] },
          { apiGroups: [''], apiVersions: ['*'], operations: ['UPDATE'], resources: ['serviceaccounts'], resourceNames: ['op'] },
        ],
      },
      matchConditions: [{ name: 'operator-serviceaccount', expression: "request.userInfo.username == 'system:serviceaccount:' + 'ns' + ':' + 'op'" }],
      validations: [
        {
          expression: "(has(object.metadata.finalizers) ? object.metadata.finalizers : []).filter(f, !f.startsWith('drainguard.dev/holder-'))\n== (has(oldObject.metadata.finalizers) ? oldObject.metadata.finalizers : []).filter(f, !f.startsWith('drainguard.dev/holder-'))",
          message: "the operator's ServiceAccount may add or remove only drainguard.dev/holder- finalizers on this object",
        },
        { expression: rest(['metadata.labels', 'metadata.annotations', 'metadata.ownerReferences']), message: "the operator's ServiceAccount may change only metadata.finalizers of this object" },
        { expression: `!(request.resource.resource in ['clusterroles', 'roles'])\n|| (${rest(['rules', 'aggregationRule'])})`, message: "the operator's ServiceAccount may change only metadata.finalizers of this object" },
        { expression: `!(request.resource.resource in ['clusterrolebindings', 'rolebindings'])\n|| (object.roleRef == oldObject.roleRef\n&& ${rest(['subjects'])})`, message: "the operator's ServiceAccount may change only metadata.finalizers of this object" },
        { expression: `request.resource.resource != 'serviceaccounts'\n|| (${rest(['secrets', 'imagePullSecrets', 'automountServiceAccountToken'])})`, message: "the operator's ServiceAccount may change only metadata.finalizers of this object" },
        { expression: "request.resource.resource != 'deployments' || object.spec == oldObject.spec", message: "the operator's ServiceAccount may change only metadata.finalizers of this Deployment" },
      ],
    },
  };
}

const bindingOf = (policy: string, name = policy, extra: Record<string, unknown> = {}): KubeObject => ({
  apiVersion: 'admissionregistration.k8s.io/v1',
  kind: 'ValidatingAdmissionPolicyBinding',
  metadata: { name },
  spec: { policyName: policy, validationActions: ['Deny'], ...extra },
});

function install(env: Env, policy: KubeObject, binding = bindingOf(policy.metadata.name)): void {
  env.registry.create(env.type('admissionregistration.k8s.io', 'validatingadmissionpolicies'), undefined, policy, ADMIN);
  env.registry.create(env.type('admissionregistration.k8s.io', 'validatingadmissionpolicybindings'), undefined, binding, ADMIN);
}

/** The error a write throws, or undefined when it is let through. */
function refusal(write: () => unknown): ApiError | undefined {
  try {
    write();
    return undefined;
  } catch (err) {
    if (err instanceof ApiError) return err;
    throw err;
  }
}

/** The operator's world: its ServiceAccount, the ClusterRole it holds and the binding that binds it, both named `operator`. */
function operatorWorld(): Env & { patch: (body: unknown, caller?: Caller, contentType?: string) => ApiError | undefined } {
  const env = setUp();
  const crb = env.type(RBAC, 'clusterrolebindings');
  env.registry.create(env.type('', 'namespaces'), undefined, { metadata: { name: 'ns' } }, ADMIN);
  env.registry.create(env.type('', 'serviceaccounts'), 'ns', { metadata: { name: 'op' } }, ADMIN);
  env.registry.create(env.type(RBAC, 'clusterroles'), undefined, { metadata: { name: 'operator' }, rules: [{ apiGroups: [RBAC], resources: ['clusterrolebindings'], resourceNames: ['operator'], verbs: ['get', 'patch'] }] }, ADMIN);
  env.registry.create(crb, undefined, { metadata: { name: 'operator' }, roleRef: { apiGroup: RBAC, kind: 'ClusterRole', name: 'operator' }, subjects: [{ kind: 'ServiceAccount', name: 'op', namespace: 'ns' }] }, ADMIN);
  install(env, shippedPolicy());
  const patch = (body: unknown, caller = AS_OPERATOR, contentType = 'application/merge-patch+json') => refusal(() => env.registry.patch(crb, undefined, 'operator', body, contentType, caller));
  return { ...env, patch };
}

const ANYONE = { kind: 'Group', apiGroup: RBAC, name: 'system:authenticated' };
const SUBJECTS = [{ kind: 'ServiceAccount', name: 'op', namespace: 'ns' }];
const DENIED = "clusterrolebindings.rbac.authorization.k8s.io \"operator\" is forbidden: ValidatingAdmissionPolicy 'drainguard.ns.web' with binding 'drainguard.ns.web' denied request: ";
const ONLY_FINALIZERS = "the operator's ServiceAccount may change only metadata.finalizers of this object";

test('shipped policy: the operator may not add a subject to its binding; 422 Invalid, worded as kube-apiserver', () => {
  const { patch } = operatorWorld();
  const err = patch({ subjects: [...SUBJECTS, ANYONE] });
  assert.ok(err);
  assert.equal(err.toStatus(), {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: `${DENIED}${ONLY_FINALIZERS}`,
    reason: 'Invalid',
    details: { name: 'operator', group: RBAC, kind: 'clusterrolebindings', causes: [{ message: `${DENIED.slice(DENIED.indexOf('ValidatingAdmissionPolicy'))}${ONLY_FINALIZERS}` }] },
    code: 422,
  });
});

test('shipped policy: holder finalizers come and go; labels, other finalizers and a new roleRef do not', () => {
  const { patch } = operatorWorld();
  assert.is(patch({ metadata: { finalizers: ['drainguard.dev/holder-x'] } }), undefined);
  assert.is(patch({ metadata: { finalizers: null } }), undefined);
  assert.is(patch({ metadata: { labels: { a: 'b' } } })?.message, `${DENIED}${ONLY_FINALIZERS}`);
  assert.is(patch({ metadata: { annotations: { a: 'b' } } })?.code, 422);
  assert.is(patch({ metadata: { finalizers: ['example.com/other'] } })?.message, `${DENIED}the operator's ServiceAccount may add or remove only drainguard.dev/holder- finalizers on this object`);
  assert.is(patch({ metadata: { finalizers: ['drainguard.dev/holder-x', 'example.com/other'] } })?.code, 422);
  assert.is(patch({ metadata: { labels: { a: 'b' }, finalizers: ['drainguard.dev/holder-y'] } })?.code, 422, 'a finalizer does not carry a label through');
});

test('shipped policy: strategic merge patch and JSON patch are UPDATE like a merge patch', () => {
  const { patch } = operatorWorld();
  const smp = 'application/strategic-merge-patch+json';
  assert.is(patch({ metadata: { finalizers: ['drainguard.dev/holder-x'] } }, AS_OPERATOR, smp), undefined);
  assert.is(patch({ metadata: { '$deleteFromPrimitiveList/finalizers': ['drainguard.dev/holder-x'] } }, AS_OPERATOR, smp), undefined);
  assert.is(patch({ subjects: [...SUBJECTS, ANYONE] }, AS_OPERATOR, smp)?.code, 422);
  assert.is(patch([{ op: 'add', path: '/subjects/-', value: ANYONE }], AS_OPERATOR, 'application/json-patch+json')?.code, 422);
});

test('shipped policy: the admin is not the operator (matchConditions), and other objects are not guarded (resourceNames)', () => {
  const env = operatorWorld();
  assert.is(env.patch({ subjects: [...SUBJECTS, ANYONE] }, ADMIN), undefined);
  assert.is(env.patch({ subjects: SUBJECTS }, ADMIN), undefined);
  const crb = env.type(RBAC, 'clusterrolebindings');
  env.registry.create(crb, undefined, { metadata: { name: 'other' }, roleRef: { apiGroup: RBAC, kind: 'ClusterRole', name: 'operator' }, subjects: SUBJECTS }, ADMIN);
  const other = refusal(() => env.registry.patch(crb, undefined, 'other', { metadata: { labels: { a: 'b' } } }, 'application/merge-patch+json', AS_OPERATOR));
  assert.is(other, undefined, 'a binding the policy does not name');
  assert.is(refusal(() => env.registry.delete(crb, undefined, 'operator', {}, AS_OPERATOR)), undefined, 'DELETE is not among the operations');
});

test('shipped policy with the hold (the chart adds apps/deployments by name): finalizers only; the status subresource is not matched', () => {
  const env = setUp();
  env.registry.create(env.type('', 'namespaces'), undefined, { metadata: { name: 'ns' } }, ADMIN);
  const withHold = shippedPolicy();
  withHold.spec.matchConstraints.resourceRules.push({ apiGroups: ['apps'], apiVersions: ['*'], operations: ['UPDATE'], resources: ['deployments'], resourceNames: ['web'] });
  install(env, withHold);
  const d = env.type('apps', 'deployments');
  const spec = { selector: { matchLabels: { a: 'b' } }, template: { metadata: { labels: { a: 'b' } }, spec: { containers: [{ name: 'c', image: 'x' }] } } };
  env.registry.create(d, 'ns', { metadata: { name: 'web' }, spec }, ADMIN);
  const patch = (body: unknown, subresource?: string) => refusal(() => env.registry.patch(d, 'ns', 'web', body, 'application/merge-patch+json', AS_OPERATOR, subresource));
  assert.is(patch({ metadata: { finalizers: ['drainguard.dev/holder-p'] } }), undefined);
  assert.is(patch({ spec: { replicas: 3 } })?.message, `deployments.apps "web" is forbidden: ValidatingAdmissionPolicy 'drainguard.ns.web' with binding 'drainguard.ns.web' denied request: the operator's ServiceAccount may change only metadata.finalizers of this Deployment`);
  assert.is(patch({ status: { replicas: 1 } }, 'status'), undefined, 'deployments/status is another resource to the rules');
  assert.is(patch({ metadata: { finalizers: null } }), undefined);
});

// ---- the plugin on small policies --------------------------------------------------------

const CM = (name: string, extra: Record<string, unknown> = {}) => ({ metadata: { name, ...extra } });

function policy(name: string, spec: Record<string, unknown>): KubeObject {
  return {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicy',
    metadata: { name },
    spec: { matchConstraints: { resourceRules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['*'], resources: ['configmaps'] }] }, ...spec },
  };
}

function configMaps(spec: Record<string, unknown>, binding: Record<string, unknown> = {}) {
  const env = setUp();
  env.registry.create(env.type('', 'namespaces'), undefined, { metadata: { name: 'ns', labels: { team: 'a' } } }, ADMIN);
  env.registry.create(env.type('', 'namespaces'), undefined, { metadata: { name: 'other' } }, ADMIN);
  install(env, policy('p', spec), bindingOf('p', 'b', binding));
  const cm = env.type('', 'configmaps');
  return {
    ...env,
    create: (obj: unknown, ns = 'ns') => refusal(() => env.registry.create(cm, ns, obj, ADMIN)),
    update: (name: string, change: (o: KubeObject) => void, ns = 'ns') =>
      refusal(() => {
        const o = env.registry.get(cm, ns, name);
        change(o);
        env.registry.update(cm, ns, name, o, ADMIN);
      }),
    remove: (name: string, ns = 'ns') => refusal(() => env.registry.delete(cm, ns, name, {}, ADMIN)),
  };
}

test('CEL: has() of an absent field is false; lists and maps compare deeply; numbers are int64; the strings extension', () => {
  const { create } = configMaps({
    validations: [
      { expression: '!has(object.metadata.labels) || object.metadata.labels == {"a": "b"}' },
      { expression: '!has(object.data) || object.data.keys().size() >= 0' },
      { expression: "!has(object.metadata.annotations) || object.metadata.annotations['n'].split(',').map(s, s.lowerAscii()) == ['x', 'y']" },
      { expression: '!has(object.binaryData) || object.binaryData.n + 1 == 3' },
    ],
  });
  assert.is(create(CM('plain')), undefined);
  assert.is(create(CM('labelled', { labels: { a: 'b' } })), undefined);
  assert.is(create(CM('mislabelled', { labels: { a: 'c' } }))?.message, `configmaps "mislabelled" is forbidden: ValidatingAdmissionPolicy 'p' with binding 'b' denied request: failed expression: !has(object.metadata.labels) || object.metadata.labels == {"a": "b"}`);
  assert.is(create(CM('split', { annotations: { n: 'X,Y' } })), undefined);
  assert.is(create({ ...CM('two'), binaryData: { n: 2 } }), undefined, 'whole numbers are int, as in Go’s unstructured objects');
});

test('CEL: object and oldObject by operation; request; namespaceObject; variables', () => {
  const { create, update, remove } = configMaps({
    variables: [
      { name: 'who', expression: 'request.userInfo.username' },
      { name: 'op', expression: "request.operation + ':' + variables.who" },
    ],
    validations: [
      { expression: "request.operation != 'CREATE' || (oldObject == null && object.metadata.name == request.name)" },
      { expression: "request.operation != 'DELETE' || (object == null && oldObject.metadata.name == request.name)" },
      { expression: "request.operation != 'UPDATE' || (object.data.v == '2' && oldObject.data.v == '1')" },
      { expression: "request.resource.group == '' && request.resource.version == 'v1' && request.resource.resource == 'configmaps' && request.kind.kind == 'ConfigMap' && !has(request.subResource)" },
      { expression: "request.namespace == 'ns' && namespaceObject.metadata.labels.team == 'a' && request.userInfo.groups.exists(g, g == 'system:masters')" },
      { expression: "variables.op.startsWith(request.operation + ':admin')" },
    ],
  });
  assert.is(create({ ...CM('c'), data: { v: '1' } }), undefined);
  assert.is(update('c', (o) => (o.data.v = '2')), undefined);
  assert.is(remove('c'), undefined);
});

test('CEL errors: failurePolicy Fail refuses with the expression and its error; Ignore lets the request through', () => {
  const failing = configMaps({ validations: [{ expression: 'object.metadata.labels.a == "b"' }] });
  assert.is(
    failing.create(CM('x'))?.message,
    `configmaps "x" is forbidden: ValidatingAdmissionPolicy 'p' with binding 'b' denied request: expression 'object.metadata.labels.a == "b"' resulted in error: no such key: labels`,
  );
  const ignoring = configMaps({ failurePolicy: 'Ignore', validations: [{ expression: 'object.metadata.labels.a == "b"' }] });
  assert.is(ignoring.create(CM('x')), undefined);
  const condition = configMaps({ matchConditions: [{ name: 'c', expression: 'object.metadata.labels.a == "b"' }], validations: [{ expression: 'false' }] });
  assert.match(condition.create(CM('x'))?.message ?? '', "denied request: expression 'object.metadata.labels.a == \"b\"' resulted in error: no such key: labels");
  const variable = configMaps({ variables: [{ name: 'bad', expression: 'object.nope' }], validations: [{ expression: 'true || variables.bad' }, { expression: 'variables.bad == 1' }] });
  assert.match(variable.create(CM('x'))?.message ?? '', "denied request: expression 'variables.bad == 1' resulted in error: expression 'object.nope' resulted in error: no such key: nope");
});

test('validations: message, messageExpression, reason; matchConditions false skips; only the Deny action refuses', () => {
  const worded = configMaps({
    validations: [{ expression: 'false', messageExpression: "'no ' + object.metadata.name", message: 'unused', reason: 'Forbidden' }],
  });
  const err = worded.create(CM('x'));
  assert.equal([err?.code, err?.reason, err?.message], [403, 'Forbidden', `configmaps "x" is forbidden: ValidatingAdmissionPolicy 'p' with binding 'b' denied request: no x`]);
  assert.is(configMaps({ validations: [{ expression: 'false', message: ' plain ' }] }).create(CM('x'))?.message.endsWith('denied request: plain'), true);
  assert.is(configMaps({ matchConditions: [{ name: 'never', expression: 'false' }], validations: [{ expression: 'false' }] }).create(CM('x')), undefined);
  assert.is(configMaps({ validations: [{ expression: 'false' }] }, { validationActions: ['Warn', 'Audit'] }).create(CM('x')), undefined);
});

test('matching: operations, names, subresources, scope, namespace and object selectors, excluded rules, the binding’s matchResources', () => {
  const onlyUpdate = configMaps({ matchConstraints: { resourceRules: [{ apiGroups: [''], apiVersions: ['*'], operations: ['UPDATE'], resources: ['configmaps'], resourceNames: ['guarded'] }] }, validations: [{ expression: 'false' }] });
  assert.is(onlyUpdate.create(CM('guarded')), undefined);
  assert.is(onlyUpdate.create(CM('free')), undefined);
  assert.is(onlyUpdate.update('free', (o) => (o.data = { a: '1' })), undefined);
  assert.is(onlyUpdate.update('guarded', (o) => (o.data = { a: '1' }))?.code, 422);
  assert.is(onlyUpdate.update('guarded', () => {})?.code, 422, 'a write that changes nothing is admitted all the same');

  const rules = (resources: string[], extra: Record<string, unknown> = {}) => ({ resourceRules: [{ apiGroups: ['*'], apiVersions: ['*'], operations: ['*'], resources, ...extra }] });
  const selecting = (matchConstraints: unknown, binding: Record<string, unknown> = {}) => configMaps({ matchConstraints, validations: [{ expression: 'false' }] }, binding);
  assert.is(selecting(rules(['*'])).create(CM('x'))?.code, 422, '"*" is every resource');
  assert.is(selecting(rules(['configmaps/status'])).create(CM('x')), undefined, 'a rule for a subresource only');
  assert.is(selecting(rules(['configmaps/*'])).create(CM('x'))?.code, 422, '"/*" is the resource and all its subresources (rules.Matcher)');
  assert.is(selecting(rules(['*/*'])).create(CM('x'))?.code, 422);
  assert.is(selecting(rules(['configmaps'], { scope: 'Cluster' })).create(CM('x')), undefined);
  assert.is(selecting(rules(['configmaps'], { scope: 'Namespaced' })).create(CM('x'))?.code, 422);
  assert.is(selecting({ ...rules(['configmaps']), namespaceSelector: { matchLabels: { team: 'a' } } }).create(CM('x'), 'other'), undefined);
  assert.is(selecting({ ...rules(['configmaps']), namespaceSelector: { matchExpressions: [{ key: 'team', operator: 'In', values: ['a'] }] } }).create(CM('x'))?.code, 422);
  assert.is(selecting({ ...rules(['configmaps']), objectSelector: { matchLabels: { guard: 'yes' } } }).create(CM('x')), undefined);
  assert.is(selecting({ ...rules(['configmaps']), objectSelector: { matchLabels: { guard: 'yes' } } }).create(CM('x', { labels: { guard: 'yes' } }))?.code, 422);
  assert.is(selecting({ ...rules(['configmaps']), excludeResourceRules: [{ apiGroups: [''], apiVersions: ['*'], operations: ['*'], resources: ['configmaps'], resourceNames: ['x'] }] }).create(CM('x')), undefined);
  assert.is(selecting(rules(['configmaps']), { matchResources: { objectSelector: { matchLabels: { guard: 'yes' } } } }).create(CM('x')), undefined, 'a binding narrows its policy');

  const deployments = setUp();
  install(deployments, policy('p', { matchConstraints: rules(['deployments']), validations: [{ expression: 'false' }] }));
  deployments.registry.create(deployments.type('', 'namespaces'), undefined, { metadata: { name: 'ns' } }, ADMIN);
  const d = deployments.type('apps', 'deployments');
  const spec = { selector: { matchLabels: { a: 'b' } }, template: { metadata: { labels: { a: 'b' } }, spec: { containers: [{ name: 'c', image: 'x' }] } } };
  assert.is(refusal(() => deployments.registry.create(d, 'ns', { metadata: { name: 'web' }, spec }, ADMIN))?.code, 422);
});

test('a Namespace: its own name as request.namespace, no namespaceObject, selected by its own labels', () => {
  const env = setUp();
  install(env, policy('p', {
    matchConstraints: { namespaceSelector: { matchLabels: { guarded: 'yes' } }, resourceRules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE', 'UPDATE'], resources: ['namespaces'] }] },
    validations: [{ expression: 'request.namespace == request.name && namespaceObject == null && !has(object.metadata.annotations)', message: 'no annotations' }],
  }));
  const ns = env.type('', 'namespaces');
  assert.is(refusal(() => env.registry.create(ns, undefined, { metadata: { name: 'free', annotations: { a: 'b' } } }, ADMIN)), undefined);
  assert.is(refusal(() => env.registry.create(ns, undefined, { metadata: { name: 'held', labels: { guarded: 'yes' } } }, ADMIN)), undefined);
  assert.is(refusal(() => env.registry.patch(ns, undefined, 'held', { metadata: { annotations: { a: 'b' } } }, 'application/merge-patch+json', ADMIN))?.message, `namespaces "held" is forbidden: ValidatingAdmissionPolicy 'p' with binding 'p' denied request: no annotations`);
});

test('status subresource: a rule must name deployments/status', () => {
  const env = setUp();
  env.registry.create(env.type('', 'namespaces'), undefined, { metadata: { name: 'ns' } }, ADMIN);
  const d = env.type('apps', 'deployments');
  const spec = { selector: { matchLabels: { a: 'b' } }, template: { metadata: { labels: { a: 'b' } }, spec: { containers: [{ name: 'c', image: 'x' }] } } };
  env.registry.create(d, 'ns', { metadata: { name: 'web' }, spec }, ADMIN);
  const rule = (resources: string[]) => ({ resourceRules: [{ apiGroups: ['apps'], apiVersions: ['v1'], operations: ['UPDATE'], resources }] });
  install(env, policy('main', { matchConstraints: rule(['deployments']), validations: [{ expression: 'has(request.subResource)', message: 'main' }] }));
  install(env, policy('status', { matchConstraints: rule(['deployments/status']), validations: [{ expression: '!has(request.subResource)', message: 'status' }] }));
  const status = refusal(() => env.registry.patch(d, 'ns', 'web', { status: { replicas: 1 } }, 'application/merge-patch+json', ADMIN, 'status'));
  assert.match(status?.message ?? '', "ValidatingAdmissionPolicy 'status' with binding 'status' denied request: status");
  const main = refusal(() => env.registry.patch(d, 'ns', 'web', { metadata: { labels: { a: 'b' } } }, 'application/merge-patch+json', ADMIN));
  assert.match(main?.message ?? '', "ValidatingAdmissionPolicy 'main' with binding 'main' denied request: main");
});

test('the policy types: defaults; refused when an expression does not parse, or with paramKind and paramRef the stand-in does not model', () => {
  const env = setUp();
  const policies = env.type('admissionregistration.k8s.io', 'validatingadmissionpolicies');
  const bindings = env.type('admissionregistration.k8s.io', 'validatingadmissionpolicybindings');
  const created = env.registry.create(policies, undefined, policy('p', { validations: [{ expression: 'true' }] }), ADMIN);
  assert.equal([created.spec.failurePolicy, created.spec.matchConstraints.matchPolicy, created.spec.matchConstraints.namespaceSelector, created.spec.matchConstraints.resourceRules[0].scope, created.metadata.generation], ['Fail', 'Equivalent', {}, '*', 1]);
  const broken = refusal(() => env.registry.create(policies, undefined, policy('broken', { validations: [{ expression: '1 +' }] }), ADMIN));
  assert.is(broken?.code, 422);
  assert.match(broken?.message ?? '', 'ValidatingAdmissionPolicy.admissionregistration.k8s.io "broken" is invalid: spec.validations[0].expression: Invalid value: "1 +": compilation failed: ERROR: ');
  const typo = refusal(() => env.registry.create(policies, undefined, policy('typo', { validations: [{ expression: "object.data == oldobject.data || [1].all(x, x > 0) || params == null" }] }), ADMIN));
  assert.is(
    typo?.message,
    'ValidatingAdmissionPolicy.admissionregistration.k8s.io "typo" is invalid: spec.validations[0].expression: Invalid value: "object.data == oldobject.data || [1].all(x, x > 0) || params == null": compilation failed: ' +
      "ERROR: <input>:1:16: undeclared reference to 'oldobject' (in container '')\n | object.data == oldobject.data || [1].all(x, x > 0) || params == null\n | ...............^\n" +
      "ERROR: <input>:1:55: undeclared reference to 'params' (in container '')\n | object.data == oldobject.data || [1].all(x, x > 0) || params == null\n | ......................................................^",
    'params is declared only with a paramKind',
  );
  assert.match(refusal(() => env.registry.create(policies, undefined, policy('params', { paramKind: { apiVersion: 'v1', kind: 'ConfigMap' }, validations: [{ expression: 'true' }] }), ADMIN))?.message ?? '', 'spec.paramKind: Forbidden: the stand-in API server does not model it');
  assert.match(refusal(() => env.registry.create(bindings, undefined, bindingOf('p', 'b', { paramRef: { name: 'x' } }), ADMIN))?.message ?? '', 'spec.paramRef: Forbidden');
  assert.match(refusal(() => env.registry.create(bindings, undefined, { metadata: { name: 'b' }, spec: { policyName: 'p' } }, ADMIN))?.message ?? '', 'spec.validationActions: Required value');
  // Writes of the admission configuration itself are never held by a policy.
  install(env, policy('all', { matchConstraints: { resourceRules: [{ apiGroups: ['*'], apiVersions: ['*'], operations: ['*'], resources: ['*'] }] }, validations: [{ expression: 'false' }] }));
  assert.is(refusal(() => env.registry.delete(bindings, undefined, 'all', {}, ADMIN)), undefined);
});

test.run();
