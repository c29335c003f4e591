// The executable's main script is a boot script: it runs the real main script
// (the bundle) from an asset, with a code cache made after a run of it
// (code-cache.ts), instead of the cache Node.js makes for a single
// executable's main script before it ever ran. The main script is wrapped as
// a function of (exports, require, module), as the lazy asset is (lazy.ts).

export const MAIN_ASSET = 'main.cjs';
export const MAIN_CACHE_ASSET = 'main.cache';
/** The main script's name in stack traces. */
export const MAIN_FILE = 'drainguard.cjs';
export const BOOT_FILE = 'drainguard-boot.cjs';

export const wrapMain = (bundle: string): string => `(function (exports, require, module) {${bundle}\n})`;

export const BOOT_SOURCE = `const { getAsset } = require('node:sea');
const { Script } = require('node:vm');
const script = new Script(getAsset(${JSON.stringify(MAIN_ASSET)}, 'utf8'), {
  filename: ${JSON.stringify(MAIN_FILE)},
  cachedData: new Uint8Array(getAsset(${JSON.stringify(MAIN_CACHE_ASSET)})),
});
if (script.cachedDataRejected) process.emitWarning('drainguard: the code cache of the main script was rejected');
const main = { exports: {} };
script.runInThisContext()(main.exports, require, main);
`;
