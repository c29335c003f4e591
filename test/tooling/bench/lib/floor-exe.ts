// The start benchmark's floor executable: fixtures/floor-supervisor.ts built
// as drainguard is (sidecar/build/sea.ts, for this machine), so that the two
// differ only in the script they run.

import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildSync } from 'esbuild';
import { wrapMain } from '../../../../sidecar/build/boot.ts';
import { runtimeFor } from '../../../../sidecar/build/runtime.ts';
import { buildExecutable } from '../../../../sidecar/build/sea.ts';
import { TARGETS, isArch } from '../../../../sidecar/build/targets.ts';
import { fixture } from './paths.ts';

/** Builds the floor executable into `dir` and returns its path. */
export function buildFloorExecutable(dir: string): string {
  if (!isArch(process.arch)) throw new Error(`no executable target for ${process.arch}`);
  const target = TARGETS[process.arch];
  const bundle = join(dir, 'floor.cjs');
  const lazy = join(dir, 'floor-lazy.cjs');
  const output = join(dir, 'floor');
  buildSync({
    entryPoints: [fixture('floor-supervisor.ts')],
    outfile: bundle,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    minify: true,
    logLevel: 'warning',
  });
  // drainguard's lazy asset, empty: the executable is made the same way, with nothing to load later.
  writeFileSync(lazy, wrapMain(''));
  try {
    buildExecutable({ target, runtime: runtimeFor(target, dir), bundle, output, cacheDir: dir, lazy, training: ['/bin/true'] });
  } finally {
    rmSync(bundle, { force: true });
    rmSync(lazy, { force: true });
  }
  return output;
}
