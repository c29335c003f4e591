// Sets drainguard's version everywhere it is named (scripts/release/versions.ts):
//   node scripts/set-version.ts 0.2.0
// then regenerate what is generated from the manifests (npm run generate) and
// say what changed under "## [0.2.0]" in CHANGELOG.md.

import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setVersion } from './release/versions.ts';

const version = process.argv[2];
if (version === undefined) {
  process.stderr.write('usage: node scripts/set-version.ts VERSION\n');
  process.exitCode = 2;
} else {
  const changed = setVersion(resolve(fileURLToPath(import.meta.url), '../..'), version.replace(/^v/, ''));
  process.stdout.write(`${changed.length} files now name ${version}:\n${changed.map((f) => `  ${f}\n`).join('')}`);
}
