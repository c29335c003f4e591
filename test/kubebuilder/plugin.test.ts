// drainguard as kubebuilder's external plugin drainguard.dev/v1-alpha, run by
// the real kubebuilder v4.16.0 (test/support/kubebuilder.ts) from the plugins
// path `drainguard kubebuilder-plugin install DIR` writes (the built
// executable): `kubebuilder init --plugins=go/v4,drainguard.dev/v1-alpha` in
// the cluster-scoped, multigroup and namespace-scoped layouts, and `kubebuilder
// edit --plugins=drainguard.dev/v1-alpha` on the projects the CLI scaffolds
// with `create api`, `make manifests` and helm/v2-alpha's chart. Each result:
// config/drainguard rendered by the real kustomize (kubectl kustomize, the
// released components' URLs replaced by this checkout's components) and the
// chart by the real helm, each checked by `drainguard check` with no finding;
// config/default and the scaffold's chart, as kubebuilder left them, have no
// drainguard (the control). Run again, the plugin changes no file. The chart
// renders object for object what docs/helm.md's steps render (which
// test/helm/kubebuilder.test.ts installs and uninstalls on the real control
// plane), as config/drainguard is docs/deploy.md's overlay to the letter
// (overlay.unit.test.ts; test/deploy/apply.test.ts applies that one).

import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parse } from 'yaml';
import { DEPLOY, type KubeObject, REMOTE_COMPONENT, ofKind, parseObjects, theDeployment } from '../deploy/support/manifests.ts';
import { adoptKubebuilderChart } from '../helm/support/adopt.ts';
import { cleanupCharts, stageChart, template } from '../helm/support/charts.ts';
import { goEnv } from '../support/go.ts';
import { type Layout, kubebuilderCli, scaffold } from '../support/kubebuilder.ts';
import { EXE, tempDir } from '../support/proc.ts';

const KEY = 'drainguard.dev/v1-alpha';
const PLUGINS = tempDir();
test.before(() => {
  const out = execFileSync(EXE, ['kubebuilder-plugin', 'install', PLUGINS], { encoding: 'utf8', timeout: 30_000 });
  assert.match(out, `${PLUGINS}/drainguard.dev/v1-alpha/drainguard.dev`);
});
test.after(cleanupCharts);

/** kubebuilder ARGS in DIR with the plugin installed; its stderr (where the plugin reports). Throws with its output on failure. */
function kubebuilder(dir: string, args: string[], env: NodeJS.ProcessEnv = {}): string {
  const r = spawnSync(kubebuilderCli(), args, {
    cwd: dir,
    env: { ...goEnv(), EXTERNAL_PLUGINS_PATH: PLUGINS, ...env },
    encoding: 'utf8',
    timeout: 300_000,
  });
  if (r.status !== 0) throw new Error(`kubebuilder ${args.join(' ')} exited ${r.status ?? r.signal}: ${r.stderr}${r.stdout}`);
  return r.stderr;
}

/** Every file of the project but .git and bin/, with its content: what a run of the plugin may change. */
function snapshot(dir: string): Map<string, string> {
  const files = readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => relative(dir, join(e.parentPath, e.name)))
    .filter((p) => !p.startsWith('.git/') && !p.startsWith('bin/'));
  return new Map(files.sort().map((p) => [p, readFileSync(join(dir, p), 'utf8')]));
}

/** The differences between two snapshots, as paths. */
const changed = (a: Map<string, string>, b: Map<string, string>) =>
  [...new Set([...a.keys(), ...b.keys()])].filter((p) => a.get(p) !== b.get(p));

/** `kubectl kustomize` of the project's config/DIR, in a copy whose overlay names this checkout's components. */
function kustomize(project: string, dir = 'drainguard'): KubeObject[] {
  const copy = join(tempDir(), 'config');
  cpSync(join(project, 'config'), copy, { recursive: true });
  const overlay = join(copy, dir);
  const file = join(overlay, 'kustomization.yaml');
  const text = readFileSync(file, 'utf8');
  writeFileSync(
    file,
    text.replace(REMOTE_COMPONENT, (_all, c: string) => relative(overlay, join(DEPLOY, 'components', c))),
  );
  return parseObjects(
    execFileSync('kubectl', ['kustomize', overlay], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 60_000 }),
  );
}

function check(objects: KubeObject[], namespace?: string): string {
  const r = spawnSync(EXE, ['check', ...(namespace ? ['-n', namespace] : []), '-'], {
    input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }),
    encoding: 'utf8',
    timeout: 60_000,
  });
  assert.is(r.status, 0, r.stdout + r.stderr);
  return r.stdout;
}

/** The env value NAME of drainguard's container (wrap: the manager; a sidecar mode: drainguard's own). */
function drainguardEnv(objects: KubeObject[], name: string): string | undefined {
  const spec = theDeployment(objects).spec.template.spec;
  const containers = [...(spec.initContainers ?? []), ...spec.containers];
  return containers.flatMap((c: any) => c.env ?? []).find((e: any) => e.name === name)?.value;
}

const hasDrainguard = (objects: KubeObject[]) =>
  theDeployment(objects).spec.template.spec.initContainers?.some((c: any) => /drainguard/.test(c.image)) === true;

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
