// The same checkout bundles to the same bytes: the main script and the lazily
// loaded asset (sidecar/build/lazy.ts), built three times. The lazy entries
// were once listed in the order esbuild's parallel parse found them, so the
// asset's module order changed from build to build. (The executables around
// them are the same too: docs/development.md, "Releases".)

import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { buildSplit } from '../../../sidecar/build/lazy.ts';
import { stampDefines } from '../../../sidecar/build/stamp.ts';
import { tempDir } from '../../support/proc.ts';

const ROOT = resolve('.');

async function bundle(): Promise<{ main: string; lazy: string }> {
  const outfile = join(tempDir(), 'drainguard.cjs');
  const split = await buildSplit(ROOT, {
    entryPoints: [join(ROOT, 'sidecar/main.ts')],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node24',
    minifyWhitespace: true,
    minifySyntax: true,
    legalComments: 'none',
    define: stampDefines({ version: '1.2.3', commit: '0123456789ab' }),
    external: ['bufferutil', 'utf-8-validate'],
    logLevel: 'warning',
  });
  return { main: readFileSync(outfile, 'utf8'), lazy: split.lazy };
}

test('three builds of the bundle and the lazy asset: the same bytes', async () => {
  const first = await bundle();
  for (let i = 0; i < 2; i++) {
    const again = await bundle();
    assert.ok(again.main === first.main, 'the main script');
    assert.ok(again.lazy === first.lazy, 'the lazy asset');
  }
});

test.run();
