// Builds the drainguard executable: the bundle, run by the Node.js runtime it
// is injected into (Node's single executable applications), so it needs no
// Node.js and no node_modules.
//
//   npm run build                      dist/drainguard, for this machine
//   npm run build -- --arch arm64      dist/drainguard-linux-arm64 (under qemu-user; cached)
//   npm run build -- --arch all        both
//   npm run build -- --out-dir DIR     into DIR instead of dist/ (the same bytes: npm run bench
//                                      builds a second time to check that)
//
// The code that only some commands need is a SEA asset of its own, compiled
// only when first imported (build/lazy.ts); dist/drainguard.cjs and
// dist/drainguard-lazy.cjs are the same two scripts, for plain node.
//
// The cache of foreign executables and runtimes is $DRAINGUARD_BUILD_CACHE,
// by default ~/.cache/drainguard-build (outside the clone, so a fresh clone
// on the same machine finds it).

import { mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { BuildOptions } from 'esbuild';
import { bundleClient, emitClientTypes } from './build/client.ts';
import { LAZY_FILE, buildSplit } from './build/lazy.ts';
import { runtimeFor } from './build/runtime.ts';
import { stampDefines, stampOf } from './build/stamp.ts';
import { buildExecutable } from './build/sea.ts';
import { type Arch, TARGETS, executableName, isArch } from './build/targets.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const stamp = stampOf(root);
const cacheDir = process.env.DRAINGUARD_BUILD_CACHE ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'drainguard-build');

const { values } = parseArgs({
  options: { arch: { type: 'string', default: process.arch }, 'out-dir': { type: 'string', default: join(root, 'dist') } },
});
const dist = resolve(values['out-dir']);
const archs: Arch[] = values.arch === 'all' ? (Object.keys(TARGETS) as Arch[]) : isArch(values.arch) ? [values.arch] : [];
if (archs.length === 0) throw new Error(`--arch: expected ${Object.keys(TARGETS).join(', ')} or all, got ${JSON.stringify(values.arch)}`);

// A directory per build, so that builds running at once do not meet; the bundle is named as it ends up.
const work = join(dist, `.build-${process.pid}`);
mkdirSync(work, { recursive: true });
const bundle = join(work, 'drainguard.cjs');
const bundleOptions = {
  entryPoints: [join(root, 'sidecar/main.ts')],
  outfile: bundle,
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: `node${process.versions.node.split('.')[0]}`,
  // The main script keeps its identifiers, so stack traces name its functions without
  // esbuild's keepNames, which names every function again at start (a defineProperty each).
  minifyWhitespace: true,
  minifySyntax: true,
  legalComments: 'none',
  // The version and the commit, not the time: the same checkout, the same bundle.
  define: stampDefines(stamp),
  // Optional native speed-ups of `ws`; it falls back to JavaScript when they are missing.
  external: ['bufferutil', 'utf-8-validate'],
  logLevel: 'warning',
} satisfies BuildOptions;
const split = await buildSplit(root, bundleOptions);
const lazy = join(work, LAZY_FILE);
writeFileSync(lazy, split.lazy);
process.stdout.write(`drainguard ${stamp.version} commit ${stamp.commit}\n`);
process.stdout.write(`lazy asset: ${split.lazyEntries.length} entries, ${split.shared.length} modules shared with the main script\n`);

for (const arch of archs) {
  const started = Date.now();
  const target = TARGETS[arch];
  const output = join(dist, executableName(arch));
  // The main script's code cache is taken after the start of `run` in front of an operator that exits at once,
  // at the default log level: its log lines are on the way of every start.
  const training = ['run', '--', '/bin/true'];
  const { cached } = buildExecutable({ target, runtime: runtimeFor(target, cacheDir), bundle, output, cacheDir, lazy, training });
  process.stdout.write(`built ${output} (linux/${arch}${cached ? ', from the build cache' : ''}, ${Date.now() - started} ms)\n`);
}
renameSync(bundle, join(dist, 'drainguard.cjs'));
renameSync(lazy, join(dist, LAZY_FILE));
rmSync(work, { recursive: true, force: true });

// The TypeScript client as a library, for operators that depend on this package.
await bundleClient(root, join(dist, 'client.js'));
emitClientTypes(root, join(dist, 'types'));
process.stdout.write(`built ${join(dist, 'client.js')}\n`);
