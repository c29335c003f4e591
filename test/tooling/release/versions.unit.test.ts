// One version, from package.json: every file that names it agrees
// (scripts/release/versions.ts), and scripts/set-version.ts moves them all,
// touching nothing else.

import { cpSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { candidateFiles, setVersion, versionMentions } from '../../../scripts/release/versions.ts';
import { packageVersion } from '../../../sidecar/build/stamp.ts';
import { tempDir } from '../../support/proc.ts';

const ROOT = resolve('.');
const VERSION = packageVersion(ROOT);

test("every mention of the version is package.json's", () => {
  const mentions = versionMentions(ROOT);
  const wrong = mentions.filter((m) => m.version !== VERSION).map((m) => `${m.file}:${m.line}: ${m.what} ${m.version}`);
  assert.equal(wrong, [], `package.json says ${VERSION}`);
  const kinds = new Set(mentions.map((m) => m.what));
  for (const kind of [
    'image tag',
    'chart version',
    'chart image tag',
    'chart dependency',
    'ctrl requires the client',
    'go get',
    'package-lock',
  ])
    assert.ok(kinds.has(kind), kind);
});

test('the CHANGELOG has a section for the version', () => {
  assert.match(readFileSync('CHANGELOG.md', 'utf8'), new RegExp(`^## \\[${VERSION.replaceAll('.', '\\.')}\\]`, 'm'));
});

test('set-version moves every mention, and back again gives the same bytes', () => {
  const copy = tempDir();
  const files = ['package.json', ...candidateFiles(ROOT)];
  for (const f of files) {
    mkdirSync(dirname(join(copy, f)), { recursive: true });
    cpSync(join(ROOT, f), join(copy, f));
  }
  const before = versionMentions(copy);
  const changed = setVersion(copy, '9.8.7-rc.1');
  assert.ok(
    changed.includes('package.json') && changed.includes('deploy/helm/drainguard/Chart.yaml') && changed.includes('clients/go/ctrl/go.mod'),
    changed.join(' '),
  );
  assert.is(packageVersion(copy), '9.8.7-rc.1');
  const after = versionMentions(copy);
  assert.equal(
    after.map((m) => `${m.file}:${m.line} ${m.what}`),
    before.map((m) => `${m.file}:${m.line} ${m.what}`),
  );
  assert.equal([...new Set(after.map((m) => m.version))], ['9.8.7-rc.1']);
  setVersion(copy, VERSION);
  for (const f of files) assert.ok(readFileSync(join(copy, f)).equals(readFileSync(join(ROOT, f))), `${f} is as it was`);
});

test.run();
