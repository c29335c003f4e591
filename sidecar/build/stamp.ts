// What the executable says it is: the version from package.json (the one
// source of the version: the executables, the image, the chart and the client
// packages all take it from there) and the commit it was built from, stamped
// at build time. The commit, not the time: the same checkout builds the same
// bundle (and so the same arm64 executable from the build cache).
//
//   COMMIT   the first 12 hex digits of HEAD; "-dirty" after them when tracked
//            or untracked (not ignored) files differ from HEAD; "unknown"
//            outside a git checkout (a source archive).

import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface Stamp {
  readonly version: string;
  readonly commit: string;
}

export const COMMIT_DIGITS = 12;

export function packageVersion(root: string): string {
  return (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version;
}

function git(root: string, args: readonly string[]): string | undefined {
  const r = spawnSync('git', ['-C', root, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  return r.status === 0 ? r.stdout.trim() : undefined;
}

/** HEAD's commit, "-dirty" when the tree differs from it, "unknown" outside git. */
export function commitOf(root: string, digits: number = COMMIT_DIGITS): string {
  const head = git(root, ['rev-parse', '--verify', 'HEAD']);
  if (head === undefined || !/^[0-9a-f]{40}$/.test(head)) return 'unknown';
  const status = git(root, ['status', '--porcelain']);
  return `${head.slice(0, digits)}${status === '' ? '' : '-dirty'}`;
}

/** The commit's time in seconds since the epoch (SOURCE_DATE_EPOCH), when in git. */
export function commitTime(root: string): number | undefined {
  const t = git(root, ['log', '-1', '--format=%ct', 'HEAD']);
  return t === undefined || !/^\d+$/.test(t) ? undefined : Number(t);
}

export function stampOf(root: string): Stamp {
  return { version: packageVersion(root), commit: commitOf(root) };
}

/** esbuild's `define` of the stamp (src/version.ts reads it). */
export function stampDefines({ version, commit }: Stamp): Record<string, string> {
  return { __DRAINGUARD_VERSION__: JSON.stringify(version), __DRAINGUARD_COMMIT__: JSON.stringify(commit) };
}
