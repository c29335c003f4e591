// Two builds of one commit are the same bytes: the start measured is then a
// property of the commit, not of the build (docs/development.md, "Releases").
// `npm run bench` has just built dist/; this builds again, for this machine,
// into a directory of its own (sidecar/build.ts --out-dir) and compares every
// file the second build wrote with its namesake in dist/.

import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { NODE, ROOT } from './lib/paths.ts';

export interface FileDifference {
  /** Relative to the build's directory: drainguard, drainguard.cjs, ... */
  readonly file: string;
  /** In dist/ and in the second build; null where the file is missing. */
  readonly sizes: readonly [number | null, number | null];
  /** Bytes that differ at the same offset, plus the difference in length. */
  readonly bytes: number;
  /** The first and the last offset that differs (past the shorter file's end, every byte of the longer one does). */
  readonly offsets: readonly [number, number];
}

export interface ReproducibleResult {
  readonly files: number;
  readonly differences: readonly FileDifference[];
  /** `drainguard --version` of both, when they differ: dist/ was built from another checkout. */
  readonly versions?: readonly [string, string];
  readonly buildMs: number;
}

export async function runReproducible(progress: (line: string) => void): Promise<ReproducibleResult> {
  const out = mkdtempSync(join(tmpdir(), 'drainguard-rebuild-'));
  try {
    progress(`building again into ${out}`);
    const started = Date.now();
    execFileSync(NODE, [join(ROOT, 'sidecar/build.ts'), '--out-dir', out], { stdio: ['ignore', 'ignore', 'inherit'] });
    const buildMs = Date.now() - started;
    const files = filesUnder(out);
    const differences = files.flatMap((file) => {
      const d = compare(file, join(ROOT, 'dist', file), join(out, file));
      return d ? [d] : [];
    });
    const versions = [versionOf(join(ROOT, 'dist/drainguard')), versionOf(join(out, 'drainguard'))] as const;
    return { files: files.length, differences, buildMs, ...(versions[0] !== versions[1] && { versions }) };
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}

/** One line per file that differs, for the failure. */
export function describe(d: FileDifference): string {
  const size = (n: number | null) => (n === null ? 'missing' : `${n} bytes`);
  const hex = (n: number) => `0x${n.toString(16)}`;
  return `dist/${d.file}: ${size(d.sizes[0])} against ${size(d.sizes[1])}; ${d.bytes} bytes differ, from offset ${hex(d.offsets[0])} to ${hex(d.offsets[1])}`;
}

function versionOf(exe: string): string {
  try {
    return execFileSync(exe, ['--version'], { encoding: 'utf8' }).trim();
  } catch {
    return 'no version';
  }
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => relative(dir, join(e.parentPath, e.name)))
    .sort();
}

function read(path: string): Buffer | null {
  try {
    return readFileSync(path);
  } catch {
    return null;
  }
}

function compare(file: string, inDist: string, again: string): FileDifference | undefined {
  const a = read(inDist);
  const b = read(again);
  if (a && b && a.equals(b)) return undefined;
  const x = a ?? Buffer.alloc(0);
  const y = b ?? Buffer.alloc(0);
  const common = Math.min(x.length, y.length);
  const longer = Math.max(x.length, y.length);
  let bytes = 0;
  let first = -1;
  let last = -1;
  for (let i = 0; i < common; i++) {
    if (x[i] === y[i]) continue;
    bytes++;
    if (first === -1) first = i;
    last = i;
  }
  if (longer > common) {
    bytes += longer - common;
    if (first === -1) first = common;
    last = longer - 1;
  }
  return { file, sizes: [a?.length ?? null, b?.length ?? null], bytes, offsets: [first, last] };
}
