// Every generated file in the repository is what scripts/generate.ts makes
// now: the launcher's bytes from launcher.S, the table of variables from the
// options, the rendered examples from the kustomizations.

import { readFileSync } from 'node:fs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ROOT, generateAll } from '../../scripts/generate.ts';

const generated = generateAll();

test('the generator makes the launcher, the table of variables and each rendered example', () => {
  assert.equal(generated.map((g) => g.path).sort(), [
    'deploy/rendered/native-sidecar.yaml',
    'deploy/rendered/sidecar.yaml',
    'deploy/rendered/wrap.yaml',
    'docs/variables.md',
    'src/install/launcher-image.ts',
  ]);
});

for (const { path, content } of generated) {
  test(`${path} is up to date (npm run generate)`, () => {
    // A diff of lines, so a failure shows what changed.
    assert.fixture(readFileSync(`${ROOT}/${path}`, 'utf8'), content);
  });
}

test('the table lists every option of the options table by its variable', async () => {
  const { OPTIONS, envName } = await import('../../src/config/options.ts');
  const doc = generated.find((g) => g.path === 'docs/variables.md')!.content;
  for (const spec of OPTIONS) assert.ok(doc.includes(spec.flagOnly ? `--${spec.flag}` : `\`${envName(spec)}\``), spec.flag);
});

test.run();
