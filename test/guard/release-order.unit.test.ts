// The release order: every finalizer removal authorised by objects that no
// earlier removal can take away, and the removal that ends drainguard's access
// (its ServiceAccount's) last and alone. Checked against a model of the API
// server below, not against the planner's own reasoning: a removal from an
// object being deleted deletes it, a deleted role or binding grants nothing,
// a deleted ServiceAccount's token is refused, and the removals of one wave
// may take effect in any order (the authorizer's lag is no help to count on).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { type GuardTarget, guardTargetKey, parseGuardList } from '../../src/config/guard-list.ts';
import { type Held, type Identity, planRelease } from '../../src/guard/release-order.ts';

const me: Identity = { namespace: 'op', serviceAccount: 'op' };
const sa = [{ kind: 'ServiceAccount', name: 'op', namespace: 'op' }];
const rule = (resources: string[], names: string[], group = 'rbac.authorization.k8s.io') => ({
  apiGroups: [group],
  resources,
  resourceNames: names,
  verbs: ['get', 'patch'],
});

type Spec = Record<string, unknown>;
interface Obj extends Held {
  readonly key: string;
}

/** Objects from `guard key: spec`; those named in `deleting` are being deleted. */
function objects(specs: Record<string, Spec>, deleting: readonly string[] = []): Obj[] {
  return parseGuardList(Object.keys(specs).join(','), 'G').map((target, i) => {
    const key = guardTargetKey(target);
    return { target, key, object: { metadata: { name: target.name }, ...Object.values(specs)[i] }, deleting: deleting.includes(key) };
  });
}

/** The operator's RBAC (no rights of drainguard's), drainguard's own RBAC as the chart and components ship it, the ServiceAccount. */
const OPERATOR: Record<string, Spec> = {
  'clusterrole/manager': { rules: [rule(['configmaps'], [], '')] },
  'clusterrolebinding/manager': { roleRef: { kind: 'ClusterRole', name: 'manager' }, subjects: sa },
};
const OWN_BEFORE: Record<string, Spec> = {
  'clusterrole/dg': { rules: [rule(['clusterroles'], ['manager', 'dg']), rule(['clusterrolebindings'], ['manager', 'dg'])] },
  'clusterrolebinding/dg': { roleRef: { kind: 'ClusterRole', name: 'dg' }, subjects: sa },
  'role/op/dg': { rules: [rule(['serviceaccounts'], ['op'], ''), rule(['roles', 'rolebindings'], ['dg'])] },
  'rolebinding/op/dg': { roleRef: { kind: 'Role', name: 'dg' }, subjects: sa },
};
/** As shipped: the ClusterRole also names drainguard's own Role and RoleBinding. */
const OWN: Record<string, Spec> = {
  'clusterrole/dg': {
    rules: [
      rule(['clusterroles'], ['manager', 'dg']),
      rule(['clusterrolebindings'], ['manager', 'dg']),
      rule(['roles', 'rolebindings'], ['dg']),
      rule(['serviceaccounts'], ['op'], ''),
    ],
  },
  'clusterrolebinding/dg': { roleRef: { kind: 'ClusterRole', name: 'dg' }, subjects: sa },
  'role/op/dg': { rules: [rule(['serviceaccounts'], ['op'], ''), rule(['roles', 'rolebindings'], ['dg'])] },
  'rolebinding/op/dg': { roleRef: { kind: 'Role', name: 'dg' }, subjects: sa },
};
const ACCOUNT: Record<string, Spec> = { 'serviceaccount/op/op': {} };
/** What `helm uninstall` deletes when drainguard's own RBAC is kept. */
const UNINSTALL = ['clusterrole/manager', 'clusterrolebinding/manager', 'serviceaccount/op/op'];

const RBAC_KINDS: Record<string, GuardTarget['kind']> = { ClusterRole: 'clusterrole', Role: 'role' };

/**
 * The removals the model can refuse under `waves`: each is checked with every earlier wave and
 * every other removal of its own wave taken effect (the worst order within a wave). `others`
 * grant too but are not held (nothing deletes them).
 */
function refusable(waves: readonly (readonly Obj[])[], others: readonly Obj[] = []): string[] {
  const all = [...waves.flat(), ...others];
  const refused: string[] = [];
  waves.forEach((wave, w) => {
    for (const r of wave) {
      const taken = new Set([...waves.slice(0, w).flat(), ...wave.filter((x) => x !== r)].filter((x) => x.deleting).map((x) => x.key));
      const present = (o: Obj) => !taken.has(o.key);
      const token = all
        .filter((o) => o.target.kind === 'serviceaccount' && o.target.namespace === me.namespace && o.target.name === me.serviceAccount)
        .every(present);
      const allowed = all.some((b) => {
        if (!present(b) || (b.target.kind !== 'clusterrolebinding' && b.target.kind !== 'rolebinding')) return false;
        const spec = b.object as unknown as { roleRef: { kind: string; name: string }; subjects: typeof sa };
        if (!spec.subjects.some((s) => s.name === me.serviceAccount && s.namespace === me.namespace)) return false;
        const role = all.find(
          (o) =>
            present(o) &&
            o.target.kind === RBAC_KINDS[spec.roleRef.kind] &&
            o.target.name === spec.roleRef.name &&
            (spec.roleRef.kind === 'ClusterRole' || o.target.namespace === b.target.namespace),
        );
        const inScope = b.target.kind === 'clusterrolebinding' || r.target.namespace === b.target.namespace;
        const resource = {
          clusterrole: 'clusterroles',
          clusterrolebinding: 'clusterrolebindings',
          role: 'roles',
          rolebinding: 'rolebindings',
          serviceaccount: 'serviceaccounts',
          deployment: 'deployments',
          lease: 'leases',
        }[r.target.kind];
        return (
          inScope &&
          ((role?.object as { rules: ReturnType<typeof rule>[] } | undefined)?.rules ?? []).some(
            (x) => x.resources.includes(resource) && x.resourceNames.includes(r.target.name),
          )
        );
      });
      if (!token || !allowed) refused.push(r.key);
    }
  });
  return refused;
}

const keys = (waves: readonly (readonly Obj[])[]) => waves.map((w) => w.map((o) => o.key).sort());

test("the shipped layout at an uninstall: drainguard's own RBAC kept, so everything in one wave and the ServiceAccount last, alone", () => {
  const held = objects({ ...OPERATOR, ...OWN, ...ACCOUNT }, UNINSTALL);
  const plan = planRelease(held, me);
  assert.equal(keys(plan.waves), [
    ['clusterrole/dg', 'clusterrole/manager', 'clusterrolebinding/dg', 'clusterrolebinding/manager', 'role/op/dg', 'rolebinding/op/dg'],
    ['serviceaccount/op/op'],
  ]);
  assert.is(plan.last, 1);
  assert.equal(plan.racing, []);
  assert.equal(refusable(plan.waves), []);
});

test("control: the same objects, drainguard's own RBAC deleted too (today's uninstall): every order leaves a removal to be refused", () => {
  const held = objects({ ...OPERATOR, ...OWN, ...ACCOUNT }, Object.keys({ ...OPERATOR, ...OWN, ...ACCOUNT }));
  const plan = planRelease(held, me);
  // What the plan can still do: the operator's pair first, then the cycle at once, and say so.
  const own = ['clusterrole/dg', 'clusterrolebinding/dg', 'role/op/dg', 'rolebinding/op/dg', 'serviceaccount/op/op'];
  assert.equal(keys(plan.waves), [['clusterrole/manager', 'clusterrolebinding/manager'], own]);
  assert.equal(
    plan.racing.map((g) => g.map((o) => o.key).sort()),
    [own],
  );
  assert.equal(refusable(plan.waves).sort(), [
    'clusterrole/dg',
    'clusterrolebinding/dg',
    'role/op/dg',
    'rolebinding/op/dg',
    'serviceaccount/op/op',
  ]);
  // No other order does better: each of drainguard's roles and bindings authorises its partner's removal alone.
  const one = (key: string) => held.filter((o) => o.key === key);
  const serial = [
    'clusterrole/manager',
    'clusterrolebinding/manager',
    'clusterrolebinding/dg',
    'clusterrole/dg',
    'rolebinding/op/dg',
    'role/op/dg',
    'serviceaccount/op/op',
  ].map(one);
  assert.ok(refusable(serial).length > 0);
});

test('control: the ServiceAccount in a wave with others (the release before) can take their token away', () => {
  const held = objects({ ...OPERATOR, ...OWN, ...ACCOUNT }, UNINSTALL);
  const together = [held.filter((o) => o.key.includes('manager')), held.filter((o) => !o.key.includes('manager'))];
  assert.equal(refusable(together).sort(), ['clusterrole/dg', 'clusterrolebinding/dg', 'role/op/dg', 'rolebinding/op/dg']);
});

/** What a namespace's deletion deletes at once where pods do not go first (1.30–1.32): the namespaced objects. */
const NAMESPACE_DELETION = ['role/op/dg', 'rolebinding/op/dg', 'serviceaccount/op/op'];

test("a namespace deletion, everything at once: drainguard's own Role and binding go with it, and its ClusterRole, which stays, releases them in any order", () => {
  const held = objects({ ...OPERATOR, ...OWN, ...ACCOUNT }, NAMESPACE_DELETION);
  const plan = planRelease(held, me);
  assert.equal(plan.racing, []);
  assert.equal(keys(plan.waves).at(-1), ['serviceaccount/op/op']);
  assert.equal(refusable(plan.waves), []);
});

test('control: the same with the ClusterRole as it was (without its own Role and binding): they race, and one may be refused', () => {
  const held = objects({ ...OPERATOR, ...OWN_BEFORE, ...ACCOUNT }, NAMESPACE_DELETION);
  const plan = planRelease(held, me);
  assert.equal(
    plan.racing.map((g) => g.map((o) => o.key).sort()),
    [['role/op/dg', 'rolebinding/op/dg', 'serviceaccount/op/op']],
  );
  assert.equal(refusable(plan.waves).sort(), ['role/op/dg', 'rolebinding/op/dg', 'serviceaccount/op/op']);
});

test('a rolling update: nothing is being deleted, so nothing can be taken away: one wave', () => {
  const plan = planRelease(objects({ ...OPERATOR, ...OWN, ...ACCOUNT }), me);
  assert.is(plan.waves.length, 1);
  assert.is(plan.last, undefined);
  assert.equal(plan.racing, []);
});

test("drainguard's own RBAC kept but not guarded: the operator's objects, then the ServiceAccount", () => {
  const held = objects({ ...OPERATOR, ...ACCOUNT }, UNINSTALL);
  const plan = planRelease(held, me);
  assert.equal(keys(plan.waves), [['clusterrole/manager', 'clusterrolebinding/manager'], ['serviceaccount/op/op']]);
  assert.equal(refusable(plan.waves, objects(OWN)), []);
});

test("an operator's role that grants drainguard too (a wildcard), being deleted: the kept grant still makes it safe", () => {
  const wildcard = { rules: [{ apiGroups: ['*'], resources: ['*'], resourceNames: [], verbs: ['*'] }] };
  const held = objects({ ...OPERATOR, 'clusterrole/manager': wildcard, ...OWN, ...ACCOUNT }, UNINSTALL);
  const plan = planRelease(held, me);
  assert.equal(
    plan.waves.map((w) => w.length),
    [6, 1],
  );
  assert.equal(plan.racing, []);
  assert.equal(refusable(plan.waves), []);
});

test('an object that could not be read is taken for one being deleted', () => {
  // With drainguard's RBAC as it was, where only its Role authorised the ServiceAccount's removal.
  const held = objects({ ...OPERATOR, ...OWN_BEFORE, ...ACCOUNT }, [...UNINSTALL, 'rolebinding/op/dg']);
  const plan = planRelease(held, me);
  // The binding that authorises the ServiceAccount's removal may be going: the two cannot be ordered.
  assert.equal(
    plan.racing.map((g) => g.map((o) => o.key).sort()),
    [['rolebinding/op/dg', 'serviceaccount/op/op']],
  );
});

test("a binding of another ServiceAccount grants drainguard nothing; without drainguard's own name, every one in its namespace may be its own", () => {
  const held = objects(
    {
      'clusterrole/other': { rules: [rule(['clusterroles'], ['other'])] },
      'clusterrolebinding/other': {
        roleRef: { kind: 'ClusterRole', name: 'other' },
        subjects: [{ kind: 'ServiceAccount', name: 'someone', namespace: 'op' }],
      },
      'serviceaccount/op/op': {},
    },
    ['clusterrole/other', 'clusterrolebinding/other', 'serviceaccount/op/op'],
  );
  assert.equal(keys(planRelease(held, me).waves), [['clusterrole/other', 'clusterrolebinding/other'], ['serviceaccount/op/op']]);
  // Then the binding lets it patch the role (and not itself): the role goes before the binding.
  assert.equal(keys(planRelease(held, { namespace: 'op' }).waves), [
    ['clusterrole/other'],
    ['clusterrolebinding/other'],
    ['serviceaccount/op/op'],
  ]);
});

test('a RoleBinding grants only in its namespace; groups of service accounts count', () => {
  const held = objects(
    {
      'clusterrole/edit': { rules: [{ apiGroups: ['*'], resources: ['*'], verbs: ['*'] }] },
      'rolebinding/other/edit': {
        roleRef: { kind: 'ClusterRole', name: 'edit' },
        subjects: [{ kind: 'Group', name: 'system:serviceaccounts:op' }],
      },
      'role/op/r': {},
      'role/other/r': {},
    },
    ['clusterrole/edit', 'rolebinding/other/edit', 'role/op/r', 'role/other/r'],
  );
  // role/op/r is out of the binding's reach; role/other/r is in it, and so is the binding itself.
  assert.equal(keys(planRelease(held, me).waves), [['role/op/r', 'role/other/r'], ['rolebinding/other/edit'], ['clusterrole/edit']]);
});

test.run();
