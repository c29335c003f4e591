// The shapes operator charts come in (test/helm/fixtures/charts/, one chart
// each), put through docs/helm.md's steps to the letter (support/shapes.ts), in
// every mode, through the real helm: the render succeeds, or stops naming the
// drainguard.* value that fixes it; DRAINGUARD_GUARD holds exactly what the
// test computes from the chart's plain render (the ServiceAccount, every
// binding of it in any namespace, the roles of the release they bind, the
// ClusterRoles aggregated into a guarded one); and the documented
// `helm template … | drainguard check -n NS -` (the built executable) exits 0.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { type KubeObject, ofKind, parseObjects, problems } from '../deploy/support/manifests.ts';
import { helm } from '../support/helm.ts';
import { MODES, cleanupCharts, templateError, templateText } from './support/charts.ts';
import { adoptShape, check, groundTruth, guardOf, plainRender } from './support/shapes.ts';

const NS = 'ops';
const RELEASE = 'shape';
test.after(cleanupCharts);

interface Rendered {
  readonly text: string;
  readonly objects: KubeObject[];
}

function render(chart: string, set: Record<string, unknown>): Rendered {
  const text = templateText(chart, { namespace: NS, release: RELEASE, set });
  return { text, objects: parseObjects(text) };
}

const deploymentOf = (objects: KubeObject[], name: string): KubeObject => {
  const found = ofKind(objects, 'Deployment').find((d) => d.metadata.name === name);
  assert.ok(found, `the Deployment ${name}`);
  return found!;
};
const containerOf = (d: KubeObject, name: string): any => d.spec.template.spec.containers.find((c: any) => c.name === name);
const drainguardContainer = (d: KubeObject, mode: string): any =>
  (mode === 'native-sidecar' ? d.spec.template.spec.initContainers : d.spec.template.spec.containers).find(
    (c: any) => c.name === 'drainguard',
  );

/** Every Deployment of the plain render guarded as the plain render says, and check passing (last: see assertChecked). */
function assertGuarded(shape: string, { text, objects }: Rendered, set: Record<string, unknown> = {}): void {
  const plain = plainRender(shape, RELEASE, NS, Object.fromEntries(Object.entries(set).filter(([k]) => !k.startsWith('drainguard.'))));
  const deployments = ofKind(plain, 'Deployment');
  assert.ok(deployments.length > 0);
  for (const d of deployments)
    assert.equal(guardOf(deploymentOf(objects, d.metadata.name)), groundTruth(plain, NS, d), `the guard of ${d.metadata.name}`);
  assertChecked(text);
}

/** The documented `helm template … | drainguard check -n NS -`: exit 0 on a complete guard. */
function assertChecked(text: string): void {
  const checked = check(text, NS);
  assert.is(checked.code, 0, `drainguard check -n ${NS} -: ${checked.out}`);
}

/** The same line on a render whose guard leaves WHAT out: exit 1, naming it. */
function assertCheckFinds(chart: string, set: Record<string, unknown>, what: string): void {
  const checked = check(templateText(chart, { namespace: NS, release: RELEASE, set }), NS);
  assert.is(checked.code, 1, `drainguard check -n ${NS} - on a guard without ${what}: ${checked.out}`);
  assert.match(checked.out, what);
}

const fails = (chart: string, set: Record<string, unknown>): string =>
  templateError(chart, { namespace: NS, release: RELEASE, set }) ?? '(rendered)';

// 1
const builtin = adoptShape('builtin-role');
for (const mode of MODES) {
  test(`builtin-role, ${mode}: the bindings to view and edit are guarded, the cluster's roles are not`, () => {
    const r = render(builtin, { 'drainguard.mode': mode });
    const guard = guardOf(deploymentOf(r.objects, `${RELEASE}-op`));
    assert.ok(
      guard.includes(`clusterrolebinding/${RELEASE}-op-view`) && guard.includes(`rolebinding/${NS}/${RELEASE}-op-edit`),
      guard.join(','),
    );
    assert.not.ok(
      guard.some((g) => /^clusterrole\/(view|edit)$/.test(g)),
      guard.join(','),
    );
    assertGuarded('builtin-role', r);
  });
}

test('builtin-role: drainguard check finds a guard that leaves the binding to view out', () => {
  assertCheckFinds(
    builtin,
    { 'drainguard.guard.clusterRoles': [`${RELEASE}-op`], 'drainguard.guard.clusterRoleBindings': [`${RELEASE}-op`] },
    `${RELEASE}-op-view`,
  );
});

// 2
const aggregated = adoptShape('aggregated');
for (const mode of MODES) {
  test(`aggregated, ${mode}: the ClusterRoles aggregated into the bound one are guarded, transitively; the viewer role is not`, () => {
    const r = render(aggregated, { 'drainguard.mode': mode });
    const guard = guardOf(deploymentOf(r.objects, `${RELEASE}-op`));
    for (const source of ['configmaps', 'secrets', 'leases'])
      assert.ok(guard.includes(`clusterrole/${RELEASE}-op-${source}`), `${source}: ${guard.join(',')}`);
    assert.not.ok(guard.includes(`clusterrole/${RELEASE}-op-viewer`));
    assertGuarded('aggregated', r);
  });
}

test('aggregated: drainguard check finds a guard that leaves an aggregated ClusterRole out', () => {
  // The chart guards a named aggregated role's sources by itself: the render is complete, and check says so.
  const text = templateText(aggregated, {
    namespace: NS,
    release: RELEASE,
    set: { 'drainguard.guard.clusterRoles': [`${RELEASE}-op`], 'drainguard.guard.clusterRoleBindings': [`${RELEASE}-op`] },
  });
  assert.is(check(text, NS).code, 0, check(text, NS).out);
  // A guard written by hand (or by an older chart) without the second-level source: check names it.
  const source = `clusterrole/${RELEASE}-op-secrets,`;
  assert.ok(text.includes(source), 'the render guards the second-level source');
  const checked = check(text.replace(source, ''), NS);
  assert.is(checked.code, 1, checked.out);
  assert.match(checked.out, `${RELEASE}-op-secrets`);
});

// 3
const elsewhere = adoptShape('other-namespaces');
const own = `drainguard:${NS}:${RELEASE}-op`;
for (const mode of MODES) {
  test(`other-namespaces, ${mode}: the roles and bindings in kube-system and the watched namespaces are guarded, with drainguard's own Role in each`, () => {
    const r = render(elsewhere, { 'drainguard.mode': mode });
    // drainguard's own Role in each namespace: get and patch on exactly the guarded ones there.
    const guard = guardOf(deploymentOf(r.objects, `${RELEASE}-op`));
    for (const ns of ['kube-system', 'team-a', 'team-b', NS]) {
      const role = ofKind(r.objects, 'Role').find((o) => o.metadata.name === own && o.metadata.namespace === ns);
      assert.ok(role, `drainguard's Role in ${ns}`);
      const binding = ofKind(r.objects, 'RoleBinding').find((o) => o.metadata.name === own && o.metadata.namespace === ns);
      assert.equal(binding?.subjects, [{ kind: 'ServiceAccount', name: `${RELEASE}-op`, namespace: NS }]);
      for (const kind of ['roles', 'rolebindings']) {
        // The guard's rules (get, patch), not the pin's (delete on drainguard's own, docs/guard.md).
        const names = role!.rules
          .filter((rule: any) => rule.resources.includes(kind) && rule.verbs.includes('patch'))
          .flatMap((rule: any) => rule.resourceNames);
        const guarded = guard.filter((g) => g.startsWith(`${kind.slice(0, -1)}/${ns}/`)).map((g) => g.split('/')[2]);
        assert.equal(names.sort(), [...guarded, own].sort(), `${kind} in ${ns}`);
      }
    }
    // The admission policy holds them by name.
    const policy = ofKind(r.objects, 'ValidatingAdmissionPolicy')[0]!;
    const namespaced = policy.spec.matchConstraints.resourceRules.find((rule: any) => rule.resources.includes('rolebindings'));
    for (const name of [`${RELEASE}-op-leader`, `${RELEASE}-op-watch`]) assert.ok(namespaced.resourceNames.includes(name), name);
    assertGuarded('other-namespaces', r);
  });
}

test('other-namespaces: guard.roles names NAMESPACE/NAME; one the release holds in another namespace fails, naming drainguard.guard', () => {
  const set = {
    'drainguard.guard.roles': [`kube-system/${RELEASE}-op-leader`],
    'drainguard.guard.roleBindings': [`kube-system/${RELEASE}-op-leader`],
  };
  const guard = guardOf(deploymentOf(render(elsewhere, set).objects, `${RELEASE}-op`));
  assert.equal(guard, [
    `role/kube-system/${RELEASE}-op-leader`,
    `rolebinding/kube-system/${RELEASE}-op-leader`,
    `serviceaccount/${NS}/${RELEASE}-op`,
  ]);
  assert.match(
    fails(elsewhere, { 'drainguard.guard.roles': [`team-a/${RELEASE}-op-leader`] }),
    `drainguard: the guard names Role/team-a/${RELEASE}-op-leader, which the release does not contain`,
  );
  assert.match(
    fails(elsewhere, { 'drainguard.guard.roles': [`${RELEASE}-op-leader`] }),
    `the guard names Role/${NS}/${RELEASE}-op-leader, which the release does not contain`,
  );
  assert.match(fails(elsewhere, { 'drainguard.guard.roles': [`${RELEASE}-op-leader`] }), 'drainguard.guard (NAMESPACE/NAME');
});

test('other-namespaces: drainguard check finds a guard that leaves the leader election binding in kube-system out', () => {
  assertCheckFinds(
    elsewhere,
    { 'drainguard.guard.roles': [`${RELEASE}-op-events`], 'drainguard.guard.roleBindings': [`${RELEASE}-op-events`] },
    `${RELEASE}-op-leader`,
  );
});

// 4
const noCommand = adoptShape('no-command');
for (const mode of MODES) {
  test(`no-command, ${mode}: with the doc's operator.command the render runs it (args kept); without, wrap mode stops naming drainguard.operator.command`, () => {
    const r = render(noCommand, { 'drainguard.mode': mode });
    const operator = containerOf(deploymentOf(r.objects, `${RELEASE}-op`), 'operator');
    assert.equal(operator.args, ['--leader-elect', '--zap-log-level=info']);
    assert.equal(operator.command, mode === 'wrap' ? ['/drainguard/drainguard', 'run', '--', '/my-operator'] : undefined);
    assertGuarded('no-command', r);
    const without = { 'drainguard.mode': mode, 'drainguard.operator.command': [] };
    if (mode === 'wrap') {
      assert.match(
        fails(noCommand, without),
        `drainguard: the Deployment ${RELEASE}-op's container "operator" sets no command (its image's ENTRYPOINT runs), and in wrap mode drainguard must start the operator itself: set drainguard.operator.command`,
      );
    } else {
      assert.equal(containerOf(deploymentOf(render(noCommand, without).objects, `${RELEASE}-op`), 'operator').command, undefined);
    }
  });
}

// 7
const strictBare = adoptShape('strict-schema');
const strict = adoptShape('strict-schema', 'A `values.schema.json`');
for (const mode of MODES) {
  test(`strict-schema, ${mode}: the schema refuses drainguard until the doc's property is added; then the render is guarded`, () => {
    assert.match(fails(strictBare, { 'drainguard.mode': mode }), "additional properties 'drainguard' not allowed");
    assertGuarded('strict-schema', render(strict, { 'drainguard.mode': mode }));
    // drainguard's own schema still checks what is inside.
    assert.match(
      fails(strict, { 'drainguard.mode': mode, 'drainguard.stopTimeout': '5s' }),
      "additional properties 'stopTimeout' not allowed",
    );
  });
}

// 8
const noToken = adoptShape('no-token');
const TOKEN_PATH = '/var/run/secrets/kubernetes.io/serviceaccount';
for (const mode of MODES) {
  test(`no-token, ${mode}: ${mode === 'wrap' ? 'the render stops naming drainguard.mode' : "drainguard's container alone gets a projected token"}`, () => {
    if (mode === 'wrap') {
      assert.match(
        fails(noToken, { 'drainguard.mode': mode }),
        `drainguard: the Deployment ${RELEASE}-op's pod mounts no ServiceAccount token (automountServiceAccountToken: false), and in wrap mode drainguard, which needs one for the guard, runs in the operator's container`,
      );
      assert.match(fails(noToken, { 'drainguard.mode': mode }), 'Set drainguard.mode: native-sidecar');
      return;
    }
    const r = render(noToken, { 'drainguard.mode': mode });
    const d = deploymentOf(r.objects, `${RELEASE}-op`);
    assert.is(d.spec.template.spec.automountServiceAccountToken, false, "the chart's setting stays");
    const volume = d.spec.template.spec.volumes.find((v: any) => v.name === 'drainguard-token');
    assert.equal(
      volume.projected.sources.map((s: any) => Object.keys(s)[0]),
      ['serviceAccountToken', 'configMap', 'downwardAPI'],
    );
    assert.is(volume.projected.sources[1].configMap.name, 'kube-root-ca.crt');
    assert.equal(volume.projected.sources[2].downwardAPI.items[0].fieldRef.fieldPath, 'metadata.namespace');
    assert.equal(
      drainguardContainer(d, mode).volumeMounts.find((m: any) => m.name === 'drainguard-token'),
      { name: 'drainguard-token', mountPath: TOKEN_PATH, readOnly: true },
    );
    const others = [...d.spec.template.spec.containers, ...(d.spec.template.spec.initContainers ?? [])].filter(
      (c: any) => c.name !== 'drainguard',
    );
    for (const c of others)
      assert.not.ok(
        (c.volumeMounts ?? []).some((m: any) => m.name === 'drainguard-token'),
        `${c.name} gets no token`,
      );
    assertGuarded('no-token', r);
  });
}

// 9
const prestopBare = adoptShape('prestop');
const prestop = adoptShape('prestop', 'A container with a `preStop`');
for (const mode of MODES) {
  for (const hook of ['sleep', 'exec']) {
    test(`prestop (${hook}), ${mode}: never two handlers in one; ${mode === 'wrap' ? "the chart's hook kept" : "the render stops naming drainguard.operator.replacePreStop, and with it drainguard's replaces it"}`, () => {
      const set = { 'drainguard.mode': mode, preStop: hook };
      const chartHook = { sleep: { sleep: { seconds: 5 } }, exec: { exec: { command: ['/my-operator', '--deregister'] } } }[hook];
      if (mode === 'wrap') {
        const r = render(prestopBare, set);
        const d = deploymentOf(r.objects, `${RELEASE}-op`);
        const operator = containerOf(d, 'operator');
        assert.equal(operator.lifecycle.preStop, chartHook);
        // The hook runs inside the grace, before drainguard's signal: a known length is taken off drainguard's grace period.
        const gracePeriodOf = (rendered: Rendered) =>
          containerOf(deploymentOf(rendered.objects, `${RELEASE}-op`), 'operator').env.find(
            (e: any) => e.name === 'DRAINGUARD_GRACE_PERIOD',
          )?.value;
        const leaves = `${d.spec.template.spec.terminationGracePeriodSeconds - 5}s`;
        if (hook === 'sleep') {
          assert.is(gracePeriodOf(r), leaves);
          assertGuarded('prestop', r, set);
          return;
        }
        // An exec hook's length is not known: check says so, until the chart says it.
        assert.is(gracePeriodOf(r), undefined);
        assertCheckFinds(prestopBare, set, 'prestop-eats-grace');
        const told = { ...set, 'drainguard.operator.preStopSeconds': 5 };
        const t = render(prestopBare, told);
        assert.is(gracePeriodOf(t), leaves);
        assertGuarded('prestop', t, told);
        return;
      }
      assert.match(
        fails(prestopBare, set),
        `drainguard: the Deployment ${RELEASE}-op's container "operator" already has a preStop hook (${hook})`,
      );
      assert.match(fails(prestopBare, set), 'set drainguard.operator.replacePreStop: true');
      const r = render(prestop, set);
      assert.equal(containerOf(deploymentOf(r.objects, `${RELEASE}-op`), 'operator').lifecycle.preStop, {
        exec: { command: ['/drainguard/drainguard', 'prestop'] },
      });
      assertGuarded('prestop', r, set);
    });
  }
}

// 10
const runAs = adoptShape('run-as');
for (const mode of MODES) {
  test(`run-as, ${mode}: drainguard runs as the operator container's user, else the pod's, and the pod's group`, () => {
    for (const [userOn, user] of [
      ['container', 65534],
      ['pod', 1000],
    ] as const) {
      const set = { 'drainguard.mode': mode, userOn };
      const r = render(runAs, set);
      const d = deploymentOf(r.objects, `${RELEASE}-op`);
      const ours = [...d.spec.template.spec.containers, ...(d.spec.template.spec.initContainers ?? [])].filter((c: any) =>
        c.name.startsWith('drainguard'),
      );
      assert.ok(ours.length >= 1);
      for (const c of ours)
        assert.equal([c.securityContext.runAsUser, c.securityContext.runAsGroup], [user, 3000], `${c.name}, user on the ${userOn}`);
      assertGuarded('run-as', r, set);
    }
  });
}

// 11
const switches = adoptShape('switches', "The chart's own switches");
const notes = (chart: string, set: Record<string, unknown>): string =>
  helm([
    'install',
    RELEASE,
    chart,
    '--dry-run=client',
    '-n',
    NS,
    ...Object.entries(set).flatMap(([k, v]) => ['--set-json', `${k}=${JSON.stringify(v)}`]),
  ]).split('\nNOTES:\n')[1] ?? '';
for (const mode of MODES) {
  test(`switches, ${mode}: the operator off renders nothing of drainguard; an external ServiceAccount is left out of the guard, and the notes say so`, () => {
    const off = render(switches, { 'drainguard.mode': mode, 'operator.enabled': false });
    assert.equal(ofKind(off.objects, 'Deployment'), []);
    assert.not.match(JSON.stringify(off.objects), /drainguard/);
    const set = { 'drainguard.mode': mode, 'serviceAccount.create': false, 'serviceAccount.name': 'shared-operator' };
    const r = render(switches, set);
    assert.not.ok(guardOf(deploymentOf(r.objects, `${RELEASE}-op`)).some((g) => g.startsWith('serviceaccount/')));
    assertGuarded('switches', r, set);
    assert.match(
      notes(switches, set),
      `The ServiceAccount ${NS}/shared-operator is not the release's (not in drainguard.guard.templates): it is left out of the guard`,
    );
    assert.not.match(notes(switches, { 'drainguard.mode': mode }), 'is not the release');
  });
}

// 12
const two = adoptShape('two-operators', 'Several operators');
for (const mode of MODES) {
  test(`two-operators, ${mode}: each Deployment gets drainguard with its own guard, RBAC and hooks, and no name collides`, () => {
    const r = render(two, { 'drainguard.mode': mode });
    for (const who of ['controller', 'catalog']) {
      const d = deploymentOf(r.objects, `${RELEASE}-${who}`);
      assert.is(d.metadata.annotations?.['drainguard.dev/mode'], mode);
      assert.ok(
        ofKind(r.objects, 'Role').some((o) => o.metadata.name === `drainguard:${NS}:${RELEASE}-${who}`),
        `${who}'s own Role`,
      );
      assert.ok(
        ofKind(r.objects, 'Job').some((o) => o.metadata.name === `${RELEASE}-${who}-drainguard-release`),
        `${who}'s release hook`,
      );
    }
    const keys = r.objects.map((o) => `${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`);
    assert.equal(
      keys.filter((k, i) => keys.indexOf(k) !== i),
      [],
      'no object twice',
    );
    assertGuarded('two-operators', r);
  });
}

// 13
const memory = adoptShape('memory-limit', "The chart's own switches");
for (const mode of MODES) {
  test(`memory-limit, ${mode}: ${mode === 'wrap' ? "drainguard's memory is added to the container's request and limit, and said" : 'the container keeps its memory'}`, () => {
    const r = render(memory, { 'drainguard.mode': mode });
    const d = deploymentOf(r.objects, `${RELEASE}-op`);
    const { requests, limits } = containerOf(d, 'operator').resources;
    if (mode === 'wrap') {
      assert.equal([requests.memory, limits.memory, requests.cpu, limits.cpu], ['128Mi', '288Mi', '10m', '500m']);
      assert.is(
        d.metadata.annotations?.['drainguard.dev/memory'],
        'memory request 64Mi to 128Mi, limit 128Mi to 288Mi: drainguard runs in this container (drainguard.resources added)',
      );
      assert.match(
        notes(memory, { 'drainguard.mode': mode }),
        "The operator container's memory request 64Mi to 128Mi, limit 128Mi to 288Mi",
      );
    } else {
      assert.equal([requests.memory, limits.memory], ['64Mi', '128Mi']);
      assert.not.match(notes(memory, { 'drainguard.mode': mode }), 'memory');
    }
    assertGuarded('memory-limit', r);
  });
}

// What the renders above add is what the API server accepts (the projected token, the
// Roles in other namespaces, two operators' objects, the raised memory).
for (const [shape, headings, set] of [
  ['other-namespaces', [], {}],
  ['no-token', [], {}],
  ['two-operators', ['Several operators'], {}],
  ['memory-limit', [], {}],
  ['prestop', ['A container with a `preStop`'], {}],
  ['run-as', [], { userOn: 'pod' }],
] as const) {
  const chart = adoptShape(shape, ...headings);
  test(`${shape}: every object rendered in every mode validates against the Kubernetes schemas`, async () => {
    for (const mode of MODES) {
      if (shape === 'no-token' && mode === 'wrap') continue;
      const { objects } = render(chart, { ...set, 'drainguard.mode': mode });
      assert.equal((await Promise.all(objects.map(problems))).flat(), [], mode);
    }
  });
}

test.run();
