// install's copy past the page cache: the same bytes, whatever the size (a
// direct read's last block is short, a direct write's is padded and cut off),
// and no page brought into any cgroup's page cache by the copy: neither the
// source's by the read nor the copy's by the write.

import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { copyPastPageCache } from '../../src/install/copy.ts';

const dir = mkdtempSync(join(tmpdir(), 'drainguard-copy-'));
test.after(() => rmSync(dir, { recursive: true, force: true }));

for (const size of [0, 1, 4095, 4096, 4097, (1 << 20) - 1, (1 << 20) + 123, 3 * (1 << 20)]) {
  test(`${size} bytes: the same bytes, over a longer file too`, () => {
    const data = randomBytes(size);
    writeFileSync(join(dir, 'from'), data);
    writeFileSync(join(dir, 'to'), randomBytes(size + 5000));
    copyPastPageCache(join(dir, 'from'), join(dir, 'to'));
    assert.ok(readFileSync(join(dir, 'to')).equals(data));
  });
}

test('a file it cannot open says so, as copyFileSync does', () => {
  assert.throws(() => copyPastPageCache(join(dir, 'missing'), join(dir, 'to')), /ENOENT/);
});

const resident = (file: string) =>
  Number(execFileSync('fincore', ['--bytes', '--noheadings', '--output', 'RES', file], { encoding: 'utf8' }).trim());

test("neither the source's pages nor the copy's are left in the page cache (fincore; a file system of direct reads and writes)", () => {
  const from = join(dir, 'cold');
  const to = join(dir, 'copy');
  writeFileSync(from, randomBytes((8 << 20) + 1000));
  execFileSync('dd', [`if=${from}`, 'iflag=nocache', 'count=0', 'status=none']);
  const before = resident(from);
  copyPastPageCache(from, to);
  assert.ok(resident(from) <= before, `the source: resident before ${before}, after ${resident(from)}`);
  // At most the last page: the truncation of the padding zeroes the rest of its block through the page cache.
  assert.ok(resident(to) <= 4096, `the copy: ${resident(to)} bytes resident of ${(8 << 20) + 1000}`);
  assert.ok(readFileSync(to).equals(readFileSync(from)));
});

test('a buffered copy (the control) leaves the copy in the page cache: what the test above would see without O_DIRECT', () => {
  const from = join(dir, 'cold');
  const to = join(dir, 'buffered');
  copyFileSync(from, to);
  assert.ok(resident(to) > 4 << 20, `the buffered copy: ${resident(to)} bytes resident`);
});

test.run();
