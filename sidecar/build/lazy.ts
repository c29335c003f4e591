// The code that only some
// commands need (the Kubernetes client, prom-client, everything reached only
// through a dynamic import()) goes into a SEA asset with a V8 code cache of its
// own, compiled only when first imported, instead of into the main script that
// every start compiles.
//
//   - Every dynamic import() in src/ whose target is not also imported
//     statically becomes a lazy entry: the main script gets a stub that loads
//     the asset (once) and returns that entry's exports. Call sites stay plain
//     `await import('../kube/open.ts')`.
//   - Modules the lazy code imports that the main script has too are not
//     copied into the asset: the asset gets the main script's own instances
//     (one ConfigError class, so instanceof holds across both). The loader
//     imports their exports by name and makes the objects the asset reads
//     them from at its first load: a namespace import would have the main
//     script build one object per shared module, a getter per export, at
//     every start.
//   - The asset is the bundle wrapped as a function of (exports, require,
//     module); its code cache is made by the target runtime (code-cache.ts),
//     as Node makes the main script's. Outside the executable (the bundle run
//     by plain node, for profiling) the same text is read from
//     drainguard-lazy.cjs beside the main script, without a code cache.

import { join, relative } from 'node:path';
import { type BuildOptions, type Metafile, type Plugin, build } from 'esbuild';
import { WRAP } from './boot.ts';

export const LAZY_ASSET = 'lazy.cjs';
export const LAZY_CACHE_ASSET = 'lazy.cache';
/** The asset's text as a file beside the main script: dist/drainguard-lazy.cjs. */
export const LAZY_FILE = 'drainguard-lazy.cjs';
const SHARED = 'shared:';

export interface SplitBundle {
  readonly main: string;
  /** The asset's text: the lazy bundle, wrapped. */
  readonly lazy: string;
  readonly lazyEntries: readonly string[];
  readonly shared: readonly string[];
}

/** Builds the main script (to OUTFILE) and returns it with the lazy asset's text. */
export async function buildSplit(root: string, options: BuildOptions & { outfile: string }): Promise<SplitBundle> {
  const key = (path: string) => relative(root, path);
  const lazyEntries = new Map<string, string>(); // key -> absolute path
  const skip = { drainguardSkip: true };

  const stubs = (staticGraph?: ReadonlySet<string>, shared: SharedExports = {}): Plugin => ({
    name: 'drainguard-lazy-stubs',
    setup(b) {
      b.onResolve({ filter: /.*/ }, async (args) => {
        if (args.kind !== 'dynamic-import' || args.pluginData === skip) return undefined;
        const resolved = await b.resolve(args.path, {
          kind: args.kind,
          resolveDir: args.resolveDir,
          importer: args.importer,
          pluginData: skip,
        });
        if (resolved.errors.length > 0 || resolved.external || !resolved.path.startsWith(root)) return undefined;
        if (staticGraph?.has(key(resolved.path))) return { path: resolved.path };
        lazyEntries.set(key(resolved.path), resolved.path);
        return { path: key(resolved.path), namespace: 'drainguard-lazy-stub' };
      });
      b.onResolve({ filter: /^drainguard:lazy-loader$/ }, () => ({ path: 'loader', namespace: 'drainguard-lazy-loader' }));
      b.onLoad({ filter: /.*/, namespace: 'drainguard-lazy-stub' }, (args) => ({
        contents: `module.exports = require('drainguard:lazy-loader').default(${JSON.stringify(args.path)});`,
        resolveDir: root,
        loader: 'js',
      }));
      b.onLoad({ filter: /.*/, namespace: 'drainguard-lazy-loader' }, () => ({
        contents: loaderSource(root, shared),
        resolveDir: root,
        loader: 'js',
      }));
    },
  });

  // 1. The main graph, every lazy target stubbed out: what the main script holds.
  const first = await build({ ...options, metafile: true, write: false, plugins: [stubs()] });
  const staticGraph = new Set(Object.keys(first.metafile.inputs).filter((k) => !k.includes(':')));
  for (const k of lazyEntries.keys()) if (staticGraph.has(k)) lazyEntries.delete(k);

  // 2. The lazy bundle: every lazy entry, with what the main graph holds left to the main script.
  const lazy = await build({
    ...options,
    outfile: undefined,
    write: false,
    metafile: true,
    // The asset is large and loaded once: minified, with keepNames for readable stack traces.
    minify: true,
    keepNames: true,
    entryPoints: undefined,
    stdin: {
      // Sorted: the entries are found in the order esbuild's parallel parse meets them, which varies (and so would the asset).
      contents: `module.exports = {\n${[...lazyEntries]
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([k, path]) => `  ${JSON.stringify(k)}: () => require(${JSON.stringify(path)}),`)
        .join('\n')}\n};`,
      resolveDir: root,
      loader: 'js',
      sourcefile: 'drainguard-lazy-entries.js',
    },
    plugins: [
      {
        name: 'drainguard-shared',
        setup(b) {
          b.onResolve({ filter: /.*/ }, async (args) => {
            if (args.kind === 'entry-point' || args.pluginData === skip) return undefined;
            const resolved = await b.resolve(args.path, {
              kind: args.kind,
              resolveDir: args.resolveDir,
              importer: args.importer,
              pluginData: skip,
            });
            if (resolved.errors.length > 0 || resolved.external) return undefined;
            return staticGraph.has(key(resolved.path)) ? { path: SHARED + key(resolved.path), external: true } : undefined;
          });
        },
      },
    ],
  });
  const shared = sharedImports(lazy.metafile);

  // 3. The main script again, now holding the registry of what it shares.
  await build({ ...options, plugins: [stubs(staticGraph, await exportsOf(root, shared))] });
  return { main: options.outfile, lazy: WRAP[0] + lazy.outputFiles[0]!.text + WRAP[1], lazyEntries: [...lazyEntries.keys()], shared };
}

/** The names each shared module exports (values only: types are gone by then), by module. */
type SharedExports = Readonly<Record<string, readonly string[]>>;

async function exportsOf(root: string, shared: readonly string[]): Promise<SharedExports> {
  if (shared.length === 0) return {};
  const { metafile } = await build({
    entryPoints: shared.map((k) => join(root, k)),
    bundle: false,
    format: 'esm',
    platform: 'node',
    write: false,
    metafile: true,
    outdir: join(root, '.exports'), // never written: write is false
    logLevel: 'warning',
  });
  const byEntry = Object.fromEntries(Object.values(metafile.outputs).map((o) => [o.entryPoint, o.exports]));
  return Object.fromEntries(shared.map((k) => [k, [...byEntry[k]!].sort()]));
}

function sharedImports(metafile: Metafile): string[] {
  const all = Object.values(metafile.outputs).flatMap((o) =>
    o.imports.filter((i) => i.external && i.path.startsWith(SHARED)).map((i) => i.path.slice(SHARED.length)),
  );
  return [...new Set(all)].sort();
}

/** The main script's loader of the asset: compiled once, with its code cache, on the first lazy import. */
function loaderSource(root: string, shared: SharedExports): string {
  const modules = Object.entries(shared);
  const imports = modules.map(
    ([k, names], i) => `import { ${names.map((n, j) => `${n} as s${i}_${j}`).join(', ')} } from ${JSON.stringify(`${root}/${k}`)};`,
  );
  // Getters, as a namespace has them: the asset sees the main script's bindings, not copies.
  const objects = modules.map(
    ([k, names], i) => `${JSON.stringify(k)}: { ${names.map((n, j) => `get ${n}() { return s${i}_${j}; }`).join(', ')} }`,
  );
  // The asset's require: a shared module from those getters, anything else from Node.js.
  const requireShared = `(id) => (id.startsWith(${JSON.stringify(SHARED)}) ? shared[id.slice(${SHARED.length})] : require(id))`;
  return `${imports.join('\n')}
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { getAsset, getRawAsset, isSea } from 'node:sea';
import { Script } from 'node:vm';
let entries;
export default function load(key) {
  if (entries === undefined) {
    const shared = { ${objects.join(', ')} };
    const script = isSea()
      ? new Script(getAsset(${JSON.stringify(LAZY_ASSET)}, 'utf8'), {
          filename: ${JSON.stringify(LAZY_FILE)},
          cachedData: new Uint8Array(getRawAsset(${JSON.stringify(LAZY_CACHE_ASSET)})),
        })
      : new Script(readFileSync(join(__dirname, ${JSON.stringify(LAZY_FILE)}), 'utf8'), { filename: ${JSON.stringify(LAZY_FILE)} });
    if (script.cachedDataRejected) process.emitWarning('drainguard: the code cache of the lazily loaded code was rejected');
    const module = { exports: {} };
    script.runInThisContext()(module.exports, ${requireShared}, module);
    entries = module.exports;
  }
  return entries[key]();
}
`;
}
