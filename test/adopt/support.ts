// The built executable's `drainguard adopt`, run on a copy of a chart the
// project writes (test/helm/fixtures/charts, test/fixtures/helm-create), with
// the real helm (test/support/helm.ts) and the library chart of this tree.

import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import { basename, join, relative, resolve } from 'node:path';
import { EXE } from '../support/proc.ts';
import { helmPath } from '../support/helm.ts';
import { LIBRARY } from '../helm/support/charts.ts';

const copies: string[] = [];

/** A copy of the chart at SOURCE in a temp directory, as a user's chart: no library in it. */
export function copyChart(source: string): string {
  const parent = mkdtempSync(join(tmpdir(), 'drainguard-adopt-test-'));
  copies.push(parent);
  const dir = join(parent, basename(source));
  cpSync(resolve(source), dir, { recursive: true });
  return dir;
}

export const cleanupCopies = (): void => {
  for (const dir of copies.splice(0)) rmSync(dir, { recursive: true, force: true });
};

export interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** `drainguard adopt CHART ARGS` with the real helm and this tree's library chart. */
export function adopt(chart: string, args: readonly string[] = []): Run {
  const helm = args.includes('--helm') ? [] : ['--helm', helmPath()];
  const r = spawnSync(EXE, ['adopt', chart, ...helm, '--library', LIBRARY, ...args], {
    encoding: 'utf8',
    timeout: 60_000,
  });
  if (r.error) throw r.error;
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

/** A digest of every file under DIR, names and bytes: equal means byte for byte unchanged. */
export function treeDigest(dir: string): string {
  const hash = createHash('sha256');
  const files = readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => !e.isDirectory())
    .map((e) => join(e.parentPath, e.name))
    .sort();
  for (const file of files) hash.update(`${relative(dir, file)}\0`).update(readFileSync(file));
  return hash.digest('hex');
}

export const COMPONENTS = resolve('deploy/components');

/** `drainguard adopt PATH ARGS` on a manifest or kustomize directory, with this tree's components and the kubectl on PATH. */
export function adoptManifest(path: string, args: readonly string[] = []): Run {
  const r = spawnSync(EXE, ['adopt', path, '--components', COMPONENTS, ...args], { encoding: 'utf8', timeout: 60_000 });
  if (r.error) throw r.error;
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

/** A temp directory for one test, removed with the copies. */
export function scratch(): string {
  const dir = mkdtempSync(join(tmpdir(), 'drainguard-adopt-test-'));
  copies.push(dir);
  return dir;
}
