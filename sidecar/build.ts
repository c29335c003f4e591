// Builds dist/drainguard: the bundle, run by the Node.js runtime it is injected into
// (Node's single executable applications), so it needs no Node.js and no node_modules.

import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(root, 'dist');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string };
const bundle = join(dist, `drainguard-${process.pid}.cjs`);
const blob = join(dist, `drainguard-${process.pid}.blob`);
const output = join(dist, 'drainguard');
// Written beside the output and renamed into place, so a running test never sees half an executable.
const staging = join(dist, `.drainguard-${process.pid}`);

mkdirSync(dist, { recursive: true });
await build({
  entryPoints: [join(root, 'sidecar/main.ts')],
  outfile: bundle,
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: `node${process.versions.node.split('.')[0]}`,
  minify: true,
  keepNames: true,
  legalComments: 'none',
  define: { __DRAINGUARD_VERSION__: JSON.stringify(pkg.version) },
  // Optional native speed-ups of `ws`; it falls back to JavaScript when they are missing.
  external: ['bufferutil', 'utf-8-validate'],
  logLevel: 'warning',
});

const seaConfig = join(dist, `sea-config-${process.pid}.json`);
writeFileSync(
  seaConfig,
  JSON.stringify({ main: bundle, output: blob, disableExperimentalSEAWarning: true, useCodeCache: true, useSnapshot: false }),
);
// The blob must be made by the very runtime it is injected into.
execFileSync(process.execPath, ['--experimental-sea-config', seaConfig], { stdio: 'ignore' });
copyFileSync(process.execPath, staging);
// postject's CLI, so its harmless notes about ELF sections stay out of the build log unless it fails.
const postject = join(dirname(createRequire(import.meta.url).resolve('postject/package.json')), 'dist/cli.js');
try {
  execFileSync(process.execPath, [postject, staging, 'NODE_SEA_BLOB', blob, '--sentinel-fuse', 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2'], {
    stdio: 'pipe',
  });
} catch (err) {
  process.stderr.write(`${(err as { stderr?: Buffer }).stderr ?? ''}`);
  throw err;
}
chmodSync(staging, 0o755);
renameSync(staging, output);
rmSync(seaConfig);
rmSync(blob);
renameSync(bundle, join(dist, 'drainguard.cjs'));

// The TypeScript client as a library, for operators that depend on this package.
await build({
  entryPoints: [join(root, 'src/protocol/client.ts')],
  outfile: join(dist, 'client.js'),
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  logLevel: 'warning',
});
execFileSync(process.execPath, [createRequire(import.meta.url).resolve('typescript/bin/tsc'), '-p', join(root, 'tsconfig.client.json')], { stdio: 'inherit' });
process.stdout.write(`built ${output} and ${join(dist, 'client.js')}\n`);
