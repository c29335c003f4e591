// install's copy past the page cache: the same bytes, whatever the size (a
// direct read's last block is short), and the copy's pages brought into no
// cgroup's page cache by the read (the source's pages stay out of it).

import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { copyPastPageCache } from '../../src/install/copy.ts';

const dir = mkdtempSync(join(tmpdir(), 'drainguard-copy-'));
test.after(() => rmSync(dir, { recursive: true, force: true }));

for (const size of [0, 1, 4095, 4096, (1 << 20) + 123, 3 * (1 << 20)]) {
  test(`${size} bytes: the same bytes`, () => {
    const data = randomBytes(size);
    writeFileSync(join(dir, 'from'), data);
    copyPastPageCache(join(dir, 'from'), join(dir, 'to'));
    assert.ok(readFileSync(join(dir, 'to')).equals(data));
  });
}

test('a file it cannot open says so, as copyFileSync does', () => {
  assert.throws(() => copyPastPageCache(join(dir, 'missing'), join(dir, 'to')), /ENOENT/);
});

test("the source's pages are not brought into the page cache by the copy (fincore, where the file system reads directly)", () => {
  const from = join(dir, 'cold');
  writeFileSync(from, randomBytes(8 << 20));
  execFileSync('dd', [`if=${from}`, 'iflag=nocache', 'count=0', 'status=none']);
  const resident = () => Number(execFileSync('fincore', ['--bytes', '--noheadings', '--output', 'RES', from], { encoding: 'utf8' }).trim());
  const before = resident();
  copyPastPageCache(from, join(dir, 'to'));
  assert.ok(resident() <= before, `resident before ${before}, after ${resident()}`);
});

test.run();
