// drainguard as kubebuilder's external plugin drainguard.dev/v1-alpha, run by
// the real kubebuilder v4.16.0 (test/support/kubebuilder.ts) from the plugins
// path `drainguard kubebuilder-plugin install DIR` writes (the built
// executable): `kubebuilder init --plugins=go/v4,drainguard.dev/v1-alpha` in
// the cluster-scoped, multigroup and namespace-scoped layouts, and `kubebuilder
// edit --plugins=drainguard.dev/v1-alpha` on the projects the CLI scaffolds
// with `create api`, `make manifests` and helm/v2-alpha's chart (the
// multigroup one with `edit --plugins=helm/v2-alpha,drainguard.dev/v1-alpha`,
// the chart made anew and drainguard added in one run). Each result:
// config/drainguard rendered by the real kustomize (kubectl kustomize, the
// released components' URLs replaced by this checkout's components) and the
// chart by the real helm, each checked by `drainguard check` with no finding;
// config/default and the scaffold's chart, as kubebuilder left them, have no
// drainguard (the control). Run again, the plugin changes no file. The chart
// renders object for object what docs/helm.md's steps render (which
// test/helm/kubebuilder.test.ts installs and uninstalls on the real control
// plane), as config/drainguard is docs/deploy.md's overlay to the letter
// (overlay.unit.test.ts; test/deploy/apply.test.ts applies that one);
// apply.test.ts applies the plugin's own output and removes it.

import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parse } from 'yaml';
import { ofKind, theDeployment } from '../deploy/support/manifests.ts';
import { adoptKubebuilderChart } from '../helm/support/adopt.ts';
import { cleanupCharts, stageChart, template } from '../helm/support/charts.ts';
import { type Layout, scaffold } from '../support/kubebuilder.ts';
import { EXE, tempDir } from '../support/proc.ts';
import {
  KEY,
  changed,
  check,
  drainguardEnv,
  hasDrainguard,
  installPlugin,
  kubebuilder as kubebuilderWith,
  kustomize,
  snapshot,
} from './support/plugin.ts';

let PLUGINS = '';
test.before(() => {
  PLUGINS = installPlugin();
});
test.after(cleanupCharts);

const kubebuilder = (dir: string, args: string[], env: NodeJS.ProcessEnv = {}) => kubebuilderWith(PLUGINS, dir, args, env);

interface InitCase {
  readonly layout: 'cluster' | 'multigroup' | 'namespaced';
  readonly flags: string[];
  readonly mode?: string;
}
const INITS: InitCase[] = [
  { layout: 'cluster', flags: [] },
  { layout: 'multigroup', flags: ['--multigroup'], mode: 'native-sidecar' },
  { layout: 'namespaced', flags: ['--namespaced'], mode: 'sidecar' },
];

for (const { layout, flags, mode } of INITS) {
  test(`init --plugins=go/v4,${KEY} (${layout}${mode ? `, --mode ${mode}` : ''}): PROJECT records it, config/drainguard checks clean`, () => {
    const project = join(tempDir(), 'guestbook');
    mkdirSync(project);
    const args = [
      'init',
      `--plugins=go/v4,${KEY}`,
      '--domain',
      'my.domain',
      '--repo',
      'example.com/guestbook',
      '--fetch-deps=false',
      ...flags,
    ];
    const report = kubebuilder(project, [...args, ...(mode ? ['--mode', mode] : [])]);
    assert.match(report, /\+ config\/drainguard/);
    const VERSION = (JSON.parse(readFileSync('package.json', 'utf8')) as { version: string }).version;
    assert.match(readFileSync(join(project, 'config/drainguard/kustomization.yaml'), 'utf8'), `/components/guard-more?ref=v${VERSION}\n`);

    const config = parse(readFileSync(join(project, 'PROJECT'), 'utf8'));
    assert.equal(config.layout, ['go.kubebuilder.io/v4', KEY], 'the plugin is in the layout alpha generate replays');
    assert.is(config.multigroup === true, layout === 'multigroup');
    assert.is(config.namespaced === true, layout === 'namespaced');

    // The control: config/default, as go/v4 made it, has no drainguard.
    assert.not.ok(hasDrainguard(kustomize(project, 'default')), 'config/default stays as kubebuilder made it');
    const objects = kustomize(project);
    assert.ok(hasDrainguard(objects), 'config/drainguard adds it');
    assert.match(check(objects), /no findings/);
    const guard = drainguardEnv(objects, 'DRAINGUARD_GUARD') ?? '';
    const managerRole = layout === 'namespaced' ? 'role/guestbook-system/guestbook-manager-role' : 'clusterrole/guestbook-manager-role';
    assert.ok(guard.split(',').includes(managerRole), `${managerRole} in ${guard}`);
    const sidecar = theDeployment(objects).spec.template.spec.initContainers?.find((c: any) => c.name === 'drainguard');
    assert.is(sidecar?.restartPolicy === 'Always', mode === 'native-sidecar', 'the mode kubebuilder passed on');

    const before = snapshot(project);
    const again = kubebuilder(project, ['edit', `--plugins=${KEY}`]);
    assert.match(again, /nothing to change/);
    assert.equal(changed(before, snapshot(project)), [], 'the second run changes nothing');
  });
}

for (const layout of ['cluster', 'namespaced'] as Layout[]) {
  test(`${layout}: edit --plugins=${KEY} on a scaffolded project: config/drainguard and the helm/v2-alpha chart check clean`, () => {
    const project = join(tempDir(), 'guestbook');
    cpSync(scaffold(undefined, layout).dir, project, { recursive: true });
    const chart = join(project, 'dist/chart');
    const namespace = 'guestbook-system';
    // The control: the chart as helm/v2-alpha wrote it renders a Deployment without drainguard.
    assert.not.ok(hasDrainguard(template(stageChart(chart), { namespace, release: 'guestbook' })));
    const project0 = parse(readFileSync(join(project, 'PROJECT'), 'utf8'));

    const report = kubebuilder(project, ['edit', `--plugins=${KEY}`]);
    assert.match(report, /> dist\/chart\/templates\/manager\/manager.yaml -> dist\/chart\/templates\/manager\/_manager.yaml/);
    assert.equal(parse(readFileSync(join(project, 'PROJECT'), 'utf8')), project0, 'kubebuilder keeps PROJECT as it was on an edit');

    const objects = kustomize(project);
    assert.ok(hasDrainguard(objects));
    assert.match(check(objects), /no findings/);

    const rendered = template(stageChart(chart), { namespace, release: 'shop' });
    assert.is(ofKind(rendered, 'Deployment').length, 1, 'manager.yaml renders nothing: the Deployment once, from the partial');
    assert.ok(hasDrainguard(rendered));
    assert.match(check(rendered, namespace), /no findings/);
    assert.match(readFileSync(join(chart, 'Chart.yaml'), 'utf8'), /name: drainguard\n\s+version: \d/);
    // Object for object what docs/helm.md's steps render, which test/helm/kubebuilder.test.ts installs on the control plane.
    assert.equal(rendered, template(adoptKubebuilderChart(undefined, layout), { namespace, release: 'shop' }));

    const before = snapshot(project);
    assert.match(kubebuilder(project, ['edit', `--plugins=${KEY}`]), /nothing to change/);
    assert.equal(changed(before, snapshot(project)), [], 'the second run changes nothing');
  });
}

test(`multigroup: edit --plugins=helm/v2-alpha,${KEY} on a scaffolded project: its chart and config/drainguard check clean`, () => {
  const project = join(tempDir(), 'guestbook');
  cpSync(scaffold(undefined, 'multigroup').dir, project, { recursive: true });
  assert.ok(existsSync(join(project, 'api/webapp/v1')), "the multigroup layout: the API under its group's folder");
  const chart = join(project, 'dist/chart');
  const namespace = 'guestbook-system';
  // The control: the chart as helm/v2-alpha wrote it renders a Deployment without drainguard.
  assert.not.ok(hasDrainguard(template(stageChart(chart), { namespace, release: 'guestbook' })));

  // Another manifests file than the default one: helm/v2-alpha then runs no make target (no controller-gen in the copy).
  cpSync(join(project, 'dist/install.yaml'), join(project, 'dist/install-copy.yaml'));
  const report = kubebuilder(project, ['edit', `--plugins=helm/v2-alpha,${KEY}`, '--manifests=dist/install-copy.yaml']);
  assert.match(report, /> dist\/chart\/templates\/manager\/manager.yaml -> dist\/chart\/templates\/manager\/_manager.yaml/);
  const config = parse(readFileSync(join(project, 'PROJECT'), 'utf8'));
  assert.is(config.multigroup, true);
  assert.equal(config.layout, ['go.kubebuilder.io/v4']);

  const objects = kustomize(project);
  assert.ok(hasDrainguard(objects));
  assert.match(check(objects), /no findings/);
  const guard = (drainguardEnv(objects, 'DRAINGUARD_GUARD') ?? '').split(',');
  assert.ok(guard.includes('clusterrole/guestbook-manager-role'), `the manager's ClusterRole in ${guard}`);

  const rendered = template(stageChart(chart), { namespace, release: 'shop' });
  assert.is(ofKind(rendered, 'Deployment').length, 1, 'manager.yaml renders nothing: the Deployment once, from the partial');
  assert.ok(hasDrainguard(rendered));
  assert.match(check(rendered, namespace), /no findings/);
  const chartGuard = (drainguardEnv(rendered, 'DRAINGUARD_GUARD') ?? '').split(',');
  assert.ok(chartGuard.includes('clusterrole/shop-guestbook-manager-role'), `the release's manager ClusterRole in ${chartGuard}`);
  // Object for object what docs/helm.md's steps render on the same chart.
  assert.equal(rendered, template(adoptKubebuilderChart(undefined, 'multigroup'), { namespace, release: 'shop' }));

  const before = snapshot(project);
  assert.match(kubebuilder(project, ['edit', `--plugins=${KEY}`]), /nothing to change/);
  assert.equal(changed(before, snapshot(project)), [], 'the second run changes nothing');
});

test(`edit --plugins=helm/v2-alpha,${KEY}: helm/v2-alpha writes manager.yaml anew, the plugin takes it into the partial again`, () => {
  const project = join(tempDir(), 'guestbook');
  cpSync(scaffold().dir, project, { recursive: true });
  kubebuilder(project, ['edit', `--plugins=${KEY}`]);
  const manager = join(project, 'dist/chart/templates/manager/manager.yaml');
  const stub = readFileSync(manager, 'utf8');
  // Another manifests file than the default one: helm/v2-alpha then runs no make target (no controller-gen in the copy).
  cpSync(join(project, 'dist/install.yaml'), join(project, 'dist/install-copy.yaml'));
  const helmAlone = ['edit', '--plugins=helm/v2-alpha', '--manifests=dist/install-copy.yaml'];
  const alone = join(tempDir(), 'guestbook');
  cpSync(project, alone, { recursive: true });
  kubebuilder(alone, helmAlone);
  // The failure the chain prevents: the regenerated Deployment beside drainguard's.
  assert.match(readFileSync(join(alone, 'dist/chart/templates/manager/manager.yaml'), 'utf8'), /^kind: Deployment$/m);
  const twice = template(stageChart(join(alone, 'dist/chart')), { namespace: 'guestbook-system', release: 'guestbook' });
  assert.is(ofKind(twice, 'Deployment').length, 2, 'helm/v2-alpha alone: the manager twice');
  const flagged = spawnSync(EXE, ['check', '-n', 'guestbook-system', '-'], {
    input: JSON.stringify({ kind: 'List', apiVersion: 'v1', items: twice }),
    encoding: 'utf8',
    timeout: 60_000,
  });
  assert.is(flagged.status, 1, flagged.stdout + flagged.stderr);
  assert.match(flagged.stdout, /warning no-drainguard: Deployment\/guestbook-system\/\S*controller-manager\n/, 'and check says so');

  kubebuilder(project, ['edit', `--plugins=helm/v2-alpha,${KEY}`, '--manifests=dist/install-copy.yaml']);
  assert.is(readFileSync(manager, 'utf8'), stub);
  const rendered = template(stageChart(join(project, 'dist/chart')), { namespace: 'guestbook-system', release: 'guestbook' });
  assert.is(ofKind(rendered, 'Deployment').length, 1);
  assert.ok(hasDrainguard(rendered));
  assert.match(check(rendered, 'guestbook-system'), /no findings/);
});

test(`alpha generate of a project made with init --plugins=go/v4,${KEY}: the new project has config/drainguard again`, () => {
  const project = join(tempDir(), 'guestbook');
  mkdirSync(project);
  kubebuilder(project, [
    'init',
    `--plugins=go/v4,${KEY}`,
    '--domain',
    'my.domain',
    '--repo',
    'example.com/guestbook',
    '--fetch-deps=false',
  ]);
  // A stand-in for make: alpha generate ends with make fmt, vet and lint-fix, best effort (a failure is a
  // warning), which take over 20 minutes here (go vet of the project, go install of golangci-lint).
  const bin = tempDir();
  writeFileSync(join(bin, 'make'), '#!/bin/sh\necho "make $*: not run (the test\'s stand-in)" >&2\nexit 2\n', { mode: 0o755 });
  const out = join(tempDir(), 'guestbook');
  const log = kubebuilder(project, ['alpha', 'generate', '--output-dir', out], { PATH: `${bin}:${process.env.PATH}` });
  assert.match(log, /make lint-fix: not run/, 'the stand-in ran where make would');
  assert.match(log, /\+ config\/drainguard/, 'kubebuilder replayed the plugin');
  assert.equal(parse(readFileSync(join(out, 'PROJECT'), 'utf8')).layout, ['go.kubebuilder.io/v4', KEY]);
  for (const file of ['kustomization.yaml', 'drainguard.yaml'])
    assert.is(readFileSync(join(out, 'config/drainguard', file), 'utf8'), readFileSync(join(project, 'config/drainguard', file), 'utf8'));
  assert.match(check(kustomize(out)), /no findings/);
});

test('a project without config/default: the plugin refuses, names the step, and writes nothing', () => {
  const project = join(tempDir(), 'guestbook');
  cpSync(scaffold().dir, project, { recursive: true });
  rmSync(join(project, 'config/default'), { recursive: true });
  const before = snapshot(project);
  let message = '';
  try {
    kubebuilder(project, ['edit', `--plugins=${KEY}`]);
  } catch (err) {
    message = (err as Error).message;
  }
  assert.match(message, /DG_KUBEBUILDER_REFUSED: config\/default\/kustomization.yaml is not there/);
  assert.equal(changed(before, snapshot(project)), []);
  assert.not.ok(existsSync(join(project, 'config/drainguard')));
});

test('a bad --mode through kubebuilder, and standard input that is no request: the message names it, nothing written', () => {
  const project = join(tempDir(), 'guestbook');
  cpSync(scaffold().dir, project, { recursive: true });
  const before = snapshot(project);
  assert.throws(
    () => kubebuilder(project, ['edit', `--plugins=${KEY}`, '--mode', 'inline']),
    /--mode "inline": expected one of wrap, native-sidecar, sidecar/,
  );
  assert.equal(changed(before, snapshot(project)), []);
  const direct = spawnSync(EXE, ['kubebuilder-plugin'], { input: 'init', encoding: 'utf8', timeout: 30_000 });
  assert.is(direct.status, 2, direct.stderr);
  assert.match(direct.stderr, /DG_KUBEBUILDER_REQUEST: standard input is no JSON/);
  assert.is(direct.stdout, '');
});

test.run();
