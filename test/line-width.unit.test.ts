// The TypeScript of src/ and sidecar/ within Prettier's printWidth: Prettier
// breaks code but never a string or a comment, so a long message or comment
// passes `prettier --check` and is held here instead.
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';

const { printWidth } = JSON.parse(readFileSync('.prettierrc.json', 'utf8')) as { printWidth: number };

const sources = ['src', 'sidecar'].flatMap((dir) =>
  (readdirSync(dir, { recursive: true, encoding: 'utf8' }) as string[]).filter((f) => f.endsWith('.ts')).map((f) => join(dir, f)),
);

test('the width is read from .prettierrc.json, and there are files to hold to it', () => {
  assert.ok(Number.isInteger(printWidth) && printWidth > 0, `printWidth ${printWidth}`);
  assert.ok(sources.includes(join('src', 'errors.ts')) && sources.includes(join('sidecar', 'main.ts')), sources.join(', '));
});

test('no line of src/ or sidecar/ TypeScript is longer than printWidth', () => {
  const long = sources.flatMap((file) =>
    readFileSync(file, 'utf8')
      .split('\n')
      .flatMap((line, i) => {
        const width = [...line].length;
        return width > printWidth ? [`${file}:${i + 1}: ${width} columns`] : [];
      }),
  );
  assert.ok(long.length === 0, `${long.length} lines longer than ${printWidth} columns:\n${long.join('\n')}`);
});

test.run();
