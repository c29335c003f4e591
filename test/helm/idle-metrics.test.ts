// drainguard.idleMetrics through the real helm: DRAINGUARD_IDLE_METRICS on the
// container that runs drainguard in every mode (the operator's in wrap mode,
// drainguard's own in the sidecar modes, never the operator's there), a
// template following the chart's own port value, per entry of operators; and
// `drainguard check` (the built executable) on that render finding the URL
// that misses the operator's --metrics-bind-address port.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { type KubeObject, ofKind, parseObjects } from '../deploy/support/manifests.ts';
import { MODES, cleanupCharts, templateError, templateText } from './support/charts.ts';
import { adoptShape, check } from './support/shapes.ts';

const NS = 'ops';
const RELEASE = 'idle';
const chart = adoptShape('idle-metrics');
test.after(cleanupCharts);

const FOLLOWS = 'http://127.0.0.1:{{ .Values.metricsPort }}/metrics';
const render = (set: Record<string, unknown>): string => templateText(chart, { namespace: NS, release: RELEASE, set });
const deploymentOf = (text: string): KubeObject =>
  ofKind(parseObjects(text), 'Deployment').find((d) => d.metadata.name === `${RELEASE}-op`)!;

/** DRAINGUARD_IDLE_METRICS of each container of the pod that has it, by container name. */
function idleMetricsOf(d: KubeObject): Record<string, string> {
  const pod = d.spec.template.spec;
  return Object.fromEntries(
    [...pod.containers, ...(pod.initContainers ?? [])].flatMap((c: any) =>
      (c.env ?? []).filter((e: any) => e.name === 'DRAINGUARD_IDLE_METRICS').map((e: any) => [c.name, e.value]),
    ),
  );
}
/** The container drainguard runs in: the operator's in wrap mode, its own in the sidecar modes. */
const supervisorOf = (mode: string) => (mode === 'wrap' ? 'operator' : 'drainguard');

for (const mode of MODES) {
  test(`${mode}: idleMetrics renders DRAINGUARD_IDLE_METRICS in the container that runs drainguard, following the chart's port; check passes`, () => {
    const text = render({ 'drainguard.mode': mode, 'drainguard.idleMetrics': FOLLOWS });
    assert.equal(idleMetricsOf(deploymentOf(text)), { [supervisorOf(mode)]: 'http://127.0.0.1:8080/metrics' });
    const checked = check(text, NS);
    assert.is(checked.code, 0, checked.out);

    const moved = render({ 'drainguard.mode': mode, 'drainguard.idleMetrics': FOLLOWS, metricsPort: 8443 });
    assert.equal(idleMetricsOf(deploymentOf(moved)), { [supervisorOf(mode)]: 'http://127.0.0.1:8443/metrics' });
  });

  test(`${mode}: check finds idle-metrics-not-metrics-port when the URL's port is not the --metrics-bind-address one`, () => {
    const text = render({ 'drainguard.mode': mode, 'drainguard.idleMetrics': 'http://127.0.0.1:8080/metrics', metricsPort: 9090 });
    const checked = check(text, NS);
    assert.is(checked.code, 1, checked.out);
    assert.match(checked.out, 'idle-metrics-not-metrics-port');
    assert.match(checked.out, 'DRAINGUARD_IDLE_METRICS=http://127.0.0.1:9090/metrics');
  });

  test(`${mode}: an entry of operators takes its own idleMetrics`, () => {
    const entry = { template: '_deployment.yaml', command: ['/my-operator'], mode, idleMetrics: 'http://127.0.0.1:8080/metrics' };
    const text = render({ 'drainguard.operators': [entry] });
    assert.equal(idleMetricsOf(deploymentOf(text)), { [supervisorOf(mode)]: 'http://127.0.0.1:8080/metrics' });
    const wrong = render({ 'drainguard.operators': [{ ...entry, idleMetrics: 'http://127.0.0.1:8081/metrics' }] });
    assert.match(check(wrong, NS).out, 'idle-metrics-not-metrics-port');
  });
}

test('off by default: no DRAINGUARD_IDLE_METRICS; a URL without its scheme fails the schema', () => {
  for (const mode of MODES) assert.equal(idleMetricsOf(deploymentOf(render({ 'drainguard.mode': mode }))), {}, mode);
  assert.match(
    templateError(chart, { namespace: NS, release: RELEASE, set: { 'drainguard.idleMetrics': '127.0.0.1:8080' } }) ?? '(rendered)',
    /idleMetrics/,
  );
});

test.run();
