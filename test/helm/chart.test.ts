// The charts through the real helm: helm lint --strict and helm template in
// every mode, every rendered object one the API server accepts (schemas and
// unknown fields, as the kustomize output is checked), drainguard's RBAC and
// the hooks' RBAC granting exactly what they need, and drainguard switched
// off leaving the operator's chart as it was.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parse } from 'yaml';
import { parseGuardList } from '../../src/config/guard-list.ts';
import { type KubeObject, ofKind, problems, theDeployment } from '../deploy/support/manifests.ts';
import { EXAMPLE, KUSTOMIZE_EXAMPLE, LIBRARY, MODES, cleanupCharts, lint, stageChart, template } from './support/charts.ts';

const NS = 'operator-system';
const VERSION = (JSON.parse(readFileSync('package.json', 'utf8')) as { version: string }).version;
const example = stageChart(EXAMPLE);
const fixture = stageChart(KUSTOMIZE_EXAMPLE);

test.after(cleanupCharts);

const hookOf = (o: KubeObject) => o.metadata.annotations?.['helm.sh/hook'];
const isDrainguard = (o: KubeObject) => o.metadata.labels?.['app.kubernetes.io/name'] === 'drainguard';
const isPolicy = (o: KubeObject) => o.apiVersion.startsWith('admissionregistration.k8s.io/');

/** Every VERB on RESOURCE (GROUP) named NAME ('*': any) in NAMESPACE ('': cluster) that ROLES grant. */
function grants(roles: KubeObject[]): string[] {
  const out = new Set<string>();
  for (const role of roles) {
    const scope = role.kind === 'Role' ? role.metadata.namespace! : '';
    for (const rule of role.rules) {
      assert.equal(rule.nonResourceURLs, undefined);
      for (const group of rule.apiGroups)
        for (const resource of rule.resources)
          for (const verb of rule.verbs) {
            assert.ok(
              !rule.resourceNames || rule.resourceNames.length > 0,
              `${role.metadata.name}: an empty resourceNames would grant every name`,
            );
            for (const name of rule.resourceNames ?? ['*']) out.add(`${scope}|${group}|${resource}|${verb}|${name}`);
          }
    }
  }
  return [...out].sort();
}

const RESOURCE: Record<string, [string, string]> = {
  clusterrole: ['rbac.authorization.k8s.io', 'clusterroles'],
  clusterrolebinding: ['rbac.authorization.k8s.io', 'clusterrolebindings'],
  role: ['rbac.authorization.k8s.io', 'roles'],
  rolebinding: ['rbac.authorization.k8s.io', 'rolebindings'],
  serviceaccount: ['', 'serviceaccounts'],
};
const onGuard = (guard: string, verbs: string[]) =>
  parseGuardList(guard, 'guard').flatMap((t) =>
    verbs.map((v) => `${t.namespace ?? ''}|${RESOURCE[t.kind]![0]}|${RESOURCE[t.kind]![1]}|${v}|${t.name}`),
  );

const guardOf = (d: KubeObject): string => {
  const pod = d.spec.template.spec;
  const values = [...pod.containers, ...(pod.initContainers ?? [])].flatMap((c: any) =>
    (c.env ?? []).filter((e: any) => e.name === 'DRAINGUARD_GUARD'),
  );
  assert.equal(values.length, 1, 'DRAINGUARD_GUARD on one container');
  return values[0].value;
};

test('the library chart is a library, of this version, with the image of this version by default', () => {
  const chart = parse(readFileSync(join(LIBRARY, 'Chart.yaml'), 'utf8')) as Record<string, string>;
  const values = parse(readFileSync(join(LIBRARY, 'values.yaml'), 'utf8')) as { image: { tag: string } };
  assert.equal(chart.type, 'library');
  assert.equal([chart.version, chart.appVersion, values.image.tag], [VERSION, VERSION, VERSION]);
});

for (const mode of MODES) {
  test(`${mode}: helm lint --strict passes for the example operator's chart and the kustomize example`, () => {
    for (const chart of [example, fixture])
      assert.match(lint(chart, { namespace: NS, set: { 'drainguard.mode': mode } }), /1 chart\(s\) linted, 0 chart\(s\) failed/);
  });

  const objects = template(example, { namespace: NS, set: { 'drainguard.mode': mode } });

  test(`${mode}: every object helm renders validates against the Kubernetes schemas`, async () => {
    assert.ok(objects.length > 10);
    // Custom resources: of a kind one of the chart's CRDs serves (kubernetes-models knows the CRDs).
    const served = new Set(
      ofKind(objects, 'CustomResourceDefinition').flatMap((crd) =>
        crd.spec.versions.map((v: { name: string }) => `${crd.spec.group}/${v.name} ${crd.spec.names.kind}`),
      ),
    );
    const custom = objects.filter((o) => o.apiVersion.startsWith('operator.example.io/'));
    assert.equal(custom.map((o) => o.kind).sort(), ['APIServer', 'Installation']);
    for (const o of custom) assert.ok(served.has(`${o.apiVersion} ${o.kind}`), `${o.apiVersion} ${o.kind} has a CRD`);
    assert.equal((await Promise.all(objects.filter((o) => !custom.includes(o)).map(problems))).flat(), []);
  });

  test(`${mode}: drainguard's RBAC grants get and patch on exactly the guard list, its Leases, Events and Pod`, () => {
    const deployment = theDeployment(objects);
    const guard = guardOf(deployment);
    const ours = objects.filter((o) => isDrainguard(o) && !isPolicy(o));
    assert.equal(ours.map((o) => o.kind).sort(), ['ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding']);
    for (const b of ours.filter((o) => o.kind.endsWith('Binding')))
      assert.equal(b.subjects, [{ kind: 'ServiceAccount', name: 'example-operator', namespace: NS }]);
    const want = [
      ...onGuard(guard, ['get', 'patch']),
      ...['create', 'list', 'patch', 'delete'].map((v) => `${NS}|coordination.k8s.io|leases|${v}|*`),
      `${NS}||events|create|*`,
      `${NS}||pods|get|*`,
      // The EvictionRequest responder: the namespace's Evictions, its status entry.
      ...['list', 'watch'].map((v) => `${NS}|lifecycle.k8s.io|evictions|${v}|*`),
      `${NS}|lifecycle.k8s.io|evictions/status|patch|*`,
      // Its own Role and RoleBinding and the ServiceAccount again in the ClusterRole, which a namespace's
      // deletion leaves: by name in any namespace (RBAC cannot say which), the admission policy's to hold.
      ...['get', 'patch'].flatMap((v) => [
        `|rbac.authorization.k8s.io|roles|${v}|drainguard:${NS}:example-operator`,
        `|rbac.authorization.k8s.io|rolebindings|${v}|drainguard:${NS}:example-operator`,
        `||serviceaccounts|${v}|example-operator`,
      ]),
      // The pin of a release with no safe order (docs/guard.md): delete on drainguard's own and the ServiceAccount, by name.
      ...['clusterroles', 'clusterrolebindings', 'roles', 'rolebindings'].map(
        (r) => `|rbac.authorization.k8s.io|${r}|delete|drainguard:${NS}:example-operator`,
      ),
      ...['roles', 'rolebindings'].map((r) => `${NS}|rbac.authorization.k8s.io|${r}|delete|drainguard:${NS}:example-operator`),
      `||serviceaccounts|delete|example-operator`,
      `${NS}||serviceaccounts|delete|example-operator`,
    ].sort();
    assert.equal(grants(ours.filter((o) => o.kind.endsWith('Role'))), want);
    // The guard holds the operator's RBAC and ServiceAccount, and drainguard's own.
    const names = parseGuardList(guard, 'guard')
      .map((t) => `${t.kind}/${t.name}`)
      .sort();
    const self = `drainguard:${NS}:example-operator`;
    assert.equal(
      names,
      [
        'clusterrole/example-operator',
        'clusterrolebinding/example-operator',
        'serviceaccount/example-operator',
        `clusterrole/${self}`,
        `clusterrolebinding/${self}`,
        `role/${self}`,
        `rolebinding/${self}`,
      ].sort(),
    );
  });

  test(`${mode}: the pre-delete hook may delete the custom resources and list pods, nothing else; it runs predelete stage by stage`, () => {
    const hooks = objects.filter((o) => hookOf(o) === 'pre-delete');
    assert.equal(hooks.map((o) => o.kind).sort(), ['ClusterRole', 'ClusterRoleBinding', 'Job', 'Role', 'RoleBinding', 'ServiceAccount']);
    assert.equal(
      grants(ofKind(hooks, 'ClusterRole').concat(ofKind(hooks, 'Role'))),
      [
        ...['delete', 'get', 'list'].flatMap((v) => ['apiservers', 'installations'].map((r) => `|operator.example.io|${r}|${v}|*`)),
        `${NS}||pods|list|*`,
      ].sort(),
    );
    const job = ofKind(hooks, 'Job')[0]!;
    const weight = (o: KubeObject) => Number(o.metadata.annotations!['helm.sh/hook-weight']);
    for (const o of hooks.filter((h) => h.kind !== 'Job')) assert.ok(weight(o) < weight(job), `${o.kind} before the Job`);
    const sa = ofKind(hooks, 'ServiceAccount')[0]!.metadata.name;
    assert.equal(job.spec.template.spec.serviceAccountName, sa);
    for (const b of hooks.filter((o) => o.kind.endsWith('Binding')))
      assert.equal(b.subjects, [{ kind: 'ServiceAccount', name: sa, namespace: NS }]);
    assert.equal(job.spec.template.spec.containers[0].args, [
      'predelete',
      `--namespace=${NS}`,
      '--timeout=5m',
      '--require-ready=app.kubernetes.io/name=example-operator',
      '--order',
      'apiservers.operator.example.io',
      'installations.operator.example.io',
    ]);
  });

  test(`${mode}: drainguard's own RBAC and admission policy are kept through the uninstall, and nothing else is`, () => {
    const kept = objects.filter((o) => o.metadata.annotations?.['helm.sh/resource-policy'] === 'keep');
    assert.equal(
      kept.map((o) => `${o.kind}/${o.metadata.name}`).sort(),
      objects
        .filter(isDrainguard)
        .map((o) => `${o.kind}/${o.metadata.name}`)
        .sort(),
    );
    assert.equal(kept.map((o) => o.kind).sort(), [
      'ClusterRole',
      'ClusterRoleBinding',
      'Role',
      'RoleBinding',
      'ValidatingAdmissionPolicy',
      'ValidatingAdmissionPolicyBinding',
    ]);
  });

  test(`${mode}: the post-delete hook may get and patch the guarded objects, read Leases and delete drainguard's own RBAC and policy; it runs release --wait --delete`, () => {
    const hooks = objects.filter((o) => hookOf(o) === 'post-delete');
    const guard = guardOf(theDeployment(objects));
    const own = objects
      .filter(isDrainguard)
      .map((o) => `${o.kind.toLowerCase()}/${o.metadata.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata.name}`);
    const policy = `drainguard.${NS}.example-operator`;
    assert.equal(
      grants(ofKind(hooks, 'ClusterRole').concat(ofKind(hooks, 'Role'))),
      [
        ...onGuard(own.filter((o) => !o.startsWith('validatingadmission')).join(','), ['delete']),
        ...onGuard(guard, ['get', 'patch']),
        ...['validatingadmissionpolicies', 'validatingadmissionpolicybindings'].map(
          (r) => `|admissionregistration.k8s.io|${r}|delete|${policy}`,
        ),
        `${NS}|coordination.k8s.io|leases|list|*`,
      ].sort(),
    );
    const job = ofKind(hooks, 'Job')[0]!;
    const args = job.spec.template.spec.containers[0].args as string[];
    assert.equal(args.slice(0, 4), ['release', `--pod-namespace=${NS}`, `--guard=${guard}`, '--wait=2m']);
    assert.equal(
      args.slice(4, 5).map((a) => a.split('=')[0]),
      ['--delete'],
    );
    assert.equal(args[4]!.slice('--delete='.length).split(',').sort(), own.sort());
  });
}

const envOf = (d: KubeObject): Record<string, string> => {
  const pod = d.spec.template.spec;
  const dg = [...pod.containers, ...(pod.initContainers ?? [])].find((c: any) =>
    (c.env ?? []).some((e: any) => e.name === 'DRAINGUARD_GUARD'),
  );
  return Object.fromEntries(
    (dg.env as { name: string; value?: string }[]).filter((e) => e.value !== undefined).map((e) => [e.name, e.value!]),
  );
};
const HOLD = ['installations.operator.example.io', 'apiservers.operator.example.io'];

for (const mode of MODES) {
  test(`${mode}: hold.kinds renders DRAINGUARD_HOLD (and its timeout and settle when set) and the hold's RBAC, nothing more; helm lint --strict passes`, () => {
    const set = {
      'drainguard.mode': mode,
      'drainguard.hold.kinds': HOLD,
      'drainguard.hold.timeout': '10m',
      'drainguard.hold.settle': '2s',
    };
    const objects = template(example, { namespace: NS, set });
    const deployment = theDeployment(objects);
    const env = envOf(deployment);
    assert.equal([env.DRAINGUARD_HOLD, env.DRAINGUARD_HOLD_TIMEOUT, env.DRAINGUARD_HOLD_SETTLE], [HOLD.join(','), '10m', '2s']);
    assert.is(deployment.metadata.annotations?.['drainguard.dev/mode'], mode);
    const without = grants(
      template(example, { namespace: NS, set: { 'drainguard.mode': mode } }).filter((o) => isDrainguard(o) && o.kind.endsWith('Role')),
    );
    const withHold = grants(objects.filter((o) => isDrainguard(o) && o.kind.endsWith('Role')));
    assert.equal(
      withHold.filter((g) => !without.includes(g)),
      [
        '|operator.example.io|apiservers|list|*',
        '|operator.example.io|installations|list|*',
        `||namespaces|get|${NS}`,
        `${NS}|apps|deployments|get|example-operator`,
        `${NS}|apps|deployments|list|example-operator`,
        `${NS}|apps|deployments|patch|example-operator`,
        `${NS}|apps|deployments|watch|example-operator`,
        `${NS}|apps|replicasets|get|*`,
      ].sort(),
    );
    assert.equal(
      without.filter((g) => !withHold.includes(g)),
      [],
      'the guard keeps every grant',
    );
    lint(example, { namespace: NS, set });
  });
}

test("hold off by default: DRAINGUARD_HOLD empty, no timeout or settle (drainguard's defaults), no hold RBAC; a kind without its group fails the schema", () => {
  const objects = template(example, { namespace: NS });
  const env = envOf(theDeployment(objects));
  assert.equal([env.DRAINGUARD_HOLD, env.DRAINGUARD_HOLD_TIMEOUT, env.DRAINGUARD_HOLD_SETTLE], ['', undefined, undefined]);
  assert.not.match(JSON.stringify(objects.filter((o) => isDrainguard(o) && !isPolicy(o))), /replicasets|deployments/);
  const policy = objects.find((o) => o.kind === 'ValidatingAdmissionPolicy')!;
  assert.not.ok(
    policy.spec.matchConstraints.resourceRules.some((r: any) => r.resources.includes('deployments')),
    'the policy matches no Deployment',
  );
  assert.throws(
    () => template(example, { namespace: NS, set: { 'drainguard.hold.kinds': ['installations'] } }),
    /hold\.kinds|does not match pattern/,
  );
});

test('drainguard switched off: the chart renders the operator as it was, and nothing of drainguard', () => {
  const on = template(example, { namespace: NS });
  const off = template(example, { namespace: NS, set: { 'drainguard.enabled': false } });
  const text = JSON.stringify(off);
  assert.not.match(text, /drainguard/);
  const deployment = theDeployment(off);
  assert.equal(deployment.spec.template.spec.terminationGracePeriodSeconds, 10, "Kubebuilder's grace period, the chart's own");
  assert.equal(
    deployment.spec.template.spec.containers.map((c: any) => c.name),
    ['manager'],
  );
  const kinds = (list: KubeObject[]) =>
    list
      .filter((o) => !isDrainguard(o) && !hookOf(o))
      .map((o) => `${o.kind}/${o.metadata.name}`)
      .sort();
  assert.equal(kinds(off), kinds(on), 'the operator objects are the same ones');
});

test.run();
