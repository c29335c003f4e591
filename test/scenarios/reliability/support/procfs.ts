// What the kernel says about a process: memory, descriptors, sockets, session.
// Linux only (/proc), like the containers drainguard runs in.

import { readFileSync, readdirSync, readlinkSync } from 'node:fs';

export interface Memory {
  /** Resident set size now, in KiB. */
  readonly rssKiB: number;
  /** Peak resident set size since the process started (VmHWM), in KiB. */
  readonly peakKiB: number;
}

export function memory(pid: number | 'self'): Memory {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
  return { rssKiB: field('VmRSS'), peakKiB: field('VmHWM') };
}

/** The targets of the process's open descriptors (`socket:[123]`, `/dev/null`, `pipe:[9]`, ...). */
export function descriptors(pid: number | 'self'): string[] {
  const dir = `/proc/${pid}/fd`;
  return readdirSync(dir).flatMap((fd) => {
    try {
      return [readlinkSync(`${dir}/${fd}`)];
    } catch {
      return []; // closed between the listing and the read (the listing's own descriptor, for one)
    }
  });
}

export const countSockets = (fds: readonly string[]): number => fds.filter((t) => t.startsWith('socket:')).length;

/** Session and process group of a process (fields 6 and 5 of /proc/PID/stat). */
export function sessionOf(pid: number): { pgrp: number; session: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // The command name may hold spaces and parentheses: the fields start after the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { pgrp: Number(fields[2]), session: Number(fields[3]) };
}

/** True while a process with this pid exists and is not a zombie. */
export function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

/** Pids of live processes whose environment holds `KEY=VALUE` (to find what a test left behind). */
export function processesWithEnv(key: string, value: string): number[] {
  const needle = Buffer.from(`${key}=${value}\0`);
  return readdirSync('/proc').flatMap((entry) => {
    if (!/^\d+$/.test(entry)) return [];
    try {
      const environ = readFileSync(`/proc/${entry}/environ`);
      return environ.includes(needle) && alive(Number(entry)) ? [Number(entry)] : [];
    } catch {
      return [];
    }
  });
}

/** Unix sockets bound to a path under `dir` (from /proc/net/unix), listening or connected. */
export function unixSocketsUnder(dir: string): string[] {
  return readFileSync('/proc/net/unix', 'utf8')
    .split('\n')
    .slice(1)
    .map((line) => line.trim().split(/\s+/)[7])
    .filter((path): path is string => path !== undefined && path.startsWith(dir));
}

/** The soft limit on open files ("Max open files" in /proc/PID/limits). */
export function openFileLimit(pid: number | 'self' = 'self'): number {
  const limits = readFileSync(`/proc/${pid}/limits`, 'utf8');
  return Number(/^Max open files\s+(\d+)/m.exec(limits)?.[1] ?? 1024);
}

export const mib = (kib: number): string => `${(kib / 1024).toFixed(1)} MiB`;
