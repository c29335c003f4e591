// The executable: what a container image or a download carries.

import { readFileSync, statSync } from 'node:fs';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import { EXE } from './lib/paths.ts';
import { MiB } from '../../support/stats.ts';

export async function runSize(): Promise<{ binaryMiB: number; binaryGzMiB: number }> {
  const size = statSync(EXE).size;
  // gzip's default level, as `docker push` and `gzip` use.
  const gz = await promisify(gzip)(readFileSync(EXE));
  return { binaryMiB: size / MiB, binaryGzMiB: gz.length / MiB };
}
