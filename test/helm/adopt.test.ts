// docs/helm.md's "Adding drainguard to the chart kubebuilder's helm plugin
// generates" and "... to a chart from `helm create`", applied to the letter to
// the chart layouts (dist/chart of a project the kubebuilder CLI scaffolds,
// cluster-scoped and namespace-scoped, and test/fixtures/helm-create, written
// from `helm create`'s): the doc's Chart.yaml
// dependency, its `git mv`, its one template and its values. For every mode
// and two releases in two namespaces, the render passes `drainguard check -n`
// (the built executable) with no finding, and the guard and drainguard's RBAC
// name the objects the Deployment really uses, following the release name.

import { execFileSync } from 'node:child_process';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { guardTargetKey, parseGuardList } from '../../src/config/guard-list.ts';
import { EXE } from '../support/proc.ts';
import { type KubeObject, ofKind, theDeployment } from '../deploy/support/manifests.ts';
import { adoptHelmCreateChart, adoptKubebuilderChart } from './support/adopt.ts';
import { MODES, cleanupCharts, template, templateError } from './support/charts.ts';

const charts = {
  kubebuilder: adoptKubebuilderChart(),
  'kubebuilder namespaced': adoptKubebuilderChart(undefined, 'namespaced'),
  'helm create': adoptHelmCreateChart(),
};
test.after(cleanupCharts);

const GUARD_CONTAINER: Record<string, [string, string]> = {
  wrap: ['containers', '*'],
  'native-sidecar': ['initContainers', 'drainguard'],
  sidecar: ['containers', 'drainguard'],
};

function guardOf(objects: KubeObject[], mode: string): string[] {
  const [list, name] = GUARD_CONTAINER[mode]!;
  const env = theDeployment(objects)
    .spec.template.spec[list].filter((c: any) => name === '*' || c.name === name)
    .flatMap((c: any) => c.env ?? []);
  const value = env.find((e: any) => e.name === 'DRAINGUARD_GUARD').value as string;
  return parseGuardList(value, 'DRAINGUARD_GUARD').map(guardTargetKey);
}

const RELEASES = [
  { release: 'guestbook', namespace: 'guestbook-system' },
  { release: 'shop', namespace: 'operators' },
];

for (const [name, chart] of Object.entries(charts)) {
  for (const mode of MODES) {
    test(`${name}, ${mode}: by the doc's steps, drainguard check finds nothing, for two releases`, () => {
      for (const { release, namespace } of RELEASES) {
        const text = execFileSync(EXE, ['check', '-n', namespace, '-'], {
          input: JSON.stringify({
            apiVersion: 'v1',
            kind: 'List',
            items: template(chart, { release, namespace, set: { 'drainguard.mode': mode } }),
          }),
          encoding: 'utf8',
        });
        assert.match(text, /no findings/, `${release} in ${namespace}`);
        const objects = template(chart, { release, namespace, set: { 'drainguard.mode': mode } });
        assert.is(ofKind(objects, 'Deployment').length, 1, 'the Deployment once');
        const deployment = theDeployment(objects);
        assert.ok(deployment.metadata.name.startsWith(release), `${deployment.metadata.name} follows the release`);
        const sa = deployment.spec.template.spec.serviceAccountName as string;
        const guard = guardOf(objects, mode);
        assert.ok(guard.includes(`serviceaccount/${namespace}/${sa}`), `the ServiceAccount the pod runs as: ${guard}`);
        // Every binding of that ServiceAccount but drainguard's own, and the role it binds, are guarded.
        const bindings = objects.filter(
          (o) =>
            /^(Cluster)?RoleBinding$/.test(o.kind) &&
            o.metadata.labels?.['app.kubernetes.io/name'] !== 'drainguard' &&
            o.subjects?.some((s: any) => s.kind === 'ServiceAccount' && s.name === sa),
        );
        assert.ok(bindings.length > 0, 'the chart binds its ServiceAccount');
        if (name === 'kubebuilder namespaced')
          assert.ok(
            bindings.some((b) => b.kind === 'RoleBinding' && b.roleRef.kind === 'Role' && b.roleRef.name.endsWith('manager-role')),
            'manager-role a Role',
          );
        for (const b of bindings) {
          const ns = (o: KubeObject) => o.metadata.namespace ?? namespace;
          const role = b.roleRef.kind === 'Role' ? `role/${ns(b)}/${b.roleRef.name}` : `clusterrole/${b.roleRef.name}`;
          const own = b.kind === 'RoleBinding' ? `rolebinding/${ns(b)}/${b.metadata.name}` : `clusterrolebinding/${b.metadata.name}`;
          assert.ok(guard.includes(own) && guard.includes(role), `${own}, ${role} in ${guard.join(',')}`);
        }
        const present = new Set(
          objects.map(
            (o) =>
              `${o.kind.toLowerCase()}/${o.kind === 'ClusterRole' || o.kind === 'ClusterRoleBinding' ? '' : `${o.metadata.namespace ?? namespace}/`}${o.metadata.name}`,
          ),
        );
        for (const entry of guard) assert.ok(present.has(entry), `${entry} is in the release`);
        for (const b of objects.filter((o) => o.metadata.labels?.['app.kubernetes.io/name'] === 'drainguard' && o.subjects)) {
          assert.equal(b.subjects, [{ kind: 'ServiceAccount', name: sa, namespace }]);
        }
      }
    });
  }
}

test('kubebuilder: the scaffold grace period is raised and said so', () => {
  const objects = template(charts.kubebuilder, { namespace: 'gb', set: { 'drainguard.mode': 'wrap' } });
  const deployment = theDeployment(objects);
  assert.is(deployment.spec.template.spec.terminationGracePeriodSeconds, 60);
  assert.match(deployment.metadata.annotations?.['drainguard.dev/grace-period'] ?? '', /raised from 10s to 60s/);
});

test('a folder in guard.templates, and a template that is not a partial, are told with the value to set', () => {
  const folder = templateError(charts.kubebuilder, { namespace: 'gb', set: { 'drainguard.guard.templates': ['rbac/'] } });
  assert.match(folder ?? '', /drainguard.guard.templates: "rbac\/" is not a template file: Helm's templates cannot list a folder/);
  const whole = templateError(charts.kubebuilder, { namespace: 'gb', set: { 'drainguard.operator.template': 'manager/manager.yaml' } });
  assert.match(whole ?? '', /drainguard.operator.template: "manager\/manager.yaml" is not a partial/);
});

test('names may be templates, rendered against the chart', () => {
  const objects = template(charts['helm create'], {
    release: 'tpl',
    namespace: 'ops',
    set: {
      'drainguard.guard.clusterRoles': ['{{ include "my-operator.fullname" . }}'],
      'drainguard.guard.clusterRoleBindings': ['{{ include "my-operator.fullname" . }}'],
    },
  });
  assert.ok(guardOf(objects, 'wrap').includes('clusterrole/tpl-my-operator'));
});

test.run();
