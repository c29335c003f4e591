// `drainguard check` on a real render, through the built executable: a chart
// in `helm create`'s shape (test/check/fixtures/widget-operator: no
// metadata.namespace but on its leader-election Role and RoleBinding, which are
// in kube-system; its operator bound by group, by user name, through an
// aggregated ClusterRole and to the built-in view) rendered by the real helm,
// read as `helm install -n NS` creates it: -n/--namespace (or
// DRAINGUARD_NAMESPACE) and -f/--filename, repeatable. Each binding of the
// operator's ServiceAccount, the roles they bind and the aggregation sources
// must be guarded; a render that leaves one out is reported.

import { spawnSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parseAllDocuments, stringify } from 'yaml';
import { EXAMPLE, cleanupCharts, stageChart, templateText } from '../helm/support/charts.ts';
import { EXE, tempDir } from '../support/proc.ts';

const CHART = resolve('test/check/fixtures/widget-operator');
const NS = 'widgets';
const DEPLOYMENT = 'demo-widget-operator';

const dir = tempDir();
test.after(() => {
  rmSync(dir, { recursive: true, force: true });
  cleanupCharts();
});

interface Result {
  status: number | null;
  stdout: string;
  stderr: string;
  findings: string[];
}

function check(args: string[], input?: string, env: NodeJS.ProcessEnv = {}): Result {
  const r = spawnSync(EXE, ['check', '-o', 'json', ...args], {
    input,
    encoding: 'utf8',
    timeout: 30_000,
    env: { PATH: process.env.PATH, ...env },
  });
  const findings =
    r.status === 0 || r.status === 1
      ? (JSON.parse(r.stdout) as { findings: { code: string; object: string }[] }).findings.map((f) => `${f.code} ${f.object}`)
      : [];
  return { status: r.status, stdout: r.stdout, stderr: r.stderr, findings };
}

/** `helm template demo CHART --namespace NS`: the release's namespace is in no object. */
const render = (): string => templateText(CHART, { namespace: NS, release: 'demo' });
const documents = (text: string): Record<string, any>[] =>
  parseAllDocuments(text)
    .map((d) => d.toJS() as Record<string, any>)
    .filter(Boolean);

test('helm template | drainguard check -n NS - is clean, the kube-system objects in kube-system; without -n the rest is read in default', () => {
  const text = render();
  assert.equal(
    documents(text)
      .filter((o) => o.metadata.namespace !== undefined)
      .map((o) => `${o.kind}/${o.metadata.namespace}`)
      .sort(),
    ['Role/kube-system', 'Role/kube-system', 'RoleBinding/kube-system', 'RoleBinding/kube-system'],
  );
  const clean = check(['-n', NS, '-'], text);
  assert.equal([clean.status, clean.findings], [0, []], clean.stdout + clean.stderr);
  assert.match(clean.stdout, /"checked": 17,/);
  // What check said before -n: the guard's serviceaccount/widgets/... and the subjects in widgets, the objects in default.
  const unplaced = check(['-'], text);
  assert.equal(unplaced.status, 1);
  assert.ok(unplaced.findings.includes(`guarded-object-missing Deployment/default/${DEPLOYMENT}`), unplaced.findings.join('\n'));
  assert.ok(unplaced.findings.includes(`guard-not-covered Deployment/default/${DEPLOYMENT}`), unplaced.findings.join('\n'));
  // The variable, and the long flag.
  assert.equal(check(['-'], text, { DRAINGUARD_NAMESPACE: NS }).findings, []);
  assert.equal(check([`--namespace=${NS}`, '-'], text).status, 0);
});

test('-f FILE, -f DIR, -f - and --filename, repeatable and beside positional paths, as kubectl apply -f', () => {
  const text = render();
  const file = join(dir, 'render.yaml');
  writeFileSync(file, text);
  const one = check(['-n', NS, '-f', file]);
  assert.equal([one.status, one.findings], [0, []], one.stdout + one.stderr);
  // The RBAC in one file, the rest in a directory.
  const objects = documents(text);
  const rbac = objects.filter((o) => o.apiVersion.startsWith('rbac.'));
  const rest = join(dir, 'rest');
  mkdirSync(rest, { recursive: true });
  writeFileSync(join(dir, 'rbac.yaml'), rbac.map((o) => stringify(o)).join('---\n'));
  writeFileSync(
    join(rest, 'workload.yml'),
    objects
      .filter((o) => !rbac.includes(o))
      .map((o) => stringify(o))
      .join('---\n'),
  );
  const split = check(['-n', NS, '-f', join(dir, 'rbac.yaml'), '--filename', rest]);
  assert.equal([split.status, split.findings], [0, []], split.stdout + split.stderr);
  assert.match(split.stdout, /"checked": 17,/);
  // Without the RBAC file the guard is not covered: both -f were read.
  assert.ok(check(['-n', NS, '--filename', rest]).findings.includes(`guard-not-covered Deployment/${NS}/${DEPLOYMENT}`));
  // Standard input with -f, a positional beside -f, and --filename=.
  assert.equal(check(['-n', NS, '-f', '-'], text).findings, []);
  assert.equal(check(['-n', NS, '-f', join(dir, 'rbac.yaml'), rest]).findings, []);
  assert.equal(check(['-n', NS, `--filename=${join(dir, 'rbac.yaml')}`, `--filename=${rest}`]).findings, []);
});

test('an object that names another namespace than -n stays there, as helm install -n creates it (no longer refused)', () => {
  const objects = documents(render());
  objects.find((o) => o.kind === 'ServiceAccount')!.metadata.namespace = 'elsewhere';
  const text = objects.map((o) => stringify(o)).join('---\n');
  const moved = check(['-n', NS, '-'], text);
  assert.equal(moved.status, 1, moved.stdout + moved.stderr);
  // The Deployment runs as widgets/NAME, which is now elsewhere: the guard names an object the render does not hold there.
  assert.ok(moved.findings.includes(`guarded-object-missing Deployment/${NS}/${DEPLOYMENT}`), moved.findings.join('\n'));
  assert.equal(check(['-'], text, { DRAINGUARD_NAMESPACE: NS }).findings, moved.findings);
  // A render that names its namespaces everywhere, checked with that one: clean.
  const example = check(['-n', 'operator-system', '-'], templateText(stageChart(EXAMPLE), { namespace: 'operator-system' }));
  assert.equal([example.status, example.findings], [0, []], example.stdout + example.stderr);
});

/** The fixture rendered with one part of the guard left out, as a render that misses that shape makes it. */
const without = (value: string): Result =>
  check(['-n', NS, '-'], templateText(CHART, { namespace: NS, release: 'demo', set: { [`guard.${value}`]: false } }));
const details = (r: Result): { code: string; message: string; fix: string }[] =>
  (JSON.parse(r.stdout) as { findings: { code: string; message: string; fix: string }[] }).findings;

test('binding-not-guarded: a binding to the built-in ClusterRole view left out of the guard; view itself is not expected', () => {
  const r = without('viewBinding');
  assert.equal([r.status, r.findings], [1, [`binding-not-guarded Deployment/${NS}/${DEPLOYMENT}`]], r.stdout + r.stderr);
  const [f] = details(r);
  assert.match(f!.message, `ClusterRoleBinding ${DEPLOYMENT}-view binds ServiceAccount ${NS}/${DEPLOYMENT} to ClusterRole view`);
  assert.match(f!.fix, `add clusterrolebinding/${DEPLOYMENT}-view to DRAINGUARD_GUARD in container manager`);
  assert.match(f!.fix, `drainguard.guard.clusterRoleBindings: [${DEPLOYMENT}-view]`);
});

test('binding-not-guarded, role-not-guarded: the leader-election Role and RoleBinding in kube-system, named with their own namespace', () => {
  const r = without('leaderElection');
  assert.equal(
    [r.status, r.findings],
    [1, [`binding-not-guarded Deployment/${NS}/${DEPLOYMENT}`, `role-not-guarded Deployment/${NS}/${DEPLOYMENT}`]],
    r.stdout + r.stderr,
  );
  const [binding, role] = details(r);
  assert.match(binding!.fix, `add rolebinding/kube-system/${DEPLOYMENT}-leader-election to DRAINGUARD_GUARD`);
  assert.match(binding!.fix, `drainguard.guard.roleBindings: [kube-system/${DEPLOYMENT}-leader-election]`);
  assert.match(role!.fix, `add role/kube-system/${DEPLOYMENT}-leader-election to DRAINGUARD_GUARD`);
});

test('aggregation-source-not-guarded: the ClusterRoles aggregated into the guarded one left out of the guard', () => {
  const r = without('aggregationSources');
  assert.equal(
    [r.status, r.findings],
    [1, Array(2).fill(`aggregation-source-not-guarded Deployment/${NS}/${DEPLOYMENT}`)],
    r.stdout + r.stderr,
  );
  const named = details(r)
    .map((f) => /^ClusterRole (\S+) is aggregated into the guarded ClusterRole (\S+) /.exec(f.message)?.slice(1).join(' into '))
    .sort();
  assert.equal(named, [`${DEPLOYMENT}-leader-election into ${DEPLOYMENT}`, `${DEPLOYMENT}-widgets into ${DEPLOYMENT}`]);
});

test('bad -n, -f and their combinations are exit 2, naming the flag', () => {
  const cases: [string[], RegExp][] = [
    [['-n', 'Not_A_Namespace', '-'], /-n: expected a namespace name \(a DNS label\), got "Not_A_Namespace"/],
    [['-f'], /option -f needs a value \(PATH\)/],
    [['-f', '', '-'], /-f: expected a file, a directory, or - for standard input, got ""/],
    [['-f', join(dir, 'missing.yaml')], /missing\.yaml: cannot read \(ENOENT\)/],
    [['--deployment', 'ns/op', '-f', 'deploy/rendered'], /--deployment reads from the API: name no manifests with it/],
    [['--deployment', 'ns/op', '-n', 'other'], /--deployment ns\/op is in namespace ns, -n names other/],
  ];
  for (const [args, message] of cases) {
    const r = check(args, '');
    assert.equal(r.status, 2, `${args.join(' ')}: ${r.stdout}${r.stderr}`);
    assert.match(r.stderr, message);
  }
  // -n is one option: given twice is still refused.
  assert.match(check(['-n', NS, '-n', NS, '-'], '').stderr, /option --namespace given twice/);
});

test('check --help shows -n and -f', () => {
  const r = spawnSync(EXE, ['check', '--help'], { encoding: 'utf8', timeout: 30_000 });
  assert.equal(r.status, 0);
  assert.match(r.stdout, /^Usage: drainguard check \[-o json\] \[-n NAMESPACE\] \[-f PATH\]\.\.\./);
  assert.match(r.stdout, /-n, --namespace NAMESPACE\n.*\n {6}env DRAINGUARD_NAMESPACE; default: default/);
  assert.match(r.stdout, /-f, --filename PATH\n.*repeatable.*\n {6}flag only/);
});

test.run();
