// What can only go wrong in a chart's settings fails `helm template` with a
// message that names the setting and the fix; the same chart renders once the
// setting is right (so each failure is the check's, not a broken chart's).

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { EXAMPLE, cleanupCharts, stageChart, templateError } from './support/charts.ts';
import { graceRuleTemplate } from '../../scripts/generate/grace-rule.ts';

const NS = 'operator-system';
const chart = stageChart(EXAMPLE);
const fails = (set: Record<string, unknown>) => templateError(chart, { namespace: NS, set }) ?? '(rendered)';
const renders = (set: Record<string, unknown>) =>
  assert.equal(templateError(chart, { namespace: NS, set }), undefined, JSON.stringify(set));

test.after(cleanupCharts);

test('the example renders with its defaults in every mode', () => {
  for (const mode of ['wrap', 'native-sidecar', 'sidecar']) renders({ 'drainguard.mode': mode });
});

test('a grace period too short for drain + stop timeout + margin', () => {
  assert.match(
    fails({ 'drainguard.terminationGracePeriodSeconds': 30, 'drainguard.drainTimeoutSeconds': 25 }),
    'drainguard: terminationGracePeriodSeconds 30 is too short for drainTimeoutSeconds 25 + stopTimeoutSeconds 5 + 2 s margin: set it to at least 32',
  );
  renders({ 'drainguard.terminationGracePeriodSeconds': 32, 'drainguard.drainTimeoutSeconds': 25 });
  assert.match(
    fails({ 'drainguard.terminationGracePeriodSeconds': 7 }),
    'drainguard: terminationGracePeriodSeconds 7 leaves no time to drain after stopTimeoutSeconds 5 and the 2 s margin: set terminationGracePeriodSeconds to at least 8',
  );
  // Kubebuilder's 10 s fits with the defaults: 3 s of drain.
  renders({ 'drainguard.terminationGracePeriodSeconds': 10 });
});

test("the rule and the stop timeout come from the generated templates (_grace-rule.tpl from graceNeeded, _defaults.tpl), not from the chart's text", () => {
  const other = stageChart(EXAMPLE);
  const templates = join(other, 'charts/drainguard/templates');
  writeFileSync(
    join(templates, '_defaults.tpl'),
    '{{- define "drainguard.defaults" -}}{"stopTimeoutSeconds":9,"socket":"/run/drainguard/drain.sock"}{{- end -}}',
  );
  const graceNeeded = (drainMs: number, stopMs: number) => drainMs + stopMs + 3000;
  writeFileSync(
    join(templates, '_grace-rule.tpl'),
    graceRuleTemplate({ graceNeeded, defaultDrainTimeout: (graceMs, stopMs) => Math.max(0, graceMs - graceNeeded(0, stopMs)) }),
  );
  const fails = (set: Record<string, unknown>) => templateError(other, { namespace: NS, set }) ?? '(rendered)';
  assert.match(
    fails({ 'drainguard.terminationGracePeriodSeconds': 12 }),
    'drainguard: terminationGracePeriodSeconds 12 leaves no time to drain after stopTimeoutSeconds 9 and the 3 s margin: set terminationGracePeriodSeconds to at least 13',
  );
  assert.match(
    fails({ 'drainguard.terminationGracePeriodSeconds': 20, 'drainguard.drainTimeoutSeconds': 9 }),
    'drainguard: terminationGracePeriodSeconds 20 is too short for drainTimeoutSeconds 9 + stopTimeoutSeconds 9 + 3 s margin: set it to at least 21',
  );
  renders({ 'drainguard.terminationGracePeriodSeconds': 12 });
});

test('a guard list naming an object the release does not contain', () => {
  assert.match(
    fails({ 'drainguard.guard.clusterRoles': ['example-operator-manager'] }),
    'drainguard: the guard names ClusterRole/example-operator-manager, which the release does not contain (looked in rbac.yaml, serviceaccount.yaml): fix the name in drainguard.guard',
  );
  assert.match(
    fails({ 'drainguard.operator.serviceAccount': 'controller-manager' }),
    'the guard names ServiceAccount/operator-system/controller-manager, which the release does not contain',
  );
  assert.match(
    fails({ 'drainguard.guard.templates': ['rbac.yaml'] }),
    'the guard names ServiceAccount/operator-system/example-operator, which the release does not contain (looked in rbac.yaml): fix drainguard.operator.serviceAccount, add the template that creates it to drainguard.guard.templates, or, when the release does not create it, set drainguard.guard.serviceAccount: false',
  );
  // The check off: the render trusts the names.
  renders({ 'drainguard.guard.clusterRoles': ['example-operator-manager'], 'drainguard.guard.templates': [] });
});

test('a socket path outside the shared volume', () => {
  assert.match(
    fails({ 'drainguard.socket': '/tmp/drain.sock' }),
    'drainguard: socket "/tmp/drain.sock" is outside the shared volume mounted at /run/drainguard in both containers',
  );
  assert.match(
    fails({ 'drainguard.socket': '/run/drainguard/sub/drain.sock' }),
    'socket "/run/drainguard/sub/drain.sock" must be directly in /run/drainguard/',
  );
  renders({ 'drainguard.socket': '/run/drainguard/operator.sock' });
});

test('values the schema refuses, and settings that are required', () => {
  assert.match(fails({ 'drainguard.mode': 'daemonset' }), /drainguard:[\s\S]*mode/);
  assert.match(fails({ 'drainguard.stopTimeout': '5s' }), /additional properties 'stopTimeout' not allowed/);
  assert.match(fails({ 'drainguard.terminationGracePeriodSeconds': '60' }), /terminationGracePeriodSeconds[\s\S]*want integer/);
  assert.match(
    fails({ 'drainguard.operator.deployment': '' }),
    "drainguard.operator.template (the template of the operator's Deployment, StatefulSet or DaemonSet, such as manager/_manager.yaml) or drainguard.operator.deployment (its name) is needed",
  );
  assert.match(
    fails({ 'drainguard.operator.container': 'operator' }),
    'drainguard: the Deployment example-operator has no container "operator": set drainguard.operator.container',
  );
  assert.match(
    fails({ 'drainguard.predelete.stages': [] }),
    'drainguard.predelete.stages: the hook is enabled but names no custom resources to delete',
  );
});

test.run();
