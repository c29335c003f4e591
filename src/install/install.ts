// `drainguard install DIR`: writes the launcher, the executable and what it
// needs to start into DIR, each file written beside its place and renamed
// into it, the launcher last, so DIR/drainguard never starts a half-copied
// installation.

import { chmodSync, mkdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { execa } from 'execa';
import { copyPastPageCache } from './copy.ts';
import { LAUNCHER } from './layout.ts';
import { LAUNCHER_IMAGES } from './launcher-image.ts';
import { InstallSourceError, type SourceFile, installSources } from './sources.ts';

/** The installed copy does not start (a noexec mount, a file system that lost something). */
export class InstalledCopyError extends InstallSourceError {
  override name = 'InstalledCopyError';
  constructor(message: string) {
    super(message, 'DG_INSTALL_COPY');
  }
}

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
  const launcher = LAUNCHER_IMAGES[process.arch];
  if (launcher === undefined) {
    throw new InstallSourceError(`install has a launcher for ${Object.keys(LAUNCHER_IMAGES).join(' and ')}, not for ${process.arch}`);
  }
  const files = sources ?? (await installSources());
  mkdirSync(dir, { recursive: true });
  const copyAll = () => {
    for (const file of files) placeFile(join(dir, file.to), file.mode, (tmp) => copyPastPageCache(file.from, tmp));
  };
  copyAll();
  placeFile(join(dir, LAUNCHER), 0o755, (tmp) => writeFileSync(tmp, launcher));
  await checkStarts(join(dir, LAUNCHER));
  // The check ran the copy: Linux took its pages for ones in use, and the pod keeps them so (they are
  // charged to it): in its working set, under memory pressure kept and refaulted as active. Copied again,
  // the checked files go (renamed over, their pages freed) and drainguard starts from pages nothing ran.
  copyAll();
  const written: InstalledFile[] = [
    ...files.map((file) => ({ path: file.to, bytes: statSync(join(dir, file.to)).size })),
    { path: LAUNCHER, bytes: launcher.length },
  ];
  return { dir, files: written, bytes: written.reduce((n, f) => n + f.bytes, 0) };
}

/** Runs the installed copy once, so that a copy that cannot start fails here, in the init container's log. */
async function checkStarts(launcher: string): Promise<void> {
  const run = await execa(launcher, ['--version'], { reject: false, timeout: 30_000, extendEnv: false, env: {} });
  if (run.exitCode !== 0 || !run.stdout.startsWith('drainguard ')) {
    const why = run.code === 'EACCES' ? ' (permission denied: is DIR on a noexec mount?)' : '';
    throw new InstalledCopyError(
      `the installed copy does not start: ${launcher} --version: ` +
        `${String(run.stderr).trim() || run.originalMessage || run.shortMessage}${why}`,
    );
  }
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
