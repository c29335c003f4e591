import { accessSync, constants } from 'node:fs';
import { join, resolve } from 'node:path';

export const ROOT = resolve(import.meta.dirname, '../../../..');
export const EXE = join(ROOT, 'dist/drainguard');
/** The Node.js the benchmark runs on: the one drainguard embeds (checked in run.ts). */
export const NODE = process.execPath;
export const fixture = (name: string): string => join(ROOT, 'test/tooling/bench/fixtures', name);

/** The full path of `name` on PATH, or undefined. */
export function onPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(':').filter(Boolean)) {
    const file = join(dir, name);
    try {
      accessSync(file, constants.X_OK);
      return file;
    } catch {}
  }
  return undefined;
}
