// The executable's main script is a boot script: it runs the real main script
// (the bundle) from an asset, with a code cache made after a run of it
// (code-cache.ts), instead of the cache Node.js makes for a single
// executable's main script before it ever ran. The main script is wrapped as
// a function of (exports, require, module), as the lazy asset is (lazy.ts).
// The code cache is read where the executable holds it (getRawAsset), not
// copied first: V8 only reads it.

export const MAIN_ASSET = 'main.cjs';
export const MAIN_CACHE_ASSET = 'main.cache';
/** The main script's name in stack traces. */
export const MAIN_FILE = 'drainguard.cjs';
export const BOOT_FILE = 'drainguard-boot.cjs';

/** An asset's script is a function of (exports, require, module), which the executable passes in. */
export const WRAP = ['(function (exports, require, module) {', '\n})'] as const;
export const wrapMain = (bundle: string): string => WRAP[0] + bundle + WRAP[1];

export const BOOT_SOURCE = `const { getAsset, getRawAsset } = require('node:sea');
const { Script } = require('node:vm');
const script = new Script(getAsset(${JSON.stringify(MAIN_ASSET)}, 'utf8'), {
  filename: ${JSON.stringify(MAIN_FILE)},
  cachedData: new Uint8Array(getRawAsset(${JSON.stringify(MAIN_CACHE_ASSET)})),
});
if (script.cachedDataRejected) process.emitWarning('drainguard: the code cache of the main script was rejected');
const main = { exports: {} };
script.runInThisContext()(main.exports, require, main);
`;
