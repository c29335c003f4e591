// What a test runs as another user (nobody, to meet a permission it would
// bypass as root) must be where that user can reach it. The checkout may not
// be: a clone in root's home (mode 700) is closed to every other user, and
// exec(2) of dist/drainguard there fails with EACCES. So such a test runs a
// copy, made here in a directory of its own under os.tmpdir(), and the copy
// is tried as that user before the test relies on it.

import { spawnSync } from 'node:child_process';
import { chmodSync, constants, copyFileSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { EXE, tempDir } from './proc.ts';

/** nobody's uid and gid (Debian's, and most distributions'). */
export const NOBODY = 65534;

/** The copies made so far, by uid and file: one per test file. */
const copies = new Map<string, string>();

/**
 * Copies FILE (the built executable unless told) into a new directory under
 * os.tmpdir(), the directory and the copy open to every user (0755); returns
 * the copy's path, the same one for the same UID and FILE. Throws, naming the
 * directory that shuts UID out, when UID still cannot run it (a TMPDIR closed
 * to other users).
 */
export function copyForUser(uid: number, file: string = EXE): string {
  const key = `${uid} ${file}`;
  const made = copies.get(key);
  if (made !== undefined) return made;
  const dir = tempDir();
  chmodSync(dir, 0o755);
  const copy = join(dir, basename(file));
  // A reflink where the filesystem has them (the executable is about 100 MiB), a copy elsewhere.
  copyFileSync(file, copy, constants.COPYFILE_FICLONE);
  chmodSync(copy, 0o755);
  // Asked of the kernel as that user: the modes on the way are not the whole story (ACLs, mounts).
  const tried = spawnSync('/usr/bin/test', ['-x', copy], { uid, gid: uid, stdio: 'ignore' });
  if (tried.error !== undefined || tried.status !== 0) {
    const closed = closedTo(uid, dir);
    throw new Error(
      `uid ${uid} cannot run ${copy}` +
        (closed === undefined ? '' : `: ${closed} is closed to that user (mode ${(statSync(closed).mode & 0o777).toString(8)})`) +
        '; set TMPDIR to a directory every user can enter, such as /tmp',
    );
  }
  copies.set(key, copy);
  return copy;
}

/** The first directory from / down to DIR that UID (with no other groups) may not search, if one is. */
export function closedTo(uid: number, dir: string): string | undefined {
  const chain: string[] = [];
  for (let d = dir; ; d = dirname(d)) {
    chain.unshift(d);
    if (dirname(d) === d) break;
  }
  return chain.find((d) => {
    const s = statSync(d);
    const bit = s.uid === uid ? 0o100 : s.gid === uid ? 0o010 : 0o001;
    return (s.mode & bit) === 0;
  });
}
