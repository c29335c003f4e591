// Where a process's resident pages are, and which of them are on the kernel's
// active list: the file pages of each mapped file split by its ELF sections,
// and the anonymous mappings. A page on the active list counts in its
// cgroup's working set (lib/cgroup-memory.ts); an inactive one does not.
// From /proc/PID/maps and /proc/PID/pagemap (the page frame, root only) and
// /proc/kpageflags (the frame's LRU flags), the section of a page by its
// offset in the file (readelf -SW). Run as root, for what the pod benchmark
// finds in a pod (its drainguard's pid) or any process:
//
//   node test/tooling/bench/pages.ts PID [--all]     (--all: every mapping, not only the largest)

import { execFileSync } from 'node:child_process';
import { closeSync, openSync, readFileSync, readSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { MiB } from '../../support/stats.ts';

const PAGE = 4096;
const KPF_REFERENCED = 2n;
const KPF_ACTIVE = 6n;

interface Mapping {
  readonly start: number;
  readonly end: number;
  readonly offset: number;
  readonly path: string;
}

export interface PageCount {
  resident: number;
  active: number;
  referenced: number;
}

function mappings(pid: number): Mapping[] {
  return readFileSync(`/proc/${pid}/maps`, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => {
      const [range, , offset, , , ...path] = l.split(/\s+/);
      const [start, end] = range!.split('-').map((x) => Number.parseInt(x, 16));
      return { start: start!, end: end!, offset: Number.parseInt(offset!, 16), path: path.join(' ') || '[anon]' };
    });
}

/** ELF sections of `file` by file offset: [offset, size, name], the ones with bytes in the file. */
function sections(file: string): [number, number, string][] {
  let text: string;
  try {
    text = execFileSync('readelf', ['-SW', file], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], maxBuffer: 1 << 24 });
  } catch {
    return []; // not an ELF file
  }
  // A name may be empty (postject's note that holds the SEA blob): then the address comes second.
  return text
    .split('\n')
    .filter((l) => /^\s*\[\s*\d+\]/.test(l) && !l.includes('[Nr]'))
    .map((l) => {
      const t = l
        .slice(l.indexOf(']') + 1)
        .trim()
        .split(/\s+/);
      const [name, type, , off, size] = /^[0-9a-f]{16}$/.test(t[1] ?? '') ? ['', ...t] : t;
      return { name: name!, type: type!, off: Number.parseInt(off!, 16), size: Number.parseInt(size!, 16) };
    })
    .filter((x) => x.type !== 'NOBITS' && x.type !== 'NULL' && x.size > 0)
    .map((x) => [x.off, x.size, x.name || `(an unnamed ${x.type} section)`] as [number, number, string]);
}

/** The pages of `pid` resident in each file (by ELF section where it has them) and in its anonymous mappings. */
export function residentPages(pid: number): Map<string, PageCount> {
  const pagemap = openSync(`/proc/${pid}/pagemap`, 'r');
  const flags = openSync('/proc/kpageflags', 'r');
  const entry = Buffer.alloc(8);
  const out = new Map<string, PageCount>();
  const sectionsOf = new Map<string, [number, number, string][]>();
  try {
    // [vsyscall] is above what pagemap covers.
    for (const m of mappings(pid).filter((x) => x.path !== '[vsyscall]')) {
      const file = m.path.startsWith('/') && !m.path.endsWith('(deleted)');
      if (file && !sectionsOf.has(m.path)) sectionsOf.set(m.path, sections(`/proc/${pid}/root${m.path}`));
      const count = (m.end - m.start) / PAGE;
      const entries = Buffer.alloc(count * 8);
      readSync(pagemap, entries, 0, entries.length, (m.start / PAGE) * 8);
      for (let i = 0; i < count; i++) {
        const e = entries.readBigUInt64LE(i * 8);
        if (!(e >> 63n)) continue; // not present
        const pfn = e & ((1n << 55n) - 1n);
        readSync(flags, entry, 0, 8, Number(pfn) * 8);
        const f = entry.readBigUInt64LE(0);
        let key = m.path;
        if (file) {
          const at = m.offset + i * PAGE;
          const s = sectionsOf.get(m.path)!.find(([o, size]) => at + PAGE > o && at < o + size);
          key = `${m.path} ${s ? s[2] : '(between sections)'}`;
        }
        const c = out.get(key) ?? { resident: 0, active: 0, referenced: 0 };
        c.resident += PAGE;
        if ((f >> KPF_ACTIVE) & 1n) c.active += PAGE;
        if ((f >> KPF_REFERENCED) & 1n) c.referenced += PAGE;
        out.set(key, c);
      }
    }
  } finally {
    closeSync(pagemap);
    closeSync(flags);
  }
  return out;
}

export function printPages(pages: Map<string, PageCount>, all = false): string {
  const rows = [...pages.entries()].sort((a, b) => b[1].resident - a[1].resident);
  const total = rows.reduce((t, [, c]) => ({ resident: t.resident + c.resident, active: t.active + c.active }), { resident: 0, active: 0 });
  const shown = all ? rows : rows.filter(([, c]) => c.resident >= 256 * 1024);
  const mib = (b: number) => (b / MiB).toFixed(2).padStart(7);
  return [
    `${'resident'.padStart(8)} ${'active'.padStart(7)} ${'ref'.padStart(7)}  MiB, mapping (and ELF section)`,
    ...shown.map(([k, c]) => `${mib(c.resident)} ${mib(c.active)} ${mib(c.referenced)}  ${k}`),
    `${mib(total.resident)} ${mib(total.active)}          in all${shown.length < rows.length ? ` (${rows.length - shown.length} smaller ones not shown)` : ''}`,
  ].join('\n');
}

if (import.meta.main) {
  const { values, positionals } = parseArgs({ options: { all: { type: 'boolean', default: false } }, allowPositionals: true });
  const pid = Number(positionals[0]);
  if (!Number.isSafeInteger(pid) || pid <= 0) {
    process.stderr.write('usage: node test/tooling/bench/pages.ts PID [--all]   (as root)\n');
    process.exit(2);
  }
  process.stdout.write(`${printPages(residentPages(pid), values.all)}\n`);
}
