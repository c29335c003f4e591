// The plugin's answers to kubebuilder's requests, without kubebuilder (its
// real runs are test/kubebuilder/plugin.test.ts): the flags and metadata it
// declares, the refusals (an answer with error: true and no file), and that
// it answers only with the files it changes.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { type PluginRequest, answer } from '../../src/kubebuilder/plugin.ts';

const ROLE = (kind: string) => `apiVersion: rbac.authorization.k8s.io/v1\nkind: ${kind}\nmetadata:\n  name: manager-role\nrules: []\n`;
const PROJECT: Record<string, string> = {
  'config/default/kustomization.yaml': 'namespace: guestbook-system\nnamePrefix: guestbook-\nresources:\n  - ../rbac\n  - ../manager\n',
  'config/rbac/role.yaml': ROLE('ClusterRole'),
  'bin/controller-gen': '\u007fELF\ufffd\ufffd',
};
const request = (command: string, universe = PROJECT, args: string[] = []): PluginRequest => ({
  apiVersion: 'v1alpha1',
  command,
  args,
  universe,
});

test('flags: --mode for init and edit, none for create api and create webhook; metadata: the description and examples', () => {
  for (const sub of ['init', 'edit'])
    assert.equal(
      answer({ ...request('flags'), args: [`--${sub}`] }).response.flags?.map((f) => [f.Name, f.Type, f.Default]),
      [['mode', 'string', 'wrap']],
    );
  for (const sub of ['api', 'webhook']) assert.equal(answer({ ...request('flags'), args: [`--${sub}`] }).response.flags, []);
  const meta = answer({ ...request('metadata'), args: ['--edit'] }).response.metadata;
  assert.match(meta.description ?? '', 'config/drainguard');
  assert.match(meta.examples ?? '', 'kubebuilder edit --plugins=drainguard.dev/v1-alpha');
});

test('init: only the files it writes, never the universe it was given (a binary would come back mangled)', () => {
  const { response } = answer(request('init', PROJECT, ['--domain', 'my.domain', '--mode', 'sidecar']));
  assert.not.ok(response.error, response.errorMsgs?.join());
  assert.equal(Object.keys(response.universe).sort(), ['config/drainguard/drainguard.yaml', 'config/drainguard/kustomization.yaml']);
  assert.match(response.universe['config/drainguard/kustomization.yaml']!, '/components/sidecar?ref=');
  assert.equal(answer(request('create api')).response.universe, {});
});

test('the layout from config/rbac/role.yaml: a Role takes kubebuilder-namespaced', () => {
  const { response } = answer(request('edit', { ...PROJECT, 'config/rbac/role.yaml': ROLE('Role') }, ['--mode=wrap']));
  assert.match(response.universe['config/drainguard/kustomization.yaml']!, '/components/kubebuilder-namespaced?ref=');
});

const refusal = (req: PluginRequest): string => {
  const { response, report } = answer(req);
  assert.ok(response.error, 'refused');
  assert.equal(response.universe, {}, 'nothing written');
  assert.is(report, `${response.errorMsgs!.join('\n')}\n`);
  return response.errorMsgs!.join('\n');
};

test('refused, nothing written: a bad --mode, an unknown command, no config/default, an overlay of the other layout', () => {
  assert.match(
    refusal(request('edit', PROJECT, ['--mode', 'inline'])),
    'DG_KUBEBUILDER_REQUEST: --mode "inline": expected one of wrap, native-sidecar, sidecar',
  );
  assert.match(refusal(request('create plugin')), 'a command the plugin does not have');
  const noDefault = Object.fromEntries(Object.entries(PROJECT).filter(([path]) => !path.startsWith('config/default/')));
  assert.match(refusal(request('edit', noDefault)), 'DG_KUBEBUILDER_REFUSED: config/default/kustomization.yaml is not there');
  const initial = answer(request('init')).response.universe;
  const namespaced = { ...PROJECT, ...initial, 'config/rbac/role.yaml': ROLE('Role') };
  assert.match(refusal(request('edit', namespaced)), 'names the kubebuilder component, and the project is namespace-scoped');
});

test('a chart whose manager.yaml holds no Deployment: refused, naming docs/helm.md', () => {
  const chart = {
    'dist/chart/Chart.yaml': 'apiVersion: v2\nname: guestbook\nversion: 0.1.0\n',
    'dist/chart/values.yaml': 'manager:\n  replicas: 1\n',
    'dist/chart/templates/manager/manager.yaml': '{{- if .Values.manager.enabled }}\n{{- end }}\n',
    'dist/chart/templates/rbac/manager-rolebinding.yaml': 'kind: ClusterRoleBinding\n',
  };
  assert.match(
    refusal(request('edit', { ...PROJECT, ...chart })),
    "manager.yaml: holds no Deployment: not the chart kubebuilder's helm/v2-alpha writes",
  );
});

test.run();
