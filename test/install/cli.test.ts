// `drainguard install` as a command: usage errors, a copy that cannot start,
// its help. What to copy and whether drainguard was started through the
// launcher: sources.unit.test.ts and layout.unit.test.ts.

import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { EXE, Proc, drainguard, tempDir } from '../support/proc.ts';

test('usage errors exit 2 and say what was wrong', async () => {
  const file = join(tempDir(), 'a-file');
  writeFileSync(file, '');
  const cases: [string[], RegExp][] = [
    [['install'], /needs exactly one DIR, got none/],
    [['install', 'a', 'b'], /needs exactly one DIR, got \["a","b"\]/],
    [['install', file], /DIR: expected a directory, got ".*a-file", which is not one/],
    [['install', '--bogus', 'x'], /unknown option --bogus/],
  ];
  for (const [args, message] of cases) {
    const p = drainguard(args);
    assert.equal((await p.exit()).code, 2, args.join(' '));
    assert.match(p.stderr.join('\n'), message);
  }
});

test('a copy that cannot start fails the install (DIR on a noexec mount), exit 1', async () => {
  const dir = tempDir();
  // A noexec tmpfs in a mount namespace of the process's own, gone with it.
  const p = new Proc('unshare', [
    '--mount',
    '--propagation',
    'private',
    '/bin/sh',
    '-c',
    'mount -t tmpfs -o noexec,size=300m tmpfs "$1" && exec "$2" install "$1/dg"',
    'sh',
    dir,
    EXE,
  ]);
  assert.equal((await p.exit(60_000)).code, 1, p.stderr.join('\n'));
  assert.match(
    p.logs().find((l) => l.msg === 'install failed')?.error as string,
    /the installed copy does not start: .*EACCES \(permission denied: is DIR on a noexec mount\?\)/,
  );
});

test('install --help names the layout', async () => {
  const p = drainguard(['install', '--help']);
  assert.equal((await p.exit()).code, 0);
  assert.match(p.stdout.join('\n'), /Usage: drainguard install \[OPTIONS\] DIR/);
});

test.run();
