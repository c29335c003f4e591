// A cgroup's memory as the kubelet and `kubectl top` see it. cAdvisor (in the
// kubelet; metrics-server reads it from the kubelet's /metrics/resource) takes
// a container's and a pod's working set as usage minus inactive file pages,
// and the kubelet's eviction ranks pods by the same figure:
//   cgroup v1: memory.usage_in_bytes - total_inactive_file of memory.stat
//   cgroup v2: memory.current - inactive_file of memory.stat
// (google/cadvisor container/libcontainer/handler.go, setMemoryStats). The
// total_* lines of v1 are hierarchical (a pod's cgroup holds its containers'),
// v2's memory.stat always is.

import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export type CgroupVersion = 'v1' | 'v2';

export interface CgroupMemory {
  /** memory.usage_in_bytes (v1) or memory.current (v2): every page charged to the cgroup. */
  readonly usage: number;
  /** What the kubelet and `kubectl top` report: usage minus inactive file pages. */
  readonly workingSet: number;
  /** Anonymous memory (v1 total_rss, v2 anon): heap, stacks; not reclaimable without swap. */
  readonly anon: number;
  /** File pages charged to the cgroup (v1 total_cache, v2 file), tmpfs included. */
  readonly file: number;
  readonly activeFile: number;
  readonly inactiveFile: number;
}

/** The host's cgroups: v2 when the unified hierarchy is mounted at /sys/fs/cgroup itself (its cgroup.controllers is there). */
export function cgroupVersion(root = '/sys/fs/cgroup'): CgroupVersion {
  return existsSync(join(root, 'cgroup.controllers')) ? 'v2' : 'v1';
}

/** The directory of the memory controller's hierarchy. */
export function memoryHierarchy(version: CgroupVersion, root = '/sys/fs/cgroup'): string {
  return version === 'v2' ? root : join(root, 'memory');
}

/** The directory of process PID's memory cgroup (its line in /proc/PID/cgroup: `N:memory:PATH` on v1, `0::PATH` on v2). */
export function memoryCgroupOf(pid: number | 'self', version: CgroupVersion, root = '/sys/fs/cgroup'): string {
  const lines = readFileSync(`/proc/${pid}/cgroup`, 'utf8').split('\n');
  const line = lines.find((l) => (version === 'v2' ? l.startsWith('0::') : l.split(':')[1]?.split(',').includes('memory')));
  if (!line) throw new Error(`/proc/${pid}/cgroup: no ${version === 'v2' ? 'unified' : 'memory'} hierarchy`);
  return join(memoryHierarchy(version, root), line.slice(line.indexOf(':', line.indexOf(':') + 1) + 1));
}

function statLines(text: string): Map<string, number> {
  const m = new Map<string, number>();
  for (const line of text.split('\n')) {
    const [key, value] = line.split(' ');
    if (key && value !== undefined) m.set(key, Number(value));
  }
  return m;
}

function field(stat: Map<string, number>, key: string, file: string): number {
  const v = stat.get(key);
  if (v === undefined || !Number.isFinite(v)) throw new Error(`${file}: no ${key} line`);
  return v;
}

/** Parses a cgroup's usage file and memory.stat (either version's). */
export function parseCgroupMemory(version: CgroupVersion, usageText: string, statText: string): CgroupMemory {
  const usage = Number(usageText.trim());
  if (!Number.isFinite(usage) || usageText.trim() === '')
    throw new Error(`${version === 'v1' ? 'memory.usage_in_bytes' : 'memory.current'}: not a number: ${JSON.stringify(usageText)}`);
  const stat = statLines(statText);
  const [prefix, anonKey, fileKey] = version === 'v1' ? ['total_', 'total_rss', 'total_cache'] : ['', 'anon', 'file'];
  const inactiveFile = field(stat, `${prefix}inactive_file`, 'memory.stat');
  return {
    usage,
    // cAdvisor: 0 when inactive file exceeds usage (v1's usage is batched per CPU and can lag).
    workingSet: Math.max(0, usage - inactiveFile),
    anon: field(stat, anonKey, 'memory.stat'),
    file: field(stat, fileKey, 'memory.stat'),
    activeFile: field(stat, `${prefix}active_file`, 'memory.stat'),
    inactiveFile,
  };
}

/** Reads the cgroup at `dir`; undefined once it is gone (the container or pod ended). */
export function readCgroupMemory(version: CgroupVersion, dir: string): CgroupMemory | undefined {
  try {
    const usage = readFileSync(join(dir, version === 'v1' ? 'memory.usage_in_bytes' : 'memory.current'), 'utf8');
    return parseCgroupMemory(version, usage, readFileSync(join(dir, 'memory.stat'), 'utf8'));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT' || (err as NodeJS.ErrnoException).code === 'ENODEV') return undefined;
    throw err;
  }
}

/**
 * One reclaim pass through the cgroup, such as a node whose memory is full of page cache makes
 * through every pod: its inactive file pages are reclaimed, and those found referenced on the way
 * are kept (mapped executable ones moved to the active list: from then on in the working set).
 * v2: memory.reclaim; v1 has none: the limit is lowered to what is not inactive file, then set back.
 * Returns the bytes it freed.
 */
export function reclaimPass(version: CgroupVersion, dir: string): number {
  const before = readCgroupMemory(version, dir);
  if (!before) throw new Error(`no cgroup ${dir}`);
  if (version === 'v2') {
    try {
      writeFileSync(join(dir, 'memory.reclaim'), String(before.inactiveFile));
    } catch (err) {
      // EAGAIN: less could be reclaimed than asked for; what was, was.
      if ((err as NodeJS.ErrnoException).code !== 'EAGAIN') throw err;
    }
  } else {
    const limitFile = join(dir, 'memory.limit_in_bytes');
    const limit = readFileSync(limitFile, 'utf8').trim();
    const page = 4096;
    try {
      writeFileSync(limitFile, String(Math.ceil((before.usage - before.inactiveFile) / page) * page + 2 * 1024 * 1024));
    } catch (err) {
      // EBUSY: the kernel could not reclaim down to it; it reclaimed what it could.
      if ((err as NodeJS.ErrnoException).code !== 'EBUSY') throw err;
    } finally {
      writeFileSync(limitFile, limit);
    }
  }
  return before.usage - (readCgroupMemory(version, dir)?.usage ?? before.usage);
}
