// `drainguard install` as a command: usage errors, and the parts that decide
// what to copy and whether drainguard was started through the launcher.

import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { installedDir, selfExecutable } from '../../src/install/layout.ts';
import { parseLoadedObjects } from '../../src/install/sources.ts';
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
  const p = new Proc('unshare', ['--mount', '--propagation', 'private', '/bin/sh', '-c', 'mount -t tmpfs -o noexec,size=300m tmpfs "$1" && exec "$2" install "$1/dg"', 'sh', dir, EXE]);
  assert.equal((await p.exit(60_000)).code, 1, p.stderr.join('\n'));
  assert.match(p.logs().find((l) => l.msg === 'install failed')?.error as string, /the installed copy does not start: .*EACCES \(permission denied: is DIR on a noexec mount\?\)/);
});

test('install --help names the layout', async () => {
  const p = drainguard(['install', '--help']);
  assert.equal((await p.exit()).code, 0);
  assert.match(p.stdout.join('\n'), /Usage: drainguard install \[OPTIONS\] DIR/);
});

test("the loader's list: libraries by the name the executable asks for, the loader once", () => {
  const list = `
	linux-vdso.so.1 (0x00007ffc1a5f2000)
	libdl.so.2 => /lib/x86_64-linux-gnu/libdl.so.2 (0x00007f3a0c5e4000)
	libc.so.6 => /lib/x86_64-linux-gnu/libc-2.31.so (0x00007f3a0c3f0000)
	ld-linux-x86-64.so.2 => /lib64/ld-linux-x86-64.so.2 (0x00007f3a0c600000)
	/lib64/ld-linux-x86-64.so.2 (0x00007f3a0c600000)
`;
  assert.equal(parseLoadedObjects(list), {
    loader: '/lib64/ld-linux-x86-64.so.2',
    libraries: [
      { name: 'libdl.so.2', path: '/lib/x86_64-linux-gnu/libdl.so.2' },
      { name: 'libc.so.6', path: '/lib/x86_64-linux-gnu/libc-2.31.so' },
    ],
  });
  assert.throws(() => parseLoadedObjects('\tlibfoo.so.1 => not found\n\t/lib64/ld-linux-x86-64.so.2 (0x1)\n'), /cannot find libfoo\.so\.1/);
  assert.throws(() => parseLoadedObjects('\tlibc.so.6 => /lib/libc.so.6 (0x1)\n\t/lib/ld-musl-x86_64.so.1 (0x2)\n'), /expected glibc's loader for x64 \(ld-linux-x86-64\.so\.2\)/);
});

test('started through the launcher: DIR is found, and the launcher is what runs drainguard again', () => {
  const dir = join(tempDir(), 'drainguard');
  mkdirSync(join(dir, 'lib'), { recursive: true });
  for (const f of ['drainguard', 'lib/drainguard', 'lib/ld-linux-x86-64.so.2']) writeFileSync(join(dir, f), '');
  const launcher = join(dir, 'drainguard');
  const loader = join(dir, 'lib/ld-linux-x86-64.so.2');
  // With /proc: execPath is the loader. Without: Node falls back to argv[0], the launcher.
  assert.equal(installedDir({ execPath: loader, argv0: launcher }), dir);
  assert.equal(installedDir({ execPath: launcher, argv0: launcher }), dir);
  assert.equal(selfExecutable({ execPath: loader, argv0: launcher }), launcher);
  // Through a symlink to the launcher, the real directory.
  const link = join(tempDir(), 'dg');
  symlinkSync(launcher, link);
  assert.equal(installedDir({ execPath: loader, argv0: link }), dir);
  // Started directly: the executable itself.
  assert.equal(installedDir({ execPath: '/usr/bin/drainguard', argv0: 'drainguard' }), undefined);
  assert.equal(selfExecutable({ execPath: join(dir, 'lib/drainguard'), argv0: join(dir, 'lib/drainguard') }), join(dir, 'lib/drainguard'));
});

test.run();
