// What the plugin's tests share: the plugin installed from the built
// executable, the real kubebuilder run with it, a project's config/ rendered by
// the real kustomize with this checkout's components, and `drainguard check`.

import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import * as assert from 'uvu/assert';
import { DEPLOY, type KubeObject, REMOTE_COMPONENT, parseObjects, theDeployment } from '../../deploy/support/manifests.ts';
import { goEnv } from '../../support/go.ts';
import { kubebuilderCli } from '../../support/kubebuilder.ts';
import { EXE, tempDir } from '../../support/proc.ts';

export const KEY = 'drainguard.dev/v1-alpha';

/** `drainguard kubebuilder-plugin install` into a fresh folder: kubebuilder's EXTERNAL_PLUGINS_PATH. */
export function installPlugin(): string {
  const plugins = tempDir();
  const out = execFileSync(EXE, ['kubebuilder-plugin', 'install', plugins], { encoding: 'utf8', timeout: 30_000 });
  assert.match(out, `${plugins}/drainguard.dev/v1-alpha/drainguard.dev`);
  return plugins;
}

/** kubebuilder ARGS in DIR with the plugins of PLUGINS; its stderr (where the plugin reports). Throws with its output on failure. */
export function kubebuilder(plugins: string, dir: string, args: string[], env: NodeJS.ProcessEnv = {}): string {
  const r = spawnSync(kubebuilderCli(), args, {
    cwd: dir,
    env: { ...goEnv(), EXTERNAL_PLUGINS_PATH: plugins, ...env },
    encoding: 'utf8',
    timeout: 300_000,
  });
  if (r.status !== 0) throw new Error(`kubebuilder ${args.join(' ')} exited ${r.status ?? r.signal}: ${r.stderr}${r.stdout}`);
  return r.stderr;
}

/** Every file of the project but .git and bin/, with its content: what a run of the plugin may change. */
export function snapshot(dir: string): Map<string, string> {
  const files = readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => relative(dir, join(e.parentPath, e.name)))
    .filter((p) => !p.startsWith('.git/') && !p.startsWith('bin/'));
  return new Map(files.sort().map((p) => [p, readFileSync(join(dir, p), 'utf8')]));
}

/** The differences between two snapshots, as paths. */
export const changed = (a: Map<string, string>, b: Map<string, string>) =>
  [...new Set([...a.keys(), ...b.keys()])].filter((p) => a.get(p) !== b.get(p));

/** The project's config/DIR in a copy whose overlay names this checkout's components instead of the released URLs. */
export function localOverlay(project: string, dir = 'drainguard'): string {
  const copy = join(tempDir(), 'config');
  cpSync(join(project, 'config'), copy, { recursive: true });
  const overlay = join(copy, dir);
  const file = join(overlay, 'kustomization.yaml');
  const text = readFileSync(file, 'utf8');
  writeFileSync(
    file,
    text.replace(REMOTE_COMPONENT, (_all, c: string) => relative(overlay, join(DEPLOY, 'components', c))),
  );
  return overlay;
}

/** `kubectl kustomize` of the project's config/DIR, with this checkout's components (localOverlay). */
export const kustomize = (project: string, dir = 'drainguard'): KubeObject[] =>
  parseObjects(
    execFileSync('kubectl', ['kustomize', localOverlay(project, dir)], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 60_000,
    }),
  );

/** `drainguard check` of OBJECTS, which must pass; its report. */
export function check(objects: KubeObject[], namespace?: string): string {
  const r = spawnSync(EXE, ['check', ...(namespace ? ['-n', namespace] : []), '-'], {
    input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }),
    encoding: 'utf8',
    timeout: 60_000,
  });
  assert.is(r.status, 0, r.stdout + r.stderr);
  return r.stdout;
}

/** The env value NAME of drainguard's container (wrap: the manager; a sidecar mode: drainguard's own). */
export function drainguardEnv(objects: KubeObject[], name: string): string | undefined {
  const spec = theDeployment(objects).spec.template.spec;
  const containers = [...(spec.initContainers ?? []), ...spec.containers];
  return containers.flatMap((c: any) => c.env ?? []).find((e: any) => e.name === name)?.value;
}

export const hasDrainguard = (objects: KubeObject[]) =>
  theDeployment(objects).spec.template.spec.initContainers?.some((c: any) => /drainguard/.test(c.image)) === true;
