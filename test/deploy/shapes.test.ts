// docs/deploy.md's "More than one ClusterRole and binding", pasted beside an
// operator shaped as issue 41 found real charts (test/deploy/fixtures/
// shapes-operator: no command in its container, an aggregated ClusterRole, a
// binding to the built-in view, leader election in kube-system): in each mode
// the render is one the API server accepts and `drainguard check` (the built
// executable) finds nothing; without the guard-more component it reports each
// object left out; wrap mode without the command stops the render, naming the
// field; a preStop of the operator's own is reported merged and replaced as
// the doc says. The hold and guard-more add rules to the same objects, in
// either order; several operators are one overlay each.

import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parseGuardList } from '../../src/config/guard-list.ts';
import { EXE, tempDir } from '../support/proc.ts';
import { REMOTE_COMPONENT as REMOTE, ROOT, docBlocks, moreBlocks, parseObjects, problems, shapesOverlay as overlay } from './support/manifests.ts';

const MODES = ['wrap', 'native-sidecar', 'sidecar'] as const;
const { kustomization, settings } = moreBlocks();
const several = (readFileSync(join(ROOT, 'docs/deploy.md'), 'utf8').match(/```sh\n(for d in [^\n]*\| drainguard check -)\n/) ?? [])[1]!;

interface Render { status: number | null; objects: ReturnType<typeof parseObjects>; stderr: string }
interface Checked { status: number | null; findings: { code: string; object: string; message: string }[]; stdout: string }

function kustomize(dir: string): Render {
  const r = spawnSync('kubectl', ['kustomize', dir], { encoding: 'utf8', timeout: 60_000 });
  return { status: r.status, objects: r.status === 0 ? parseObjects(r.stdout) : [], stderr: r.stderr };
}

function check(objects: ReturnType<typeof parseObjects>): Checked {
  const r = spawnSync(EXE, ['check', '-o', 'json', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }), encoding: 'utf8', timeout: 30_000 });
  return { status: r.status, findings: r.status === 2 ? [] : (JSON.parse(r.stdout) as { findings: Checked['findings'] }).findings, stdout: r.stdout + r.stderr };
}

const guardOf = (objects: ReturnType<typeof parseObjects>): string[] => {
  const pod = objects.find((o) => o.kind === 'Deployment')!.spec.template.spec;
  const env = [...pod.containers, ...(pod.initContainers ?? [])].flatMap((c: any) => c.env ?? []).find((e: any) => e.name === 'DRAINGUARD_GUARD');
  return parseGuardList(env.value as string, 'DRAINGUARD_GUARD').map((t) => `${t.kind}/${t.namespace ? `${t.namespace}/` : ''}${t.name}`);
};

test('the doc shows the guard-more kustomization, its settings and how several overlays are checked together', () => {
  assert.ok(kustomization && settings && several, 'the blocks are there');
  assert.equal([...kustomization.matchAll(REMOTE)].map((m) => m[1]), ['wrap', 'guard-more']);
});

for (const mode of MODES) {
  test(`${mode}: the doc's overlay guards every binding, role and aggregation source, validates, and check finds nothing`, async () => {
    const r = kustomize(overlay(tempDir(), mode));
    assert.equal(r.status, 0, r.stderr);
    assert.equal((await Promise.all(r.objects.map(problems))).flat(), []);
    const checked = check(r.objects);
    assert.equal([checked.status, checked.findings], [0, []], checked.stdout);
    const guard = guardOf(r.objects);
    for (const entry of ['clusterrolebinding/shapes-operator-view', 'role/kube-system/shapes-operator-leader', 'rolebinding/kube-system/shapes-operator-leader', 'clusterrole/shapes-operator-rules']) assert.ok(guard.includes(entry), `${entry} in ${guard.join(',')}`);
    assert.not.ok(guard.includes('clusterrole/view'), 'the built-in role is never guarded');
    // What guard-more grants: get and patch by the names of guardNames, nothing else; its policy holds the same names.
    const own = r.objects.find((o) => o.kind === 'ClusterRole' && o.metadata.name.startsWith('drainguard:'))!;
    const more = own.rules.filter((rule: any) => rule.resources.includes('clusterroles') && rule.resources.includes('roles') && rule.verbs.join() !== 'delete');
    assert.equal(more, [{ apiGroups: ['rbac.authorization.k8s.io'], resources: ['clusterroles', 'clusterrolebindings', 'roles', 'rolebindings'], verbs: ['get', 'patch'], resourceNames: ['shapes-operator-rules', 'shapes-operator-view', 'shapes-operator-leader'] }]);
    const policy = r.objects.find((o) => o.kind === 'ValidatingAdmissionPolicy')!;
    assert.ok(policy.spec.matchConstraints.resourceRules.some((rule: any) => rule.resources.includes('roles') && JSON.stringify(rule.resourceNames) === JSON.stringify(more[0].resourceNames)), 'the admission policy holds the same names');
    // The kube-system objects stayed there; the operator's command is the image's program, not /manager.
    assert.equal(r.objects.filter((o) => o.metadata.namespace === 'kube-system').map((o) => o.kind).sort(), ['Role', 'RoleBinding']);
    if (mode === 'wrap') assert.equal(r.objects.find((o) => o.kind === 'Deployment')!.spec.template.spec.containers[0].command, ['/drainguard/drainguard', 'run', '--', '/ko-app/shapes-operator']);
  });

  test(`${mode}: without guard-more, check reports each object the guard leaves out`, () => {
    const r = kustomize(overlay(tempDir(), mode, { components: (list) => list.filter((c) => c !== 'guard-more') }));
    assert.equal(r.status, 0, r.stderr);
    const checked = check(r.objects);
    assert.equal([checked.status, checked.findings.map((f) => f.code)], [1, ['aggregation-source-not-guarded', 'binding-not-guarded', 'binding-not-guarded', 'role-not-guarded']], checked.stdout);
  });
}

test("a preStop of the operator's own: the sidecar components merge drainguard's beside it (hook-invalid), docs/deploy.md's patch replaces it", () => {
  const replace = docBlocks('Adding drainguard to any other operator').find((b) => b.startsWith('patches:') && b.includes('$patch: replace'))!;
  for (const mode of ['native-sidecar', 'sidecar']) {
    const root = tempDir();
    const dir = overlay(root, mode);
    const deployment = join(root, 'default-shapes-operator', 'deployment.yaml');
    writeFileSync(deployment, readFileSync(deployment, 'utf8').replace('          args: [', '          lifecycle:\n            preStop:\n              sleep:\n                seconds: 5\n          args: ['));
    const merged = check(kustomize(dir).objects);
    assert.equal([merged.status, merged.findings.map((f) => f.code)], [1, ['hook-invalid']], merged.stdout);
    writeFileSync(join(dir, 'kustomization.yaml'), readFileSync(join(dir, 'kustomization.yaml'), 'utf8') + replace);
    const r = kustomize(dir);
    assert.equal(r.objects.find((o) => o.kind === 'Deployment')!.spec.template.spec.containers.find((c: any) => c.name === 'manager').lifecycle, { preStop: { exec: { command: ['/drainguard/drainguard', 'prestop'] } } });
    const fixed = check(r.objects);
    assert.equal([fixed.status, fixed.findings], [0, []], fixed.stdout);
  }
});

test('automountServiceAccountToken: false: check reports token-not-mounted, docs/deploy.md\'s patch mounts one in drainguard\'s container alone', async () => {
  const mount = docBlocks('Adding drainguard to any other operator').find((b) => b.startsWith('patches:') && b.includes('serviceAccountToken'))!;
  const root = tempDir();
  const dir = overlay(root, 'native-sidecar');
  const deployment = join(root, 'default-shapes-operator', 'deployment.yaml');
  writeFileSync(deployment, readFileSync(deployment, 'utf8').replace('      serviceAccountName: shapes-operator\n', '      serviceAccountName: shapes-operator\n      automountServiceAccountToken: false\n'));
  const without = check(kustomize(dir).objects);
  assert.equal([without.status, without.findings.map((f) => f.code)], [1, ['token-not-mounted']], without.stdout);
  writeFileSync(join(dir, 'kustomization.yaml'), readFileSync(join(dir, 'kustomization.yaml'), 'utf8') + mount);
  const r = kustomize(dir);
  assert.equal(r.status, 0, r.stderr);
  assert.equal((await Promise.all(r.objects.map(problems))).flat(), []);
  const pod = r.objects.find((o) => o.kind === 'Deployment')!.spec.template.spec;
  const mounting = [...pod.containers, ...pod.initContainers].filter((c: any) => (c.volumeMounts ?? []).some((m: any) => m.name === 'drainguard-token')).map((c: any) => c.name);
  assert.equal(mounting, ['drainguard'], 'the token in drainguard\'s container, not the operator\'s');
  const fixed = check(r.objects);
  assert.equal([fixed.status, fixed.findings], [0, []], fixed.stdout);
});

test('wrap mode without data.command: kustomize stops, naming the field (nothing assumes /manager)', () => {
  const r = kustomize(overlay(tempDir(), 'wrap', { edit: (s) => s.replace(/\n {2}command: .*/, '') }));
  assert.not.equal(r.status, 0);
  assert.match(r.stderr, /fieldPath `data.command` is missing for replacement source ConfigMap\.\[noVer\]\.\[noGrp\]\/drainguard/);
});

test('the hold and guard-more add rules to the same ClusterRole and policy: either order renders the same, and check is clean', () => {
  const crd = { apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: 'widgets.shapes.example.io' }, spec: { group: 'shapes.example.io', scope: 'Namespaced', names: { plural: 'widgets', singular: 'widget', kind: 'Widget' }, versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object' } } }] } };
  const renders = [['guard-more', 'hold'], ['hold', 'guard-more']].map((order) => {
    const root = tempDir();
    const dir = overlay(root, 'native-sidecar', {
      edit: (s) => `${s}  hold: widgets.shapes.example.io\n  holdGroup: shapes.example.io\n`,
      components: (list) => [list[0]!, ...order],
    });
    writeFileSync(join(dir, 'crd.yaml'), JSON.stringify(crd));
    writeFileSync(join(dir, 'kustomization.yaml'), readFileSync(join(dir, 'kustomization.yaml'), 'utf8').replace('  - drainguard.yaml', '  - drainguard.yaml\n  - crd.yaml'));
    return kustomize(dir);
  });
  for (const r of renders) assert.equal(r.status, 0, r.stderr);
  const rulesOf = (r: Render) => r.objects.filter((o) => o.metadata.labels?.['app.kubernetes.io/name'] === 'drainguard').map((o) => JSON.stringify([o.kind, o.rules?.map((x: any) => JSON.stringify(x)).sort(), o.spec?.matchConstraints?.resourceRules?.map((x: any) => JSON.stringify(x)).sort()]));
  assert.equal(rulesOf(renders[0]!), rulesOf(renders[1]!));
  for (const r of renders) {
    const checked = check(r.objects);
    assert.equal([checked.status, checked.findings], [0, []], checked.stdout);
  }
});

test('several operators: one overlay each, checked together as the doc pipes them; one left without drainguard is reported', () => {
  const root = tempDir();
  const config = join(root, 'config', 'drainguard');
  overlay(config, 'native-sidecar', { name: 'controller' });
  overlay(config, 'wrap', { name: 'webhook' });
  // The doc's loop over the overlays, run by a shell, its check being the built executable.
  const run = (line: string) => spawnSync('bash', ['-c', line.replace('drainguard check -', `${EXE} check -o json -`)], { cwd: root, encoding: 'utf8', timeout: 60_000 });
  const both = run(several);
  assert.equal(both.status, 0, both.stdout + both.stderr);
  assert.equal((JSON.parse(both.stdout) as { findings: unknown[]; checked: number }).findings, []);
  // The webhook's operator as it is, without drainguard.
  const one = run(several.replace('for d in controller webhook', 'for d in controller ../../config/drainguard/default-webhook'));
  assert.equal(one.status, 1, one.stdout + one.stderr);
  assert.equal((JSON.parse(one.stdout) as { findings: { code: string; object: string }[] }).findings.map((f) => `${f.code} ${f.object}`), ['no-drainguard Deployment/shapes-system/webhook']);
});

test.run();
