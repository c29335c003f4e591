// `drainguard adopt FILE` and `drainguard adopt DIR` (a kustomize directory):
// the overlay of docs/deploy.md written beside the input, staged first in a
// directory of its own at the same depth (so that its relative paths resolve
// as they will), rendered by the real `kubectl kustomize`, checked against the
// input's own render, and only then moved into place. A FILE is copied into
// the overlay: kustomize reads no file above a kustomization's directory.

import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { analyze, layersOf } from '../check/analyze.ts';
import type { Manifest } from '../check/finding.ts';
import { placeInNamespace } from '../check/namespace.ts';
import { parseManifests } from '../check/read.ts';
import { formatText } from '../check/report.ts';
import { ConfigError, DrainguardError } from '../errors.ts';
import { VERSION } from '../version.ts';
import { MARKER, overlayFiles, planOverlay, refuseOverlay } from './overlay.ts';
import type { Mode } from './plan.ts';

export const KUSTOMIZATION_FILES = ['kustomization.yaml', 'kustomization.yml', 'Kustomization'];
const REMOTE = (name: string) => `https://github.com/drainguard/drainguard//deploy/components/${name}?ref=v${VERSION}`;

/** What adopt's configuration says to the manifest path (adopt.ts's AdoptConfig, which imports this module). */
export interface ManifestConfig {
  readonly chart: string;
  readonly namespace: { readonly name: string; readonly source: string };
  readonly dryRun: boolean;
  readonly mode?: Mode;
  readonly command?: readonly string[];
  readonly out?: string;
  readonly components?: string;
  readonly kubectl?: string;
}

interface AdoptIO {
  readonly stdout: { write(chunk: string): unknown };
}

export const isKustomization = (dir: string): boolean => KUSTOMIZATION_FILES.some((f) => existsSync(join(dir, f)));

/** `kubectl kustomize DIR`, parsed. */
function kustomize(kubectl: string, dir: string, what: string, hint = ''): Manifest[] {
  const r = spawnSync(kubectl, ['kustomize', dir], { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
  if (r.error) {
    const code = (r.error as NodeJS.ErrnoException).code;
    throw new ConfigError(
      'DG_ADOPT_INPUT',
      code === 'ENOENT'
        ? `kubectl not found (${JSON.stringify(kubectl)}): adopt renders the overlay with the real kubectl kustomize; ` +
            'install kubectl 1.27 or later, or give it with --kubectl PATH'
        : `cannot run kubectl (${JSON.stringify(kubectl)}): ${r.error.message}`,
    );
  }
  if (r.status !== 0) throw new DrainguardError('DG_ADOPT_RENDER', `kubectl kustomize ${what} failed:\n${r.stderr.trim()}${hint}`);
  return parseManifests(r.stdout, `kubectl kustomize ${what}`);
}

/** Every file under DIR, relative to it. */
const filesOf = (dir: string): string[] =>
  existsSync(dir)
    ? readdirSync(dir, { recursive: true, withFileTypes: true })
        .filter((e) => !e.isDirectory())
        .map((e) => relative(dir, join(e.parentPath, e.name)))
        .sort()
    : [];

export function adoptManifest(config: ManifestConfig, io: AdoptIO): number {
  const input = resolve(config.chart);
  const isDir = statSync(input).isDirectory();
  if (isDir && !isKustomization(input))
    throw new ConfigError(
      'DG_ADOPT_INPUT',
      `${config.chart}: neither a chart (Chart.yaml) nor a kustomize directory (kustomization.yaml): name the operator's chart, ` +
        'its kustomize directory, or its manifest file',
    );
  if (!isDir && !/\.(ya?ml|json)$/.test(input))
    throw new ConfigError('DG_ADOPT_INPUT', `${config.chart}: not a manifest file (.yaml, .yml, .json), a chart or a kustomize directory`);
  const out = resolve(config.out ?? join(dirname(input), 'drainguard'));
  if (out === input || (isDir && input.startsWith(`${out}/`)))
    throw new ConfigError('DG_ADOPT_INPUT', `the overlay would be written over its input (${out}): give another directory with --out DIR`);
  const kubectl = config.kubectl ?? 'kubectl';
  const given = { name: config.namespace.name, source: config.namespace.source };
  const raw = isDir ? kustomize(kubectl, input, config.chart) : parseManifests(readFileSync(input, 'utf8'), config.chart);
  const plain = placeInNamespace(raw, given);
  if (existsSync(out) && filesOf(out).length > 0 && !readIfExists(join(out, 'kustomization.yaml'))?.startsWith(MARKER))
    throw refuseOverlay(`${out} exists and is not an overlay adopt wrote: give another directory with --out DIR`);
  const plan = planOverlay({ objects: plain, raw, mode: config.mode, command: config.command });
  const parent = dirname(out);
  mkdirSync(parent, { recursive: true });
  const stage = mkdtempSync(join(parent, `.${basename(out)}-adopt-`));
  try {
    const copy = isDir ? undefined : basename(input);
    const base = copy ?? relative(out, input);
    const component = (name: string) => (config.components ? relative(out, join(resolve(config.components), name)) : REMOTE(name));
    const files: Record<string, string> = { ...overlayFiles(plan, base, component, relative(out, input)) };
    if (copy) files[copy] = readFileSync(input, 'utf8');
    for (const [name, text] of Object.entries(files)) writeFileSync(join(stage, name), text);
    const remote = config.components
      ? ''
      : "\n(the overlay names drainguard's components by their GitHub URL: without access to it, give a copy of " +
        'deploy/components with --components DIR)';
    const objects = placeInNamespace(kustomize(kubectl, stage, `of the overlay (staged in ${stage})`, remote), given);
    const findings = analyze(objects, plain);
    const changed = Object.entries(files).filter(([name, text]) => readIfExists(join(out, name)) !== text);
    const near = relative(process.cwd(), out);
    const shown = near === '' ? '.' : near.startsWith('..') ? out : near;
    const lines: string[] = [`drainguard adopt ${config.chart}: the overlay ${shown} (${plan.mode} mode)`];
    if (changed.length === 0) lines.push('nothing to change: the overlay is as adopt writes it');
    else {
      lines.push(config.dryRun ? 'would change (--dry-run: nothing written):' : 'changed:');
      for (const [name, text] of changed) {
        const mark = existsSync(join(out, name)) ? '~' : '+';
        const what = name === copy ? `a copy of ${config.chart} (kustomize reads no file above the overlay)` : describe(name);
        lines.push(`  ${mark} ${join(shown, name)}: ${what}`);
        if (name !== copy) for (const line of text.trimEnd().split('\n')) lines.push(`      + ${line}`);
      }
    }
    lines.push('not changed:', `  = ${config.chart}: the operator's manifests, as they are`, ...plan.untouched.map((u) => `  = ${u}`));
    if (plan.why) lines.push(`  = mode ${plan.mode}: ${plan.why}`);
    lines.push(
      `  = the hold stays off: it needs your custom resources (the hold component, docs/hold.md)`,
      `drainguard check of kubectl kustomize ${shown} (${objects.length} objects, the input's render compared):`,
    );
    io.stdout.write(`${lines.join('\n')}\n${formatText(findings, objects.length, layersOf(objects))}`);
    if (findings.length > 0)
      throw new DrainguardError('DG_ADOPT_CHECK', `check found ${findings.length} finding(s) in the overlay's render: nothing is written`);
    if (!config.dryRun && changed.length > 0) {
      mkdirSync(out, { recursive: true });
      for (const [name, text] of changed) {
        const temporary = join(out, `.${name}.drainguard-adopt`);
        writeFileSync(temporary, text);
        renameSync(temporary, join(out, name));
      }
      io.stdout.write(
        `apply: kubectl apply -k ${shown}\n` +
          `uninstall: kubectl delete -k ${shown} -l 'drainguard.dev/uninstall!=last'; ` +
          `kubectl kustomize ${shown} | drainguard release --wait 2m -f -; kubectl delete -k ${shown} --ignore-not-found\n`,
      );
    }
    return 0;
  } finally {
    rmSync(stage, { recursive: true, force: true });
  }
}

const describe = (name: string): string =>
  name === 'kustomization.yaml'
    ? "the overlay: the input, drainguard's settings, the components and the patch they need"
    : "drainguard's settings (local-config ConfigMap): the operator's ServiceAccount, RBAC and command";

function readIfExists(file: string): string | undefined {
  return existsSync(file) ? readFileSync(file, 'utf8') : undefined;
}
