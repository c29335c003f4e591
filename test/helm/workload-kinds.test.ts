// The operator's template as charts ship it, put through docs/helm.md's steps
// (support/shapes.ts) and the real helm: a StatefulSet or a DaemonSet gets
// drainguard as a Deployment does; the other documents of the template (its
// headless Service, a ServiceAccount, a pre-delete Job) are rendered as they
// are; a workload of another kind, two workloads, or the hold on a workload
// that is no Deployment stop the render, naming the step. Nothing of the
// chart's plain render is lost (the built `drainguard check --plain` says so
// too), and where a render does lose the operator, check says it.

import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { type KubeObject, parseObjects, problems } from '../deploy/support/manifests.ts';
import { MODES, cleanupCharts, templateError, templateText } from './support/charts.ts';
import { adoptOwnFileShape, adoptShape, check, fixture, groundTruth, guardOf, plainRender, shapeSection } from './support/shapes.ts';
import { tempDir } from '../support/proc.ts';

const NS = 'ops';
const RELEASE = 'shape';
const OP = `${RELEASE}-op`;
const scratch = tempDir();
test.after(() => {
  cleanupCharts();
  rmSync(scratch, { recursive: true, force: true });
});

const render = (chart: string, set: Record<string, unknown> = {}): string => templateText(chart, { namespace: NS, release: RELEASE, set });
const fails = (chart: string, set: Record<string, unknown> = {}): string =>
  templateError(chart, { namespace: NS, release: RELEASE, set }) ?? '(rendered)';
const keyOf = (o: KubeObject): string => `${o.kind}/${o.metadata.namespace ?? NS}/${o.metadata.name}`;
const find = (objects: KubeObject[], kind: string, name: string): KubeObject | undefined =>
  objects.find((o) => o.kind === kind && o.metadata.name === name);

/** The plain render (the fixture as it is), as a file for check --plain. */
function plainFile(shape: string, set: Record<string, unknown> = {}): string {
  const file = join(scratch, `${shape}-${Object.values(set).join('-') || 'plain'}.yaml`);
  writeFileSync(file, templateText(fixture(shape), { namespace: NS, release: RELEASE, set }));
  return file;
}

/**
 * Every object of the plain render is in TEXT, and each but the workload
 * KIND/OP exactly as it was; the workload runs drainguard in MODE with the
 * guard the plain render calls for; `drainguard check -n NS --plain PLAIN -`
 * finds nothing.
 */
function assertRendered(shape: string, text: string, kind: string, mode: string): KubeObject {
  const plain = plainRender(shape, RELEASE, NS);
  const objects = parseObjects(text);
  for (const o of plain) {
    const rendered = objects.filter((r) => keyOf(r) === keyOf(o));
    assert.is(rendered.length, 1, `${keyOf(o)} of the plain render, once`);
    if (o.kind !== kind) assert.equal(rendered[0], o, `${keyOf(o)} as the chart renders it`);
  }
  const workload = find(objects, kind, OP);
  assert.ok(workload, `the ${kind}`);
  assert.is(workload!.metadata.annotations?.['drainguard.dev/mode'], mode);
  assert.equal(guardOf(workload!), groundTruth(plain, NS, find(plain, kind, OP)!), `the guard of the ${kind}`);
  for (const own of ['Role', 'RoleBinding'])
    assert.ok(find(objects, own, `drainguard:${NS}:${OP}`), `drainguard's ${own}, named after the ${kind}`);
  assert.ok(find(objects, 'Job', `${OP}-drainguard-release`), "drainguard's post-delete hook, named after it");
  const checked = check(text, NS, ['--plain', plainFile(shape)]);
  assert.is(checked.code, 0, checked.out);
  return workload!;
}

const statefulset = adoptOwnFileShape('statefulset', 'An operator that runs as a StatefulSet');
const daemonset = adoptOwnFileShape('daemonset', 'An operator that runs as a StatefulSet');
const oneTemplate = adoptShape('one-template', "Other objects in the Deployment's template");

for (const mode of MODES) {
  test(`statefulset, ${mode}: the StatefulSet gets drainguard, its headless Service beside it stays as it is`, async () => {
    const text = render(statefulset, { 'drainguard.mode': mode });
    const sts = assertRendered('statefulset', text, 'StatefulSet', mode);
    assert.is(sts.spec.serviceName, OP);
    assert.is(sts.spec.template.spec.terminationGracePeriodSeconds, 60, 'raised from 30 to 60');
    assert.equal((await Promise.all(parseObjects(text).map(problems))).flat(), []);
  });

  test(`daemonset, ${mode}: the DaemonSet gets drainguard, and its guard`, async () => {
    const text = render(daemonset, { 'drainguard.mode': mode });
    assertRendered('daemonset', text, 'DaemonSet', mode);
    assert.equal((await Promise.all(parseObjects(text).map(problems))).flat(), []);
  });

  test(`one-template, ${mode}: the ServiceAccount and the pre-delete Job beside the Deployment are rendered, and the ServiceAccount guarded`, () => {
    const text = render(oneTemplate, { 'drainguard.mode': mode });
    const deployment = assertRendered('one-template', text, 'Deployment', mode);
    assert.ok(guardOf(deployment).includes(`serviceaccount/${NS}/${OP}`), guardOf(deployment).join(','));
    assert.is(find(parseObjects(text), 'Job', `${OP}-cleanup`)?.metadata.annotations?.['helm.sh/hook'], 'pre-delete');
  });
}

test('drainguard.enabled false: the template renders as the chart alone renders it', () => {
  for (const [shape, chart] of [
    ['statefulset', statefulset],
    ['one-template', oneTemplate],
  ] as const) {
    const objects = parseObjects(render(chart, { 'drainguard.enabled': false }));
    assert.equal(objects.map(keyOf).sort(), plainRender(shape, RELEASE, NS).map(keyOf).sort(), shape);
    for (const o of plainRender(shape, RELEASE, NS))
      assert.equal(
        objects.find((r) => keyOf(r) === keyOf(o)),
        o,
        keyOf(o),
      );
  }
});

const otherKind = adoptShape('other-kind');
for (const kind of ['Pod', 'CronJob', 'Job']) {
  test(`other-kind, ${kind}: the render stops, naming the kind and the doc's step; check says so of the plain render`, () => {
    const error = fails(otherKind, { operatorKind: kind });
    assert.match(
      error,
      `drainguard.operator.template: _deployment.yaml renders the ${kind} ${OP}, a kind drainguard does not add itself to`,
    );
    assert.match(error, 'move it to a template file of its own');
    assert.match(error, '(docs/helm.md, "A workload of another kind")');
    assert.ok(shapeSection('A workload of another kind').includes('its pod template yourself'), 'the doc has the step');
    // Switched off, the chart renders as it is.
    assert.equal(
      parseObjects(render(otherKind, { operatorKind: kind, 'drainguard.enabled': false }))
        .map(keyOf)
        .sort(),
      [`ClusterRole/${NS}/${OP}`, `ClusterRoleBinding/${NS}/${OP}`, `${kind}/${NS}/${OP}`, `ServiceAccount/${NS}/${OP}`],
    );
    // The chart as it is: its operator runs unguarded, and check does not stay silent.
    const checked = check(templateText(fixture('other-kind'), { namespace: NS, release: RELEASE, set: { operatorKind: kind } }), NS);
    assert.is(checked.code, 1, checked.out);
    if (kind === 'Pod') assert.match(checked.out, `warning no-drainguard: Pod/${NS}/${OP}`);
    else {
      assert.match(checked.out, `warning workload-kind-unsupported: ${kind}/${NS}/${OP}`);
      assert.match(checked.out, `a ${kind}'s pods run to completion`);
    }
  });
}

test('two workloads in one template stop the render, naming both and drainguard.operators', () => {
  const chart = adoptOwnFileShape('statefulset', 'An operator that runs as a StatefulSet');
  const template = join(chart, 'templates/_operator.yaml');
  const webhook = [
    'apiVersion: apps/v1',
    'kind: Deployment',
    'metadata: { name: "{{ .Release.Name }}-webhook" }',
    'spec:',
    '  selector: { matchLabels: { app: webhook } }',
    '  template:',
    '    metadata: { labels: { app: webhook } }',
    '    spec: { containers: [{ name: webhook, image: example.com/webhook:1.0.0 }] }',
  ];
  writeFileSync(template, `${readFileSync(template, 'utf8')}---\n${webhook.join('\n')}\n`);
  const error = fails(chart);
  assert.match(error, `_operator.yaml renders 2 workloads (StatefulSet ${OP}, Deployment ${RELEASE}-webhook)`);
  assert.match(error, 'list each in drainguard.operators');
});

test('the hold on a StatefulSet or a DaemonSet stops the render, naming drainguard.hold.kinds', () => {
  for (const [chart, kind] of [
    [statefulset, 'StatefulSet'],
    [daemonset, 'DaemonSet'],
  ] as const) {
    assert.match(
      fails(chart, { 'drainguard.hold.kinds': ['installations.operator.example.io'] }),
      `drainguard.hold: the hold keeps the operator's Deployment from being deleted, and the ${kind} ${OP} is none: remove drainguard.hold.kinds`,
    );
  }
});

// A render that lost the operator: the StatefulSet's template made a partial that nothing renders (the
// library chart before this one rendered nothing of it). check on it says so, and --plain names what went.
test('a render without the StatefulSet: check reports workload-missing, and with --plain each object lost', () => {
  const chart = adoptOwnFileShape('statefulset', 'An operator that runs as a StatefulSet');
  rmSync(join(chart, 'templates/drainguard.yaml'));
  const text = render(chart);
  assert.equal(
    parseObjects(text)
      .map((o) => o.kind)
      .sort(),
    ['ClusterRole', 'ClusterRoleBinding', 'ServiceAccount'],
  );
  const alone = check(text, NS);
  assert.is(alone.code, 1, alone.out);
  assert.match(alone.out, `warning workload-missing: ServiceAccount/${NS}/${OP}`);
  assert.match(alone.out, "the render lost the operator's workload");
  const compared = check(text, NS, ['--plain', plainFile('statefulset')]);
  assert.is(compared.code, 1, compared.out);
  assert.match(compared.out, `error object-lost: StatefulSet/${NS}/${OP}`);
  assert.match(compared.out, `error object-lost: Service/${NS}/${OP}`);
  assert.match(compared.out, "and with it the operator's pods");
});

// What a library that dropped the template's other documents rendered: the Deployment alone, guarding a
// ServiceAccount the render no longer holds. The fix points at the render, not at the guard.
test('a render without the ServiceAccount beside the Deployment: guarded-object-missing says to render it', () => {
  const text = render(oneTemplate, { 'drainguard.mode': 'native-sidecar' });
  const documents = text.split(/^---$/m);
  const lossy = documents
    .filter((d) => !new RegExp(`^kind: ServiceAccount\nmetadata:\n {2}name: ${OP}$`, 'm').test(d) && !d.includes(`name: ${OP}-cleanup`))
    .join('---');
  assert.is(documents.length - lossy.split(/^---$/m).length, 2, 'the ServiceAccount and the Job taken out');
  const checked = check(lossy, NS, ['-o', 'json']);
  assert.is(checked.code, 1, checked.out);
  const findings = (JSON.parse(checked.out) as { findings: { code: string; message: string; fix: string }[] }).findings;
  const missing = findings.find((f) => f.code === 'guarded-object-missing');
  assert.ok(missing, checked.out);
  assert.match(missing!.message, 'most likely the render lost it');
  assert.ok(missing!.fix.startsWith(`render serviceaccount/${NS}/${OP} with the release`), missing!.fix);
  const compared = check(lossy, NS, ['--plain', plainFile('one-template')]);
  assert.match(compared.out, `error object-lost: ServiceAccount/${NS}/${OP}`);
  assert.match(compared.out, `error object-lost: Job/${NS}/${OP}-cleanup`);
});

test.run();
