// Run by the target runtime (under qemu-user for another architecture), with
// the executable's V8 flags: V8 accepts a code cache only from the same build
// and flags. Writes V8's code cache for one of the executable's scripts.
//   node code-cache.ts lazy ASSET OUTPUT   compiled only, as lazy.ts compiles it
//   node code-cache.ts main ASSET OUTPUT ARGS...
//                                          compiled and run with ARGS (for drainguard:
//                                          run -- /bin/true), the cache taken at its exit (boot.ts)
// A cache made before a script runs holds only the functions V8 compiles
// eagerly (Node.js makes a single executable's cache that way); the rest are
// compiled at their first call. Taken after a run, it holds every function that
// run called: the way from the start to the operator's start and exit costs no
// compilation.

import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Script } from 'node:vm';
import { MAIN_FILE } from './boot.ts';

const [kind, asset, output, ...args] = process.argv.slice(2);
if (kind === 'lazy') {
  const script = new Script(readFileSync(asset!, 'utf8'), { filename: 'drainguard-lazy.cjs' });
  writeFileSync(output!, script.createCachedData());
} else if (kind === 'main') {
  const script = new Script(readFileSync(asset!, 'utf8'), { filename: MAIN_FILE });
  // The script ends the process itself (process.exit with the operator's status).
  process.on('exit', () => writeFileSync(output!, script.createCachedData()));
  process.argv = [process.argv[0]!, MAIN_FILE, ...args];
  const module = { exports: {} };
  (script.runInThisContext() as (e: object, r: NodeJS.Require, m: object) => void)(module.exports, createRequire(import.meta.url), module);
} else {
  throw new Error(`code-cache.ts: expected lazy or main, got ${JSON.stringify(kind)}`);
}
