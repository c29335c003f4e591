// Whether drainguard was started through the installed launcher, and what then
// runs drainguard again.

import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { installedDir, selfExecutable } from '../../src/install/layout.ts';
import { tempDir } from '../support/proc.ts';

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
