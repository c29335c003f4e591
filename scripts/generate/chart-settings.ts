// docs/helm.md's table of the library chart's settings (between the markers),
// from deploy/helm/drainguard/values.yaml: every key with its default, and the
// comment above it. Keys that follow without a comment of their own share the
// row of the one before (drainTimeoutSeconds beside terminationGracePeriodSeconds);
// the first key of a map takes the map's comment.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type Pair, isMap, isScalar, parseDocument } from 'yaml';

export const SETTINGS_DOC = 'docs/helm.md';
export const SETTINGS_VALUES = 'deploy/helm/drainguard/values.yaml';
export const BEGIN = '<!-- settings:begin -->';
export const END = '<!-- settings:end -->';

interface Row {
  keys: string[];
  defaults: string[];
  comment: string;
}

const shown = (value: unknown): string => (typeof value === 'string' ? (value === '' ? '""' : value) : JSON.stringify(value));
const comment = (text: string | null | undefined): string =>
  (text ?? '')
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean)
    .join(' ');

/** The rows of the table, in the order of values.yaml. */
export function settingsRows(valuesYaml: string): Row[] {
  const doc = parseDocument(valuesYaml);
  const rows: Row[] = [];
  const walk = (node: unknown, path: string[], inherited: string, parent: string) => {
    if (!isMap(node)) return;
    let pending = inherited;
    for (const pair of node.items as Pair[]) {
      const key = String(isScalar(pair.key) ? pair.key.value : pair.key);
      const own = comment((pair.key as { commentBefore?: string }).commentBefore);
      // The file's opening paragraph is about all settings: only its last one is the first key's.
      const text =
        path.length === 0 && rows.length === 0
          ? comment(((pair.key as { commentBefore?: string }).commentBefore ?? '').split('\n\n').pop())
          : own;
      const value = pair.value as { commentBefore?: string; toJSON?: () => unknown };
      const here = [...path, key];
      if (isMap(pair.value) && pair.value.items.length > 0) {
        walk(pair.value, here, [pending, text, comment(value.commentBefore)].filter(Boolean).join(' '), here.join('.'));
        pending = '';
        continue;
      }
      const note = [pending, text].filter(Boolean).join(' ');
      pending = '';
      const last = rows.at(-1);
      const joins = !note && last !== undefined && topOf(parentOf(last.keys.at(-1)!)) === topOf(parent);
      const defaultValue = isScalar(pair.value) ? pair.value.value : (pair.value as { toJSON: () => unknown }).toJSON();
      if (joins) {
        last.keys.push(here.join('.'));
        last.defaults.push(shown(defaultValue));
      } else {
        rows.push({ keys: [here.join('.')], defaults: [shown(defaultValue)], comment: note });
      }
    }
  };
  walk(doc.contents, [], '', '');
  return rows;
}

const parentOf = (key: string): string => key.split('.').slice(0, -1).join('.');
const topOf = (key: string): string => key.split('.')[0]!;
const cell = (text: string): string => text.replaceAll('|', '\\|');

export function settingsTable(valuesYaml: string): string {
  const rows = settingsRows(valuesYaml).map(
    (r) => `| ${r.keys.map((k) => `\`${k}\``).join(', ')} | ${r.defaults.map((d) => `\`${cell(d)}\``).join(', ')} | ${cell(r.comment)} |`,
  );
  return ['| value | default | |', '|---|---|---|', ...rows].join('\n');
}

/** docs/helm.md with the table between the markers renewed from values.yaml under ROOT. */
export function withSettingsTable(document: string | undefined, root: string): string {
  const text = document ?? '';
  const begin = text.indexOf(BEGIN);
  const end = text.indexOf(END);
  if (begin === -1 || end < begin) throw new Error(`${SETTINGS_DOC}: the markers ${BEGIN} and ${END} are missing`);
  const table = settingsTable(readFileSync(join(root, SETTINGS_VALUES), 'utf8'));
  return `${text.slice(0, begin + BEGIN.length)}\n${table}\n${text.slice(end)}`;
}
