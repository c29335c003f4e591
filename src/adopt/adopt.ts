// `drainguard adopt CHART`: docs/helm.md's steps done to a copy of the chart,
// the copy rendered by the real helm and checked by check's own analysis
// against the chart's plain render, and only then the files that differ
// written into the chart. Anything refused or found leaves the chart as it was.

import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { parse } from 'yaml';
import { analyze, layersOf } from '../check/analyze.ts';
import { placeInNamespace } from '../check/namespace.ts';
import { formatText } from '../check/report.ts';
import { ConfigError, DrainguardError } from '../errors.ts';
import { VERSION } from '../version.ts';
import {
  type Change,
  LIBRARY,
  addAllTemplate,
  addDependency,
  addNotes,
  addValues,
  allowInSchema,
  makePartials,
  readChart,
} from './edit.ts';
import { type RenderRequest, renderChart, updateDependencies } from './helm.ts';
import { adoptManifest } from './manifest.ts';
import { type Mode, planAdoption } from './plan.ts';

export interface AdoptConfig {
  readonly chart: string;
  readonly helm: string;
  readonly release?: string;
  readonly namespace: { readonly name: string; readonly source: string };
  readonly values: readonly string[];
  readonly set: readonly string[];
  readonly dryRun: boolean;
  readonly mode?: Mode;
  readonly command?: readonly string[];
  readonly library?: string;
  /** A manifest or kustomize directory: where the overlay goes, where the components are, the kubectl that renders it. */
  readonly out?: string;
  readonly components?: string;
  readonly kubectl?: string;
}

interface AdoptIO {
  readonly stdout: { write(chunk: string): unknown };
}

export function adopt(config: AdoptConfig, io: AdoptIO): number {
  const chart = resolve(config.chart);
  if (!existsSync(chart))
    throw new ConfigError(
      'DG_ADOPT_INPUT',
      `${config.chart}: no such file or directory: name the operator's chart, kustomize directory or manifest`,
    );
  if (!existsSync(join(chart, 'Chart.yaml'))) return adoptManifest(config, io);
  const { name, dependsOnLibrary } = readChart(chart);
  const work = join(mkdtempSync(join(tmpdir(), 'drainguard-adopt-')), basename(chart));
  try {
    cpSync(chart, work, { recursive: true, verbatimSymlinks: true });
    const request = (dir: string): RenderRequest => ({
      helm: config.helm,
      chart: dir,
      release: config.release ?? name,
      namespace: config.namespace.name,
      values: config.values.map((v) => resolve(v)),
      set: config.set,
    });
    const adopted = hasDrainguardValues(chart);
    const changes: Change[] = [];
    const before = adopted ? undefined : renderChart(request(chart), name);
    // What it cannot decide is refused before anything is fetched or written.
    const plan = before && planAdoption(before.objects, { namespace: config.namespace.name, mode: config.mode, command: config.command });
    const library = placeLibrary(config, work, dependsOnLibrary || adopted, changes);
    if (!dependsOnLibrary) changes.unshift(...addDependency(work, library.version));
    if (!library.placed) updateDependencies(config.helm, work);
    const untouched: string[] = [];
    if (plan) {
      changes.push(...makePartials(work, plan.operators), ...addAllTemplate(work), ...addValues(work, plan));
      changes.push(...allowInSchema(work), ...addNotes(work));
      untouched.push(...plan.untouched);
    } else {
      untouched.push("values.yaml has drainguard's settings already: adopt changes none of them");
    }
    // An adopted chart's plain render: drainguard.enabled=false renders it as it was.
    const plain = before ?? renderChart({ ...request(work), extraSet: ['drainguard.enabled=false'] }, name);
    untouched.push(
      'the pre-delete hook and the hold stay off: they need your custom resources (drainguard.predelete, drainguard.hold; docs/hold.md)',
    );
    const after = renderChart(request(work), name);
    const objects = placeInNamespace(
      after.objects.map((r) => r.object),
      config.namespace,
    );
    const findings = analyze(
      objects,
      placeInNamespace(
        plain.objects.map((r) => r.object),
        config.namespace,
      ),
    );
    const diff = treeDiff(chart, work);
    const out: string[] = [`drainguard adopt ${config.chart} (rendered as release ${config.release ?? name} in ${config.namespace.name})`];
    if (diff.length === 0) out.push('nothing to change: the chart has drainguard already');
    else {
      out.push(config.dryRun ? 'would change (--dry-run: nothing written):' : 'changed:');
      for (const c of changes) {
        out.push(`  ${c.mark} ${c.path}: ${c.what}`);
        for (const line of c.lines ?? []) out.push(`      + ${line}`);
      }
    }
    out.push('not changed:', ...untouched.map((u) => `  = ${u}`));
    out.push(`drainguard check of the new render (${after.objects.length} objects, the plain render's compared):`);
    io.stdout.write(`${out.join('\n')}\n${formatText(findings, objects.length, layersOf(objects))}`);
    if (findings.length > 0)
      throw new DrainguardError(
        'DG_ADOPT_CHECK',
        `check found ${findings.length} finding(s) in the render with drainguard: the chart is left as it was`,
      );
    if (!config.dryRun) applyDiff(chart, work, diff);
    return 0;
  } finally {
    rmSync(dirname(work), { recursive: true, force: true });
  }
}

function hasDrainguardValues(chart: string): boolean {
  const file = join(chart, 'values.yaml');
  if (!existsSync(file)) return false;
  const values = parse(readFileSync(file, 'utf8')) as Record<string, unknown> | null;
  return typeof values === 'object' && values !== null && Object.hasOwn(values, 'drainguard');
}

/** The library chart into WORK's charts/ from --library; without it, whether charts/ holds it already. */
function placeLibrary(config: AdoptConfig, work: string, declared: boolean, changes: Change[]): { version: string; placed: boolean } {
  const charts = join(work, 'charts');
  const present = existsSync(charts) && readdirSync(charts).some((f) => f === LIBRARY.name || f.startsWith(`${LIBRARY.name}-`));
  if (config.library === undefined) return { version: VERSION, placed: present && declared };
  const source = resolve(config.library);
  const isDir = existsSync(join(source, 'Chart.yaml'));
  if (!isDir && !/\.tgz$/.test(source))
    throw new ConfigError('DG_ADOPT_INPUT', `--library ${config.library}: neither a chart directory (Chart.yaml) nor a .tgz`);
  const version = isDir ? String((parse(readFileSync(join(source, 'Chart.yaml'), 'utf8')) as { version: unknown }).version) : VERSION;
  mkdirSync(charts, { recursive: true });
  for (const f of readdirSync(charts))
    if (f === LIBRARY.name || f.startsWith(`${LIBRARY.name}-`)) rmSync(join(charts, f), { recursive: true });
  const target = join(charts, isDir ? LIBRARY.name : basename(source));
  cpSync(source, target, { recursive: true });
  if (!present)
    changes.push({ mark: '+', path: `charts/${basename(target)}`, what: `drainguard's library chart ${version}, from --library` });
  return { version, placed: true };
}

/** Every file under DIR, as a path relative to it. */
function filesOf(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => !e.isDirectory())
    .map((e) => relative(dir, join(e.parentPath, e.name)))
    .sort();
}

interface FileDiff {
  readonly path: string;
  readonly removed: boolean;
}

function treeDiff(before: string, after: string): FileDiff[] {
  const old = new Set(filesOf(before));
  const now = filesOf(after);
  const out: FileDiff[] = [...old].filter((p) => !now.includes(p)).map((path) => ({ path, removed: true }));
  for (const path of now) {
    if (!old.has(path) || !readFileSync(join(before, path)).equals(readFileSync(join(after, path)))) out.push({ path, removed: false });
  }
  return out;
}

/** The files that differ, written into the chart (each through a temporary file and a rename), and those gone removed. */
function applyDiff(chart: string, work: string, diff: readonly FileDiff[]): void {
  for (const { path, removed } of diff) {
    const target = join(chart, path);
    if (removed) {
      unlinkSync(target);
      continue;
    }
    mkdirSync(dirname(target), { recursive: true });
    const temporary = `${target}.drainguard-adopt`;
    writeFileSync(temporary, readFileSync(join(work, path)));
    renameSync(temporary, target);
  }
}
