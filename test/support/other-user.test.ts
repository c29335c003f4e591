// copyForUser: what a test runs as nobody is reachable by nobody wherever the
// checkout is, and a temporary directory that is not is told, not tripped over.

import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { NOBODY, copyForUser } from './other-user.ts';
import { tempDir } from './proc.ts';

const asNobody = { uid: NOBODY, gid: NOBODY, encoding: 'utf8', timeout: 10_000 } as const;

/** A directory as root's home is: closed to every other user. */
function closed(): string {
  const dir = tempDir();
  chmodSync(dir, 0o700);
  return dir;
}

test('a program in a directory closed to nobody: nobody cannot run it there, and runs the copy', () => {
  const program = join(closed(), 'true');
  copyFileSync('/usr/bin/true', program);
  chmodSync(program, 0o755);
  const there = spawnSync(program, asNobody);
  assert.is((there.error as NodeJS.ErrnoException | undefined)?.code, 'EACCES', 'the control: nobody cannot reach the original');
  const copy = copyForUser(NOBODY, program);
  const run = spawnSync(copy, asNobody);
  assert.is(run.error, undefined);
  assert.is(run.status, 0);
  assert.is(copyForUser(NOBODY, program), copy, 'one copy per file');
});

test('a TMPDIR closed to nobody: refused, naming that directory and what to do', () => {
  const tmp = closed();
  const before = process.env.TMPDIR;
  process.env.TMPDIR = tmp;
  try {
    assert.throws(
      () => copyForUser(NOBODY, '/usr/bin/true'),
      (err: Error) =>
        err.message.startsWith(`uid ${NOBODY} cannot run ${tmp}/`) &&
        err.message.includes(`: ${tmp} is closed to that user (mode 700); set TMPDIR to a directory every user can enter, such as /tmp`),
    );
  } finally {
    if (before === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = before;
  }
});

test.run();
