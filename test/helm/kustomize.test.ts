// One source of truth: the library chart renders, for the same settings, the
// very objects the kustomize components render. The chart under test is
// deploy/examples/operator itself (test/helm/fixtures/kustomize-example reads
// its files), with drainguard added by the library in each mode; what
// kubectl kustomize renders for deploy/examples/MODE is deploy/rendered/MODE.yaml
// (kept equal to kubectl's output by test/deploy/drift.test.ts).

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { type KubeObject, rendered } from '../deploy/support/manifests.ts';
import { KUSTOMIZE_EXAMPLE, MODES, cleanupCharts, stageChart, template } from './support/charts.ts';
import { WRAP_MEMORY_MIB } from '../../src/check/memory.ts';

/**
 * The Namespace's drainguard.dev/uninstall=last label serves an uninstall with kubectl
 * (docs/deploy.md); Helm never deletes the namespace, and a library chart cannot label the chart's.
 */
function withoutUninstallLabel(o: KubeObject): KubeObject {
  if (o.kind !== 'Namespace') return o;
  const labels = Object.entries(o.metadata.labels ?? {}).filter(([k]) => k !== 'drainguard.dev/uninstall');
  const metadata = { ...o.metadata };
  delete metadata.labels;
  return { ...o, metadata: { ...metadata, ...(labels.length > 0 && { labels: Object.fromEntries(labels) }) } };
}
/** The chart says in an annotation that it raised the chart's own grace period; the component's patch only sets it. */
function withoutGraceNote(o: KubeObject): KubeObject {
  if (o.kind !== 'Deployment') return o;
  const annotations = { ...o.metadata.annotations };
  assert.match(annotations['drainguard.dev/grace-period'] ?? '', /^raised from 10s to \d+s/);
  delete annotations['drainguard.dev/grace-period'];
  return { ...o, metadata: { ...o.metadata, annotations } };
}
const mebibytes = (q: string): number => {
  assert.match(q, /^\d+Mi$/);
  return Number.parseInt(q, 10);
};
/**
 * Wrap mode: both add drainguard's memory (its resources, WRAP_MEMORY_MIB: 64Mi request
 * and 160Mi limit) to the operator container's: the chart by itself, said in the Deployment's
 * drainguard.dev/memory annotation; the example by a patch of the sums (a kustomize
 * patch cannot add up). The annotation is checked here, then dropped for the comparison.
 */
function withoutMemoryNote(o: KubeObject): KubeObject {
  if (o.kind !== 'Deployment' || o.metadata.annotations?.['drainguard.dev/mode'] !== 'wrap') return o;
  const copy = structuredClone(o);
  const ours = copy.spec.template.spec.containers[0].resources;
  const before = {
    request: mebibytes(ours.requests.memory) - WRAP_MEMORY_MIB.request,
    limit: mebibytes(ours.limits.memory) - WRAP_MEMORY_MIB.limit,
  };
  assert.is(
    copy.metadata.annotations?.['drainguard.dev/memory'],
    `memory request ${before.request}Mi to ${ours.requests.memory}, limit ${before.limit}Mi to ${ours.limits.memory}: drainguard runs in this container (drainguard.resources added)`,
  );
  delete copy.metadata.annotations?.['drainguard.dev/memory'];
  return copy;
}
const key = (o: KubeObject) => `${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`;
const byKey = (objects: KubeObject[]) => new Map(objects.map((o) => [key(o), o]));
const chart = stageChart(KUSTOMIZE_EXAMPLE);

test.after(cleanupCharts);

for (const mode of MODES) {
  test(`${mode}: helm template renders what kubectl kustomize renders, object for object`, () => {
    const fromKustomize = byKey(rendered(mode).map(withoutUninstallLabel));
    const fromHelm = byKey(
      template(chart, { namespace: 'example-system', set: { 'drainguard.mode': mode } })
        .map(withoutGraceNote)
        .map(withoutMemoryNote),
    );
    assert.equal([...fromHelm.keys()].sort(), [...fromKustomize.keys()].sort(), 'the same objects');
    for (const [k, o] of fromKustomize) assert.equal(fromHelm.get(k), o, k);
  });
}

test('the comparison sees a difference: another stop timeout changes the rendered pod', () => {
  const fromHelm = byKey(
    template(chart, { namespace: 'example-system', set: { 'drainguard.mode': 'wrap', 'drainguard.stopTimeoutSeconds': 10 } }),
  );
  const deployment = [...fromHelm.values()].find((o) => o.kind === 'Deployment')!;
  assert.not.equal(
    deployment,
    rendered('wrap').find((o) => o.kind === 'Deployment'),
  );
});

test.run();
