// A scratch directory for a unit test, removed when the file's process exits.
// Not test/support/proc.ts's: that one needs the built executable, and the
// unit tier runs before the build.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const made: string[] = [];
process.once('exit', () => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});

export function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'drainguard-unit-'));
  made.push(dir);
  return dir;
}
