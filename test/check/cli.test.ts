// `drainguard check` on a real render, through the built executable: a chart
// in `helm create`'s shape (test/check/fixtures/widget-operator: no
// metadata.namespace anywhere, its operator bound by group, by user name and
// through an aggregated ClusterRole) rendered by the real helm, read as
// `kubectl apply -n NS -f` would read it: -n/--namespace (or
// DRAINGUARD_NAMESPACE) and -f/--filename, repeatable.

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

interface Result { status: number | null; stdout: string; stderr: string; findings: string[] }

function check(args: string[], input?: string, env: NodeJS.ProcessEnv = {}): Result {
  const r = spawnSync(EXE, ['check', '-o', 'json', ...args], { input, encoding: 'utf8', timeout: 30_000, env: { PATH: process.env.PATH, ...env } });
  const findings = r.status === 0 || r.status === 1 ? (JSON.parse(r.stdout) as { findings: { code: string; object: string }[] }).findings.map((f) => `${f.code} ${f.object}`) : [];
  return { status: r.status, stdout: r.stdout, stderr: r.stderr, findings };
}

/** `helm template demo CHART --namespace NS`: the release's namespace is in no object. */
const render = (): string => templateText(CHART, { namespace: NS, release: 'demo' });
const documents = (text: string): Record<string, any>[] => parseAllDocuments(text).map((d) => d.toJS() as Record<string, any>).filter(Boolean);

test('the render names no namespace: helm template | drainguard check -n NS - is clean, without -n it is read in default', () => {
  const text = render();
  assert.ok(documents(text).every((o) => o.metadata.namespace === undefined), 'the fixture leaves metadata.namespace out');
  const clean = check(['-n', NS, '-'], text);
  assert.equal([clean.status, clean.findings], [0, []], clean.stdout + clean.stderr);
  assert.match(clean.stdout, /"checked": 12,/);
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
  writeFileSync(join(rest, 'workload.yml'), objects.filter((o) => !rbac.includes(o)).map((o) => stringify(o)).join('---\n'));
  const split = check(['-n', NS, '-f', join(dir, 'rbac.yaml'), '--filename', rest]);
  assert.equal([split.status, split.findings], [0, []], split.stdout + split.stderr);
  assert.match(split.stdout, /"checked": 12,/);
  // Without the RBAC file the guard is not covered: both -f were read.
  assert.ok(check(['-n', NS, '--filename', rest]).findings.includes(`guard-not-covered Deployment/${NS}/${DEPLOYMENT}`));
  // Standard input with -f, a positional beside -f, and --filename=.
  assert.equal(check(['-n', NS, '-f', '-'], text).findings, []);
  assert.equal(check(['-n', NS, '-f', join(dir, 'rbac.yaml'), rest]).findings, []);
  assert.equal(check(['-n', NS, `--filename=${join(dir, 'rbac.yaml')}`, `--filename=${rest}`]).findings, []);
});

test("an object that names another namespace than -n: exit 2, in kubectl's words, naming the object and where NS came from", () => {
  const objects = documents(render());
  objects.find((o) => o.kind === 'ServiceAccount')!.metadata.namespace = 'elsewhere';
  const text = objects.map((o) => stringify(o)).join('---\n');
  const refused = check(['-n', NS, '-'], text);
  assert.equal(refused.status, 2, refused.stdout + refused.stderr);
  assert.match(refused.stderr, `DG_CHECK_INPUT: ServiceAccount/elsewhere/${DEPLOYMENT}: the namespace from the provided object "elsewhere" does not match the namespace "${NS}" (-n)`);
  assert.equal(check(['-'], text, { DRAINGUARD_NAMESPACE: NS }).status, 2);
  assert.match(check(['-'], text, { DRAINGUARD_NAMESPACE: NS }).stderr, /"widgets" \(DRAINGUARD_NAMESPACE\)/);
  // Without -n an object keeps the namespace it names, as kubectl apply keeps it.
  const kept = check(['-'], text);
  assert.ok(kept.findings.includes(`guarded-object-missing Deployment/default/${DEPLOYMENT}`), kept.findings.join('\n'));
  // A render that names its namespaces everywhere, checked with that one: clean.
  const example = check(['-n', 'operator-system', '-'], templateText(stageChart(EXAMPLE), { namespace: 'operator-system' }));
  assert.equal([example.status, example.findings], [0, []], example.stdout + example.stderr);
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
