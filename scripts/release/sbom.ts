// The SBOM of an executable, CycloneDX 1.5 JSON: what it embeds, that is the
// Node.js runtime (the npm package node-linux-ARCH it is made of, see
// sidecar/build/runtime.ts) and every npm package esbuild bundled into it
// (its metafile says which files it read; sidecar/build.ts bundles the same
// entry with the same externals), with versions and licenses from their
// package.json and hashes from package-lock.json. Deterministic: the time is
// the commit's (SOURCE_DATE_EPOCH), the serial number a hash of the content.

import { createHash } from 'node:crypto';
import { readFileSync, realpathSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { build } from 'esbuild';
import { PINNED } from '../../sidecar/build/runtime.ts';
import type { Arch } from '../../sidecar/build/targets.ts';

export interface BundledPackage {
  readonly name: string;
  readonly version: string;
  readonly license?: string;
  /** package-lock's integrity (sha512-BASE64), when it has one. */
  readonly integrity?: string;
}

/** The npm packages bundled into the executable: esbuild's metafile of sidecar/main.ts, its inputs under node_modules. */
export async function bundledPackages(root: string): Promise<BundledPackage[]> {
  const { metafile } = await build({
    entryPoints: [join(root, 'sidecar/main.ts')],
    bundle: true,
    platform: 'node',
    format: 'cjs',
    write: false,
    metafile: true,
    outfile: join(root, 'dist/.sbom.cjs'),
    absWorkingDir: root,
    // As sidecar/build.ts: ws's optional native speed-ups are not bundled.
    external: ['bufferutil', 'utf-8-validate'],
    logLevel: 'silent',
  });
  const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as { packages: Record<string, { integrity?: string }> };
  const found = new Map<string, BundledPackage>();
  for (const input of Object.keys(metafile.inputs)) {
    const at = input.lastIndexOf('node_modules/');
    if (at < 0) continue;
    const name = /^((?:@[^/]+\/)?[^/]+)\//.exec(input.slice(at + 'node_modules/'.length))?.[1];
    if (name === undefined) continue;
    const dir = resolve(root, input.slice(0, at), 'node_modules', name);
    const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { version: string; license?: string };
    // Its path in package-lock: from the root's node_modules (nested ones keep their parents).
    const lockPath = relativeLockPath(root, dir);
    const key = `${name}@${pkg.version}`;
    if (!found.has(key))
      found.set(key, { name, version: pkg.version, license: pkg.license, integrity: lock.packages[lockPath]?.integrity });
  }
  return [...found.values()].sort((a, b) => (a.name === b.name ? a.version.localeCompare(b.version) : a.name < b.name ? -1 : 1));
}

function relativeLockPath(root: string, dir: string): string {
  const modules = realpathSync(join(root, 'node_modules'));
  const real = realpathSync(dir);
  return real.startsWith(`${modules}/`) ? `node_modules/${real.slice(modules.length + 1)}` : real;
}

const purl = (name: string, version: string) => `pkg:npm/${name.startsWith('@') ? `%40${name.slice(1)}` : name}@${version}`;

function sha512Hex(integrity: string | undefined): { alg: string; content: string }[] {
  if (!integrity?.startsWith('sha512-')) return [];
  return [{ alg: 'SHA-512', content: Buffer.from(integrity.slice('sha512-'.length), 'base64').toString('hex') }];
}

export interface SbomInput {
  readonly root: string;
  readonly version: string;
  readonly commit: string;
  readonly arch: Arch;
  /** The executable's file name and its SHA-256. */
  readonly file: string;
  readonly sha256: string;
  readonly time: Date;
  readonly packages: readonly BundledPackage[];
}

/** The CycloneDX document for one executable. */
export function sbom({ root, version, commit, arch, file, sha256, time, packages }: SbomInput): object {
  const nodeVersion = process.versions.node;
  const runtime = `node-linux-${arch}`;
  const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as { packages: Record<string, { integrity?: string }> };
  const runtimeIntegrity = lock.packages[`node_modules/${runtime}`]?.integrity ?? PINNED[`${runtime}@${nodeVersion}`];
  const components = [
    {
      type: 'platform',
      'bom-ref': purl(runtime, nodeVersion),
      name: runtime,
      version: nodeVersion,
      description: `Node.js ${nodeVersion} for linux/${arch}, stripped; drainguard runs as its single executable application`,
      licenses: [{ license: { id: 'MIT' } }],
      purl: purl(runtime, nodeVersion),
      hashes: sha512Hex(runtimeIntegrity),
      externalReferences: [{ type: 'distribution', url: `https://nodejs.org/dist/v${nodeVersion}/` }],
    },
    ...packages.map((p) => ({
      type: 'library',
      'bom-ref': purl(p.name, p.version),
      name: p.name,
      version: p.version,
      ...(p.license ? { licenses: [{ license: /^[A-Za-z0-9.+-]+$/.test(p.license) ? { id: p.license } : { name: p.license } }] } : {}),
      purl: purl(p.name, p.version),
      hashes: sha512Hex(p.integrity),
    })),
  ];
  const main = {
    type: 'application',
    'bom-ref': 'drainguard',
    name: 'drainguard',
    version,
    description: `${file}: drainguard ${version}, commit ${commit}, linux/${arch}`,
    licenses: [{ license: { id: 'Apache-2.0' } }],
    purl: `pkg:github/drainguard/drainguard@v${version}`,
    hashes: [{ alg: 'SHA-256', content: sha256 }],
    externalReferences: [{ type: 'vcs', url: 'https://github.com/drainguard/drainguard' }],
  };
  const body = {
    metadata: {
      timestamp: time.toISOString().replace(/\.000Z$/, 'Z'),
      tools: { components: [{ type: 'application', name: 'scripts/release.ts', version }] },
      component: main,
    },
    components,
    dependencies: [{ ref: 'drainguard', dependsOn: components.map((c) => c['bom-ref']) }],
  };
  const digest = createHash('sha256').update(JSON.stringify(body)).digest('hex');
  const uuid = `${digest.slice(0, 8)}-${digest.slice(8, 12)}-5${digest.slice(13, 16)}-${((parseInt(digest[16]!, 16) & 3) | 8).toString(16)}${digest.slice(17, 20)}-${digest.slice(20, 32)}`;
  return { bomFormat: 'CycloneDX', specVersion: '1.5', serialNumber: `urn:uuid:${uuid}`, version: 1, ...body };
}
