// The charts of test/helm/fixtures/charts/, one per shape operator charts come
// in, put through docs/helm.md to the letter: the steps of "Adding drainguard
// to a chart from `helm create`" (the Chart.yaml dependency, the `git mv`, the
// one template, the values), then what the shape's subsection of "Charts
// shaped otherwise" says to type (its `git mv`, its `echo >>`, its values
// merged into the chart's, its schema property). And what the tests hold the
// result to: the guard computed here from the chart's plain render.

import { execFileSync } from 'node:child_process';
import { appendFileSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parse, stringify } from 'yaml';
import { parseGuardList } from '../../../src/config/guard-list.ts';
import type { KubeObject } from '../../deploy/support/manifests.ts';
import { EXE } from '../../support/proc.ts';
import { stageChart, template } from './charts.ts';

const doc = readFileSync('docs/helm.md', 'utf8');

const blocks = (text: string, lang: string): string[] =>
  [...text.matchAll(new RegExp(`\`\`\`${lang}\\n([\\s\\S]*?)\`\`\``, 'g'))].map((m) => m[1]!);

function between(start: string, end: string, from = 0): string {
  const at = doc.indexOf(start, from);
  if (at === -1) throw new Error(`docs/helm.md has no "${start.trim()}"`);
  const stop = doc.indexOf(end, at + start.length);
  return doc.slice(at, stop === -1 ? undefined : stop);
}

const HELM_CREATE = between('\n## Adding drainguard to a chart from `helm create`\n', '\n## ');
const SHAPES = between('\n## Charts shaped otherwise\n', '\n## ');

/** The subsection of "Charts shaped otherwise" whose heading starts with HEADING. */
export function shapeSection(heading: string): string {
  const text = between(`\n### ${heading}`, '\n### ', doc.indexOf(SHAPES));
  const end = text.indexOf('\n## ');
  return end === -1 ? text : text.slice(0, end);
}

/** A's keys with B's merged over them, maps key by key (as Helm merges values files). */
function mergeValues(a: any, b: any): any {
  if (typeof a !== 'object' || a === null || Array.isArray(a) || typeof b !== 'object' || b === null || Array.isArray(b)) return b;
  const out = { ...a };
  for (const [k, v] of Object.entries(b)) out[k] = k in a ? mergeValues(a[k], v) : v;
  return out;
}

/** Runs the doc's shell lines that edit the chart: `git mv A B` and `echo 'TEXT' >> FILE`. */
function runSteps(chart: string, sh: string): void {
  for (const line of sh.split('\n')) {
    const move = /^git mv (\S+) (\S+)$/.exec(line.trim());
    if (move) renameSync(join(chart, move[1]!), join(chart, move[2]!));
    const echo = /^echo '(.*)' >> (\S+)$/.exec(line.trim());
    if (echo) appendFileSync(join(chart, echo[2]!), `${echo[1]}\n`);
  }
}

/** Applies the steps of a doc section (or subsection) to CHART; without SH, its values and schema only. */
function applySection(chart: string, text: string, sh = true): void {
  if (sh) for (const block of blocks(text, 'sh')) runSteps(chart, block);
  for (const yaml of blocks(text, 'yaml').filter((b) => b.startsWith('drainguard:\n'))) {
    const values = parse(readFileSync(join(chart, 'values.yaml'), 'utf8')) ?? {};
    writeFileSync(join(chart, 'values.yaml'), stringify(mergeValues(values, parse(yaml))));
  }
  for (const json of blocks(text, 'json')) {
    const schema = JSON.parse(readFileSync(join(chart, 'values.schema.json'), 'utf8'));
    Object.assign(schema.properties, JSON.parse(`{${json}}`));
    writeFileSync(join(chart, 'values.schema.json'), JSON.stringify(schema, null, 2));
  }
}

export const fixture = (shape: string): string => resolve('test/helm/fixtures/charts', shape);

/**
 * The fixture chart SHAPE staged (the library in its charts/), with docs/helm.md's
 * steps for a chart from `helm create`, then those of the subsections HEADINGS.
 */
export const adoptShape = (shape: string, ...headings: string[]): string => adopt(shape, headings, true);

/**
 * The same for a chart whose workload is in a file of its own name, not
 * templates/deployment.yaml: the `git mv` of the subsections HEADINGS renames
 * it in place of the `helm create` section's.
 */
export const adoptOwnFileShape = (shape: string, ...headings: string[]): string => adopt(shape, headings, false);

function adopt(shape: string, headings: readonly string[], helmCreateMove: boolean): string {
  const chart = stageChart(fixture(shape));
  const dependency = blocks(doc, 'yaml').find((b) => b.startsWith('dependencies:'));
  if (!dependency) throw new Error('docs/helm.md: no block with the dependency');
  appendFileSync(join(chart, 'Chart.yaml'), dependency);
  const drainguardYaml = blocks(doc, 'yaml').find((b) => b.includes('{{ include "drainguard.all" . }}'));
  writeFileSync(join(chart, 'templates/drainguard.yaml'), drainguardYaml!);
  applySection(chart, HELM_CREATE, helmCreateMove);
  for (const heading of headings) applySection(chart, shapeSection(heading));
  return chart;
}

/** `helm template` of the chart as it is (without drainguard): what the release holds. */
export const plainRender = (shape: string, release: string, namespace: string, set?: Record<string, unknown>): KubeObject[] =>
  template(fixture(shape), { release, namespace, set });

const subjectIs = (s: any, ns: string, sa: string, bindingNs: string): boolean =>
  (s.kind === 'ServiceAccount' && s.name === sa && (s.namespace ?? bindingNs) === ns) ||
  (s.kind === 'User' && s.name === `system:serviceaccount:${ns}:${sa}`);

function selects(selector: any, labels: Record<string, string>): boolean {
  for (const [k, v] of Object.entries(selector.matchLabels ?? {})) if (labels[k] !== v) return false;
  for (const e of selector.matchExpressions ?? []) {
    const has = e.key in labels;
    const ok = {
      In: has && e.values.includes(labels[e.key]),
      NotIn: !(has && e.values.includes(labels[e.key])),
      Exists: has,
      DoesNotExist: !has,
    }[e.operator as string];
    if (!ok) return false;
  }
  return true;
}

/**
 * The guard a workload of OBJECTS (a plain render into NAMESPACE) needs: its
 * ServiceAccount (when the release holds it), every binding of it in any
 * namespace, the roles of the release they bind, and the ClusterRoles of the
 * release aggregated into a guarded one, transitively. As kind/[namespace/]name.
 */
export function groundTruth(objects: KubeObject[], namespace: string, deployment: KubeObject): string[] {
  const nsOf = (o: KubeObject) => o.metadata.namespace ?? namespace;
  const cluster = (kind: string) => kind === 'ClusterRole' || kind === 'ClusterRoleBinding';
  const keyOf = (kind: string, ns: string, name: string) => `${kind.toLowerCase()}/${cluster(kind) ? '' : `${ns}/`}${name}`;
  const present = new Set(objects.map((o) => keyOf(o.kind, nsOf(o), o.metadata.name)));
  const saNs = nsOf(deployment);
  const sa = deployment.spec.template.spec.serviceAccountName ?? 'default';
  const out = new Set<string>();
  if (present.has(keyOf('ServiceAccount', saNs, sa))) out.add(keyOf('ServiceAccount', saNs, sa));
  for (const b of objects.filter((o) => o.kind === 'RoleBinding' || o.kind === 'ClusterRoleBinding')) {
    const bns = nsOf(b);
    if (!(b.subjects ?? []).some((s: any) => subjectIs(s, saNs, sa, bns))) continue;
    out.add(keyOf(b.kind, bns, b.metadata.name));
    const role = keyOf(b.roleRef.kind, bns, b.roleRef.name);
    if (present.has(role)) out.add(role);
  }
  const clusterRoles = objects.filter((o) => o.kind === 'ClusterRole');
  for (let grew = true; grew;) {
    grew = false;
    for (const role of clusterRoles.filter((r) => out.has(keyOf('ClusterRole', '', r.metadata.name)))) {
      for (const selector of role.aggregationRule?.clusterRoleSelectors ?? []) {
        for (const source of clusterRoles) {
          const key = keyOf('ClusterRole', '', source.metadata.name);
          if (source !== role && !out.has(key) && selects(selector, source.metadata.labels ?? {})) {
            out.add(key);
            grew = true;
          }
        }
      }
    }
  }
  return [...out].sort();
}

/** DRAINGUARD_GUARD of the workload, as kind/[namespace/]name, drainguard's own objects left out. */
export function guardOf(deployment: KubeObject): string[] {
  const pod = deployment.spec.template.spec;
  const values = [...pod.containers, ...(pod.initContainers ?? [])].flatMap((c: any) =>
    (c.env ?? []).filter((e: any) => e.name === 'DRAINGUARD_GUARD'),
  );
  if (values.length !== 1) throw new Error(`${deployment.metadata.name}: DRAINGUARD_GUARD on ${values.length} containers`);
  return parseGuardList(values[0].value, 'DRAINGUARD_GUARD')
    .filter((t) => !t.name.startsWith('drainguard:'))
    .map((t) => `${t.kind}/${t.namespace ? `${t.namespace}/` : ''}${t.name}`)
    .sort();
}

/** `helm template … | drainguard check -n NS [ARGS] -`: its exit status and output. */
export function check(text: string, namespace: string, args: readonly string[] = []): { code: number; out: string } {
  try {
    return {
      code: 0,
      out: execFileSync(EXE, ['check', '-n', namespace, ...args, '-'], { input: text, encoding: 'utf8', stdio: ['pipe', 'pipe', 'pipe'] }),
    };
  } catch (err) {
    const e = err as { status?: number; stdout?: string; stderr?: string };
    return { code: e.status ?? -1, out: `${e.stdout ?? ''}${e.stderr ?? ''}` };
  }
}
