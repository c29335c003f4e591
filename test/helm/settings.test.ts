// docs/helm.md's table of settings is generated from the library chart's
// values.yaml (scripts/generate/chart-settings.ts): every key of values.yaml is
// in it with its default, every key has a comment, and the doc holds exactly
// what a fresh generation writes (as npm run generate -- --check does).

import { readFileSync } from 'node:fs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parse } from 'yaml';
import { SETTINGS_DOC, SETTINGS_VALUES, settingsRows, withSettingsTable } from '../../scripts/generate/chart-settings.ts';

const values = readFileSync(SETTINGS_VALUES, 'utf8');

function leaves(o: Record<string, unknown>, path: string[] = []): string[] {
  return Object.entries(o).flatMap(([k, v]) =>
    v && typeof v === 'object' && !Array.isArray(v) && Object.keys(v).length > 0
      ? leaves(v as Record<string, unknown>, [...path, k])
      : [[...path, k].join('.')],
  );
}

test('every key of values.yaml has a row, with a comment', () => {
  const rows = settingsRows(values);
  assert.equal(
    rows.flatMap((r) => r.keys),
    leaves(parse(values)),
  );
  for (const row of rows) assert.ok(row.comment.length > 0, `${row.keys.join(', ')}: a comment in values.yaml`);
});

test('docs/helm.md holds the table as generated', () => {
  const doc = readFileSync(SETTINGS_DOC, 'utf8');
  assert.fixture(doc, withSettingsTable(doc, '.'));
});

test('a key added to values.yaml shows in the table; the table follows the file', () => {
  const more = `${values}\n# A new setting.\nnewSetting: 7\n`;
  const row = settingsRows(more).at(-1)!;
  assert.equal(row, { keys: ['newSetting'], defaults: ['7'], comment: 'A new setting.' });
});

test.run();
