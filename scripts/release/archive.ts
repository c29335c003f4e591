// Reproducible archives and checksums: a tar.gz whose bytes depend only on
// the files (names sorted, one mtime, owner 0, no atime/ctime, gzip without
// name and time), and SHA256SUMS as sha256sum writes it.

import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { gzipSync } from 'node:zlib';

/** A tar of NAMES (in DIR), names sorted, every file dated EPOCH, owned by 0:0. */
function tar(dir: string, names: readonly string[], epoch: number): Buffer {
  return execFileSync(
    'tar',
    [
      '--sort=name',
      `--mtime=@${epoch}`,
      '--owner=0',
      '--group=0',
      '--numeric-owner',
      '--mode=go-w,a+rX',
      '--format=posix',
      '--pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime',
      '-C',
      dir,
      '-cf',
      '-',
      '--',
      ...names,
    ],
    { maxBuffer: 1 << 30 },
  );
}

/** DIR (a directory) as OUT, a .tar.gz whose entries are under basename(DIR)/, every file dated EPOCH. */
export function tarGz(dir: string, out: string, epoch: number): void {
  // gzip's header has no name and a zero time here (zlib's): the same tar gives the same bytes.
  writeFileSync(out, gzipSync(tar(dirname(dir), [basename(dir)], epoch), { level: 9 }));
}

/** The contents of DIR (not DIR itself) as OUT, an uncompressed tar: an OCI layout as an OCI archive. */
export function tarContents(dir: string, out: string, epoch: number): void {
  writeFileSync(out, tar(dir, readdirSync(dir).sort(), epoch));
}

export const sha256File = (path: string): string => createHash('sha256').update(readFileSync(path)).digest('hex');

/** Writes DIR/SHA256SUMS for every other file in DIR (sorted); returns its lines. */
export function writeChecksums(dir: string): string[] {
  const lines = readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isFile() && e.name !== 'SHA256SUMS')
    .map((e) => e.name)
    .sort()
    .map((name) => `${sha256File(join(dir, name))}  ${name}`);
  writeFileSync(join(dir, 'SHA256SUMS'), `${lines.join('\n')}\n`);
  return lines;
}
