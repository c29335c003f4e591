// `drainguard install DIR`: writes the launcher, the executable and what it
// needs to start into DIR, each file written beside its place and renamed
// into it, the launcher last, so DIR/drainguard never starts a half-copied
// installation.

import { chmodSync, copyFileSync, mkdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { LAUNCHER } from './layout.ts';
import { LAUNCHER_IMAGE } from './launcher-image.ts';
import { type SourceFile, installSources } from './sources.ts';

export interface InstalledFile {
  /** Relative to DIR. */
  readonly path: string;
  readonly bytes: number;
}

export interface InstallResult {
  readonly dir: string;
  readonly files: readonly InstalledFile[];
  readonly bytes: number;
}

export async function install(dir: string, sources?: readonly SourceFile[]): Promise<InstallResult> {
  const files = sources ?? (await installSources());
  mkdirSync(dir, { recursive: true });
  const written: InstalledFile[] = [];
  for (const file of files) {
    placeFile(join(dir, file.to), file.mode, (tmp) => copyFileSync(file.from, tmp));
    written.push({ path: file.to, bytes: statSync(join(dir, file.to)).size });
  }
  placeFile(join(dir, LAUNCHER), 0o755, (tmp) => writeFileSync(tmp, LAUNCHER_IMAGE));
  written.push({ path: LAUNCHER, bytes: LAUNCHER_IMAGE.length });
  return { dir, files: written, bytes: written.reduce((n, f) => n + f.bytes, 0) };
}

function placeFile(path: string, mode: number, write: (tmp: string) => void): void {
  mkdirSync(dirname(path), { recursive: true });
  const tmp = join(dirname(path), `.install-${process.pid}-${Date.now()}`);
  try {
    write(tmp);
    chmodSync(tmp, mode);
    renameSync(tmp, path);
  } finally {
    rmSync(tmp, { force: true });
  }
}
