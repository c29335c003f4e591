// The edits of docs/helm.md's steps, written into a copy of the chart: the
// dependency in Chart.yaml, each operator's template renamed to a partial, the
// one template of drainguard's, the values, the schema property and the notes.
// Each edit says what it did, for the summary; one already made is not made again.

import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { isMap, parseDocument, stringify } from 'yaml';
import type { Operator, Plan } from './plan.ts';
import { refuse } from './plan.ts';

export const LIBRARY = { name: 'drainguard', repository: 'oci://ghcr.io/drainguard/charts' } as const;
export const ALL_TEMPLATE = 'drainguard.yaml';
const ALL = '{{ include "drainguard.all" . }}\n';
const NOTES = '{{ include "drainguard.notes" . }}';

export interface Change {
  /** +, ~ or > (renamed): as a diff's summary shows it. */
  readonly mark: '+' | '~' | '>';
  readonly path: string;
  readonly what: string;
  /** Lines added, shown under it. */
  readonly lines?: readonly string[];
}

/** The chart's Chart.yaml, read for what adopt must know first: its name, apiVersion, type, and whether it depends on drainguard. */
export function readChart(dir: string): { name: string; dependsOnLibrary: boolean } {
  const doc = parseDocument(readFileSync(join(dir, 'Chart.yaml'), 'utf8'));
  const chart = (doc.toJS() ?? {}) as { name?: string; apiVersion?: string; type?: string; dependencies?: { name?: string }[] };
  if (typeof chart.name !== 'string') throw refuse(`${join(dir, 'Chart.yaml')} names no chart (name:)`);
  if (chart.apiVersion !== 'v2')
    throw refuse(
      `Chart.yaml says apiVersion: ${chart.apiVersion ?? '(none)'}, and only a chart of apiVersion v2 can have dependencies: ` +
        'make it apiVersion: v2 (and move a requirements.yaml into Chart.yaml) first ' +
        '(docs/helm.md, "Adding drainguard to a chart from `helm create`")',
    );
  if (chart.type === 'library') throw refuse('Chart.yaml says type: library: a library chart runs no operator');
  return { name: chart.name, dependsOnLibrary: (chart.dependencies ?? []).some((d) => d.name === LIBRARY.name) };
}

export function addDependency(dir: string, version: string): Change[] {
  const file = join(dir, 'Chart.yaml');
  const text = readFileSync(file, 'utf8');
  const doc = parseDocument(text);
  const entry = { name: LIBRARY.name, version, repository: LIBRARY.repository };
  if (doc.get('dependencies') === undefined) {
    writeFileSync(file, `${text.replace(/\n*$/, '\n')}${stringify({ dependencies: [entry] })}`);
  } else {
    doc.addIn(['dependencies'], doc.createNode(entry));
    writeFileSync(file, doc.toString());
  }
  return [{ mark: '~', path: 'Chart.yaml', what: `dependencies: + ${LIBRARY.name} ${version} (${LIBRARY.repository})` }];
}

/** FILE (under templates/) as a partial: _NAME in the same folder. */
export const partialOf = (file: string): string => join(dirname(file), `_${basename(file)}`).replace(/^\.\//, '');

export function makePartials(dir: string, operators: readonly Operator[]): Change[] {
  return operators.map((o) => {
    const to = partialOf(o.file);
    if (existsSync(join(dir, 'templates', to)))
      throw refuse(`templates/${to} exists already: adopt would rename templates/${o.file} onto it`);
    renameSync(join(dir, 'templates', o.file), join(dir, 'templates', to));
    return {
      mark: '>',
      path: `templates/${o.file} -> templates/${to}`,
      what:
        `the ${o.kind} ${o.name}: a partial, which drainguard.all renders with drainguard added ` +
        `(mode ${o.mode}${o.why ? `: ${o.why}` : ''})`,
    };
  });
}

export function addAllTemplate(dir: string): Change[] {
  const file = join(dir, 'templates', ALL_TEMPLATE);
  if (existsSync(file)) {
    if (readFileSync(file, 'utf8').includes('"drainguard.all"')) return [];
    throw refuse(`templates/${ALL_TEMPLATE} exists and is not drainguard's: rename it, then run adopt again`);
  }
  writeFileSync(file, ALL);
  return [{ mark: '+', path: `templates/${ALL_TEMPLATE}`, what: ALL.trim() }];
}

/** The drainguard: block of values.yaml for PLAN. */
export function valuesOf(plan: Plan): Record<string, unknown> {
  const guard = plan.guardTemplates.length > 0 ? { guard: { templates: [...plan.guardTemplates] } } : {};
  const [first, ...rest] = plan.operators;
  const entry = (o: Operator) => ({ template: partialOf(o.file), ...(o.command && { command: [...o.command] }) });
  if (rest.length === 0) return { mode: first!.mode, operator: entry(first!), ...guard };
  return {
    mode: first!.mode,
    operators: plan.operators.map((o) => ({ ...entry(o), ...(o.mode !== first!.mode && { mode: o.mode }) })),
    ...guard,
  };
}

export function addValues(dir: string, plan: Plan): Change[] {
  const file = join(dir, 'values.yaml');
  const text = existsSync(file) ? readFileSync(file, 'utf8') : '';
  const block = stringify({ drainguard: valuesOf(plan) });
  const doc = parseDocument(text);
  const empty = doc.contents === null || (isMap(doc.contents) && doc.contents.items.length === 0);
  if (empty && !/^\s*#/m.test(text)) writeFileSync(file, block);
  else if (isMap(doc.contents) && !doc.contents.flow) writeFileSync(file, `${text.replace(/\n*$/, '\n')}\n${block}`);
  else {
    doc.set('drainguard', doc.createNode(valuesOf(plan)));
    writeFileSync(file, doc.toString());
  }
  return [
    {
      mark: existsSync(file) && text !== '' ? '~' : '+',
      path: 'values.yaml',
      what: "drainguard's settings",
      lines: block.trimEnd().split('\n'),
    },
  ];
}

/** A values.schema.json that allows no other top-level values gets drainguard's property (the library's schema checks inside). */
export function allowInSchema(dir: string): Change[] {
  const file = join(dir, 'values.schema.json');
  if (!existsSync(file)) return [];
  const schema = JSON.parse(readFileSync(file, 'utf8')) as { additionalProperties?: unknown; properties?: Record<string, unknown> };
  if (schema.additionalProperties !== false || schema.properties?.drainguard !== undefined) return [];
  schema.properties = { ...schema.properties, drainguard: { type: 'object' } };
  writeFileSync(file, `${JSON.stringify(schema, null, 2)}\n`);
  return [{ mark: '~', path: 'values.schema.json', what: 'properties: + "drainguard": { "type": "object" } (it allows no other values)' }];
}

export function addNotes(dir: string): Change[] {
  const file = join(dir, 'templates', 'NOTES.txt');
  const text = existsSync(file) ? readFileSync(file, 'utf8') : undefined;
  if (text?.includes('"drainguard.notes"')) return [];
  writeFileSync(file, `${text === undefined || text === '' ? '' : text.replace(/\n*$/, '\n')}${NOTES}\n`);
  return [
    { mark: text === undefined ? '+' : '~', path: 'templates/NOTES.txt', what: `${NOTES}: what drainguard changed, after an install` },
  ];
}
