// Where the control plane's binaries come from: $KUBEBUILDER_ASSETS (envtest's
// convention: a directory with kube-apiserver, kube-controller-manager and
// optionally etcd), else unpacked once from ../shared/kube/*.xz into the
// git-ignored .cache/kube/, checked against SHA256SUMS. etcd: the assets
// directory, else PATH.

import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { accessSync, chmodSync, constants, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { delimiter, join, resolve } from 'node:path';

export const KUBE_VERSION = 'v1.32.6';
const REPO = resolve(import.meta.dirname, '../../..');
const SHARED = resolve(REPO, '../shared/kube');
const CACHE = join(REPO, '.cache/kube', KUBE_VERSION);

export interface Binaries {
  readonly etcd: string;
  readonly apiserver: string;
  readonly controllerManager: string;
}

const sha256 = (data: Buffer): string => createHash('sha256').update(data).digest('hex');

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function onPath(name: string): string | undefined {
  return (process.env.PATH ?? '').split(delimiter).map((d) => join(d, name)).find(executable);
}

/** The sums SHA256SUMS gives, by file name. */
function sums(): Map<string, string> {
  const text = readFileSync(join(SHARED, 'SHA256SUMS'), 'utf8');
  return new Map(text.trim().split('\n').map((l) => l.split(/\s+/)).map(([sum, name]) => [name!, sum!]));
}

/** Unpacks one binary into the cache unless a verified copy is there; a copy that fails the check is replaced. */
function unpacked(name: string, expected: Map<string, string>): string {
  const target = join(CACHE, name);
  const want = expected.get(name);
  if (!want) throw new Error(`${join(SHARED, 'SHA256SUMS')} has no sum for ${name}`);
  if (existsSync(target) && sha256(readFileSync(target)) === want) return target;
  const xz = join(SHARED, `${name}.xz`);
  if (!existsSync(xz)) throw new Error(`no ${name}: set KUBEBUILDER_ASSETS to a directory holding it, or provide ${xz} (see test/support/cluster/README.md)`);
  const packed = readFileSync(xz);
  if (sha256(packed) !== expected.get(`${name}.xz`)) throw new Error(`${xz} does not match SHA256SUMS`);
  const data = execFileSync('xz', ['-dc', xz], { maxBuffer: 512 * 1024 * 1024 });
  if (sha256(data) !== want) throw new Error(`${name} unpacked from ${xz} does not match SHA256SUMS`);
  mkdirSync(CACHE, { recursive: true });
  // Written aside and renamed: two runs unpacking at once never see half a file.
  const partial = `${target}.${process.pid}.partial`;
  writeFileSync(partial, data);
  chmodSync(partial, 0o755);
  renameSync(partial, target);
  return target;
}

export function findBinaries(env: NodeJS.ProcessEnv = process.env): Binaries {
  const assets = env.KUBEBUILDER_ASSETS;
  const etcd = (assets && [join(assets, 'etcd')].find(executable)) || onPath('etcd');
  if (!etcd) throw new Error('no etcd: install it (Debian: apt-get install etcd-server) or put it in $KUBEBUILDER_ASSETS');
  if (assets) {
    const [apiserver, controllerManager] = ['kube-apiserver', 'kube-controller-manager'].map((n) => join(assets, n));
    for (const b of [apiserver!, controllerManager!]) if (!executable(b)) throw new Error(`KUBEBUILDER_ASSETS=${assets} has no executable ${b}`);
    return { etcd, apiserver: apiserver!, controllerManager: controllerManager! };
  }
  const expected = sums();
  return { etcd, apiserver: unpacked('kube-apiserver', expected), controllerManager: unpacked('kube-controller-manager', expected) };
}

// `node test/support/cluster/binaries.ts`: unpack into the cache now (.ci/run does, once).
if (import.meta.main) {
  const found = findBinaries();
  for (const [what, path] of Object.entries(found)) process.stdout.write(`${what}: ${path}\n`);
}
