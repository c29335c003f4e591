// A root directory for chroot(2) that holds nothing but what `drainguard
// install` wrote, a statically linked busybox standing in for the operator,
// and the empty directories a pod would mount there. Tests run programs in
// it with `chroot`, which execs them in place: the process the test starts
// is the process that ends up running drainguard.

import { copyFileSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import * as assert from 'uvu/assert';
import { Proc, drainguard, tempDir } from '../../support/proc.ts';

/** Debian's busybox-static: no dynamic loader, no libc, works in any root. */
export const BUSYBOX = '/bin/busybox';

/** Where the volumes are mounted in the example manifests (deploy/). */
export const INSTALL_DIR = '/drainguard';
export const SOCKET_DIR = '/run/drainguard';

export interface InstallOutput {
  readonly dir: string;
  readonly files: readonly string[];
  readonly bytes: number;
}

/** Runs the built executable's `install DIR` and returns what it reported. */
export async function runInstall(dir: string): Promise<InstallOutput> {
  const p = drainguard(['install', dir]);
  const exit = await p.exit(60_000);
  assert.equal(exit.code, 0, `install failed:\n${p.stderr.join('\n')}`);
  const line = p.logs().find((l) => l.msg === 'installed');
  assert.ok(line, `no 'installed' log line:\n${p.stderr.join('\n')}`);
  return { dir, files: line.files as string[], bytes: line.bytes as number };
}

export interface Root {
  readonly path: string;
  readonly installed: InstallOutput;
  /** Runs ARGV inside the root (no /proc there, as in a bare chroot). */
  run(argv: readonly string[], env?: NodeJS.ProcessEnv): Proc;
  /** Runs ARGV inside the root with /proc mounted, as in a container, in a mount namespace of its own. */
  runWithProc(argv: readonly string[], env?: NodeJS.ProcessEnv): Proc;
  /** The path of something inside the root, as seen from the test. */
  host(path: string): string;
}

export async function makeRoot(): Promise<Root> {
  const path = tempDir();
  const installed = await runInstall(join(path, INSTALL_DIR));
  mkdirSync(join(path, 'bin'));
  copyFileSync(BUSYBOX, join(path, 'bin/busybox'));
  for (const dir of [SOCKET_DIR, '/proc']) mkdirSync(join(path, dir), { recursive: true });
  return {
    path,
    installed,
    run: (argv, env = {}) => new Proc('chroot', [path, ...argv], env),
    // unshare execs chroot, which execs busybox, which execs ARGV: one process all along.
    runWithProc: (argv, env = {}) =>
      new Proc(
        'unshare',
        [
          '--mount',
          '--propagation',
          'private',
          'chroot',
          path,
          '/bin/busybox',
          'sh',
          '-c',
          '/bin/busybox mount -t proc proc /proc && exec "$@"',
          'sh',
          ...argv,
        ],
        env,
      ),
    host: (p) => join(path, p),
  };
}

/** Every file and directory under `root`, relative, directories with a trailing slash. */
export function listTree(root: string): string[] {
  const walk = (dir: string): string[] =>
    readdirSync(dir).flatMap((name) => {
      const full = join(dir, name);
      const rel = relative(root, full);
      return statSync(full).isDirectory() ? [`${rel}/`, ...walk(full)] : [rel];
    });
  return walk(root).sort();
}

/** Resolves once the client has been told to drain; every wait has a deadline. */
export function toldToDrain(client: { readonly draining: AbortSignal }, ms = 10_000): Promise<void> {
  if (client.draining.aborted) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for the drain message`)), ms);
    client.draining.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}
