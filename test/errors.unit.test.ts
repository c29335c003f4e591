// The table of error codes (src/errors.ts): every code src/ uses is in it and in
// docs/errors.md, and every entry is used. errors.test.ts runs the executable.
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ERRORS } from '../src/errors.ts';

const SRC = 'src';
const sources = (readdirSync(SRC, { recursive: true, encoding: 'utf8' }) as string[])
  .filter((f) => f.endsWith('.ts') && f !== 'errors.ts')
  .map((f) => ({ file: join(SRC, f), text: readFileSync(join(SRC, f), 'utf8') }));
const used = new Map<string, string[]>();
for (const { file, text } of sources)
  for (const [code] of text.matchAll(/\bDG_[A-Z0-9_]+\b/g)) used.set(code, [...(used.get(code) ?? []), file]);

test('every code used in src/ is in the table', () => {
  for (const [code, files] of used) assert.ok(Object.hasOwn(ERRORS, code), `${code} (${files.join(', ')}) is not in src/errors.ts`);
});

test('every code in the table is used somewhere in src/', () => {
  for (const code of Object.keys(ERRORS)) assert.ok(used.has(code), `${code} is in src/errors.ts but nothing throws it`);
});

test('every code is documented in docs/errors.md with its exit status', () => {
  const doc = readFileSync('docs/errors.md', 'utf8');
  for (const [code, spec] of Object.entries(ERRORS)) {
    const row = doc.split('\n').find((l) => l.startsWith(`| \`${code}\` |`));
    assert.ok(row, `${code} has no row in docs/errors.md`);
    assert.ok(row!.startsWith(`| \`${code}\` | ${'exit' in spec ? spec.exit : 'the connection is closed'} |`), row);
    assert.ok(spec.meaning.length > 0 && spec.fix.length > 0, code);
  }
});

test('no uncoded throw new Error( in src/: what a user sees has a code', () => {
  for (const { file, text } of sources) assert.not.ok(/throw new Error\(/.test(text), file);
});

test.run();
