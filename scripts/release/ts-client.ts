// The npm package @drainguard/client: clients/ts/package.json (stamped with
// the version of the root package.json) and README.md, index.js bundled by
// esbuild from src/protocol/client.ts (the source is not copied: one client),
// and index.d.ts emitted by tsc from the same file. No dependencies: it needs
// only Node.js. `npm pack` makes the tarball.

import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { bundleClient, emitClientTypes } from '../../sidecar/build/client.ts';

/** Fills DIR (made, empty) with the package's files; resolves with its package.json. */
export async function stageClientPackage(root: string, dir: string, version: string): Promise<Record<string, unknown>> {
  mkdirSync(dir, { recursive: true });
  const manifest = { ...(JSON.parse(readFileSync(join(root, 'clients/ts/package.json'), 'utf8')) as Record<string, unknown>) };
  const pkg = { name: manifest.name, version, ...manifest };
  for (const field of ['dependencies', 'peerDependencies', 'optionalDependencies']) {
    if (field in pkg) throw new Error(`clients/ts/package.json: ${field}: the client must need nothing but Node.js`);
  }
  writeFileSync(join(dir, 'package.json'), `${JSON.stringify(pkg, null, 2)}\n`);
  copyFileSync(join(root, 'clients/ts/README.md'), join(dir, 'README.md'));
  await bundleClient(
    root,
    join(dir, 'index.js'),
    `// @drainguard/client ${version}: built from src/protocol/client.ts of https://github.com/drainguard/drainguard`,
  );
  const types = mkdtempSync(join(dir, '..', '.client-types-'));
  try {
    emitClientTypes(root, types);
    const dts = readFileSync(join(types, 'protocol/client.d.ts'), 'utf8');
    // One declaration file: the client's own types must not reach into the rest of drainguard.
    if (/^\s*import\b|from\s+['"]\.|import\(['"]\./m.test(dts))
      throw new Error('src/protocol/client.ts: its declarations import other files; index.d.ts would be incomplete');
    // It names NodeJS.ProcessEnv: the consumer's @types/node.
    writeFileSync(join(dir, 'index.d.ts'), `/// <reference types="node" />\n${dts}`);
  } finally {
    rmSync(types, { recursive: true, force: true });
  }
  return pkg;
}

/** `npm pack` of the staged DIR into DEST; returns the tarball's path. */
export function packClientPackage(dir: string, dest: string): string {
  mkdirSync(dest, { recursive: true });
  const [packed] = JSON.parse(
    execFileSync('npm', ['pack', '--json', '--pack-destination', dest], {
      cwd: dir,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
      // npm would leave Node's compile cache in TMPDIR.
      env: { ...process.env, NODE_DISABLE_COMPILE_CACHE: '1' },
    }),
  ) as [{ filename: string }];
  return join(dest, packed.filename);
}
