// The working set as cAdvisor computes it from either cgroup version's files
// (lines written here in the kernel's layout, Documentation/admin-guide/cgroup-v1/memory.rst
// and cgroup-v2.rst), and the reader on the host's own root cgroup.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { cgroupVersion, memoryCgroupOf, memoryHierarchy, parseCgroupMemory, readCgroupMemory } from './cgroup-memory.ts';

const V1_STAT = `cache 4096
rss 8192
inactive_file 4096
active_file 0
total_cache 30000000
total_rss 12000000
total_rss_huge 0
total_shmem 4096
total_mapped_file 20000000
total_inactive_file 25000000
total_active_file 5000000
`;

const V2_STAT = `anon 12000000
file 30000000
kernel 900000
shmem 4096
inactive_anon 11000000
active_anon 1000000
inactive_file 25000000
active_file 5000000
`;

test('v1: usage minus the hierarchical inactive file pages; anonymous and file from the total_ lines', () => {
  assert.equal(parseCgroupMemory('v1', '43000000\n', V1_STAT), {
    usage: 43_000_000,
    workingSet: 18_000_000,
    anon: 12_000_000,
    file: 30_000_000,
    activeFile: 5_000_000,
    inactiveFile: 25_000_000,
  });
});

test('v2: memory.current minus inactive_file', () => {
  const m = parseCgroupMemory('v2', '43000000\n', V2_STAT);
  assert.is(m.workingSet, 18_000_000);
  assert.is(m.anon, 12_000_000);
  assert.is(m.file, 30_000_000);
});

test('inactive file above the usage (v1 batches its usage per CPU): a working set of 0, as cAdvisor has it', () => {
  assert.is(parseCgroupMemory('v1', '20000000', V1_STAT).workingSet, 0);
});

test('a memory.stat without the lines the figure needs is refused, naming the line', () => {
  assert.throws(() => parseCgroupMemory('v1', '1', 'cache 1\nrss 1\n'), /memory\.stat: no total_inactive_file line/);
  assert.throws(() => parseCgroupMemory('v2', '', V2_STAT), /memory\.current: not a number/);
});

test("this process's own memory cgroup reads, its anonymous memory at least this heap's; a cgroup that is gone reads as undefined", () => {
  const version = cgroupVersion();
  const own = readCgroupMemory(version, memoryCgroupOf('self', version));
  assert.ok(own && own.anon >= process.memoryUsage().heapUsed && own.workingSet <= own.usage, JSON.stringify(own));
  assert.is(readCgroupMemory(version, `${memoryHierarchy(version)}/drainguard-no-such-cgroup`), undefined);
});

test.run();
