// Memory of a process as Linux counts it, and control over the page cache of
// an executable (file-backed pages count in RSS once touched).

import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

export interface Rss {
  /** VmRSS: what `ps`, `top` and the kubelet's working set start from. */
  readonly rss: number;
  /** RssAnon: memory the process itself allocated (heap, stacks). */
  readonly anon: number;
  /** RssFile: mapped pages of the executable and libraries. */
  readonly file: number;
}

export function rssOf(pid: number): Rss {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN) * 1024;
  return { rss: kib('VmRSS'), anon: kib('RssAnon'), file: kib('RssFile') };
}

/**
 * Drops `file` from the page cache (pages still mapped by a process stay), so
 * the next start reads it from disk as after a reboot. GNU dd with count=0
 * and iflag=nocache does exactly this (posix_fadvise DONTNEED on the file).
 */
export function dropFromPageCache(file: string): boolean {
  try {
    execFileSync('sync', [file]);
    execFileSync('dd', [`if=${file}`, 'iflag=nocache', 'count=0', 'status=none']);
    return true;
  } catch {
    return false;
  }
}

/** CPU time of a process's main thread and its time spent runnable but waiting for a CPU, in ms (/proc/PID/schedstat, ns resolution). */
export function schedOf(pid: number): { cpuMs: number; waitMs: number } {
  const [run, wait] = readFileSync(`/proc/${pid}/schedstat`, 'utf8').trim().split(' ').map(Number);
  return { cpuMs: run! / 1e6, waitMs: wait! / 1e6 };
}
