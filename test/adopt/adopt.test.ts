// `drainguard adopt` (the built executable) on every chart shape the chart
// tests write, then the real tools on its result: helm template for two
// releases in two namespaces, and `drainguard check` (the executable again,
// on helm's output) with no findings; the guard of each workload is the one
// computed here from the chart's plain render. A shape adopt cannot decide
// for is refused with the step to do by hand, the chart byte for byte as it
// was; run twice, the second run changes nothing; --dry-run writes nothing.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { type KubeObject } from '../deploy/support/manifests.ts';
import { cleanupCharts, template, templateText } from '../helm/support/charts.ts';
import { check, fixture, groundTruth, guardOf, plainRender } from '../helm/support/shapes.ts';
import { SHAPES, sourceOf } from './chart-shapes.ts';
import { adopt, cleanupCopies, copyChart, treeDigest } from './support.ts';

test.after(() => {
  cleanupCopies();
  cleanupCharts();
});

const WORKLOADS = new Set(['Deployment', 'StatefulSet', 'DaemonSet']);
const RELEASES = [
  { release: 'alpha', namespace: 'alpha-system' },
  { release: 'beta', namespace: 'operators' },
];

for (const [name, shape] of Object.entries(SHAPES)) {
  test(`${name}: adopt, then helm template and drainguard check find nothing; the guard is the plain render's`, () => {
    const chart = copyChart(sourceOf(name, shape));
    const run = adopt(chart, ['-n', 'alpha-system', ...(shape.args ?? [])]);
    assert.is(run.code, 0, run.stdout + run.stderr);
    assert.match(run.stdout, /changed:\n/);
    assert.match(run.stdout, /no findings/);
    for (const { release, namespace } of RELEASES) {
      const text = templateText(chart, { release, namespace, set: shape.set });
      const result = check(text, namespace);
      assert.is(result.code, 0, `${release} in ${namespace}: ${result.out}`);
      assert.match(result.out, /no findings/);
      const objects = template(chart, { release, namespace, set: shape.set });
      const plain = shape.source?.includes('/')
        ? template(sourceOf(name, shape), { release, namespace, set: shape.set })
        : plainRender(shape.source ?? name, release, namespace, shape.set);
      const workloads = (list: KubeObject[]) => list.filter((o) => WORKLOADS.has(o.kind) && !o.metadata.annotations?.['helm.sh/hook']);
      assert.equal(
        workloads(objects).map((o) => `${o.kind}/${o.metadata.name}`),
        workloads(plain).map((o) => `${o.kind}/${o.metadata.name}`),
        'each workload once, as the plain render has it',
      );
      for (const w of workloads(objects)) {
        const before = workloads(plain).find((p) => p.kind === w.kind && p.metadata.name === w.metadata.name)!;
        assert.equal(guardOf(w), groundTruth(plain, namespace, before), `${w.kind} ${w.metadata.name}: its guard`);
      }
    }
    if (shape.mode) assert.match(run.stdout, new RegExp(`mode: ${shape.mode}\\n`));
  });
}

test('run twice: the second run changes nothing and says so', () => {
  const chart = copyChart(fixture('statefulset'));
  assert.is(adopt(chart).code, 0);
  const once = treeDigest(chart);
  const again = adopt(chart);
  assert.is(again.code, 0, again.stdout + again.stderr);
  assert.match(again.stdout, /nothing to change: the chart has drainguard already/);
  assert.match(again.stdout, /no findings/);
  assert.is(treeDigest(chart), once, 'byte for byte as the first run left it');
});

test('--dry-run prints the changes and writes nothing; the run after it writes them', () => {
  const chart = copyChart(fixture('aggregated'));
  const before = treeDigest(chart);
  const dry = adopt(chart, ['--dry-run']);
  assert.is(dry.code, 0, dry.stdout + dry.stderr);
  assert.match(dry.stdout, /would change \(--dry-run: nothing written\):/);
  assert.match(dry.stdout, /> templates\/deployment.yaml -> templates\/_deployment.yaml/);
  assert.is(treeDigest(chart), before, 'nothing written');
  // The control: the same run without --dry-run changes the chart.
  assert.is(adopt(chart).code, 0);
  assert.is.not(treeDigest(chart), before);
});

const REFUSED: Record<string, { source: string; args?: string[]; message: RegExp }> = {
  'a Pod as the operator': { source: 'other-kind', message: /renders the Pod .*"A workload of another kind"/ },
  'a CronJob as the operator': {
    source: 'other-kind',
    args: ['--set', 'operatorKind=CronJob'],
    message: /renders the CronJob .*"A workload of another kind"/,
  },
  'a container without command, in wrap mode': {
    source: 'no-command',
    message: /sets no command .*--command PATH.*--mode native-sidecar \(docs\/helm.md, "A container that names no command"\)/,
  },
  'a pod without a token, in wrap mode asked for': {
    source: 'no-token',
    args: ['--mode', 'wrap'],
    message: /mounts no ServiceAccount token .*"A pod without a ServiceAccount token"/,
  },
  "a container's own preStop hook, in a sidecar mode": {
    source: 'prestop',
    args: ['--mode', 'native-sidecar'],
    message: /preStop hook of its own, .*replacePreStop: true \(docs\/helm.md, "A container with a `preStop` hook of its own"\)/,
  },
  'the operator switched off by its values': {
    source: 'switches',
    args: ['--set', 'operator.enabled=false'],
    message: /no Deployment, StatefulSet or DaemonSet whose ServiceAccount the chart binds/,
  },
};

for (const [name, { source, args = [], message }] of Object.entries(REFUSED)) {
  test(`refused: ${name}, with the step to do by hand; the chart byte for byte as it was`, () => {
    const chart = copyChart(fixture(source));
    const before = treeDigest(chart);
    const run = adopt(chart, args);
    assert.is(run.code, 1, run.stdout + run.stderr);
    assert.match(run.stderr, /DG_ADOPT_REFUSED: /);
    assert.match(run.stderr, message);
    assert.match(run.stderr, /the chart is left as it was/);
    assert.is(treeDigest(chart), before);
  });
}

test('usage errors exit 2: no chart, not a chart, no helm', () => {
  const none = adopt('');
  assert.is(none.code, 2, none.stderr);
  const notChart = adopt(copyChart('test/helm/fixtures/charts/aggregated/templates'));
  assert.is(notChart.code, 2);
  assert.match(notChart.stderr, /DG_ADOPT_INPUT: .*neither a chart \(Chart.yaml\) nor a kustomize directory/);
  const chart = copyChart(fixture('aggregated'));
  const before = treeDigest(chart);
  const noHelm = adopt(chart, ['--helm', '/nonexistent/helm']);
  assert.is(noHelm.code, 2);
  assert.match(noHelm.stderr, /DG_ADOPT_INPUT: helm not found \("\/nonexistent\/helm"\)/);
  assert.is(treeDigest(chart), before);
});

test.run();
