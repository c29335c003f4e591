// Run by the target runtime (under qemu-user for another architecture):
// compiles the lazy asset as the executable will (lazy.ts) and writes V8's
// code cache for it. V8 accepts a cache only from the same build and flags.
//   node code-cache.ts ASSET OUTPUT

import { readFileSync, writeFileSync } from 'node:fs';
import { Script } from 'node:vm';

const [asset, output] = process.argv.slice(2);
const script = new Script(readFileSync(asset!, 'utf8'), { filename: 'drainguard-lazy.cjs' });
writeFileSync(output!, script.createCachedData());
