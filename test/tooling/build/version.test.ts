// The version stamp (sidecar/build/stamp.ts): the executable says the version
// of package.json and the commit it was built from, never the time of the
// build; "-dirty" for a tree that differs from its commit, "unknown" outside git.

import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { commitOf, commitTime, packageVersion, stampOf } from '../../../sidecar/build/stamp.ts';
import { drainguard, tempDir } from '../../support/proc.ts';

const git = (dir: string, ...args: string[]) =>
  execFileSync('git', ['-C', dir, ...args], {
    encoding: 'utf8',
    env: { ...process.env, GIT_AUTHOR_DATE: '2026-01-02T03:04:05Z', GIT_COMMITTER_DATE: '2026-01-02T03:04:05Z' },
  }).trim();

function repository(): string {
  const dir = tempDir();
  git(dir, 'init', '-q');
  git(dir, 'config', 'user.email', 'test@drainguard.invalid');
  git(dir, 'config', 'user.name', 'test');
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ version: '1.2.3' }));
  git(dir, 'add', '.');
  git(dir, 'commit', '-q', '-m', 'one');
  return dir;
}

test('a clean checkout: 12 hex digits of HEAD, and the commit time for SOURCE_DATE_EPOCH', () => {
  const dir = repository();
  assert.equal(stampOf(dir), { version: '1.2.3', commit: git(dir, 'rev-parse', 'HEAD').slice(0, 12) });
  assert.is(commitTime(dir), Date.parse('2026-01-02T03:04:05Z') / 1000);
});

test('a changed or an untracked file marks the commit dirty; an ignored one does not', () => {
  const dir = repository();
  const head = git(dir, 'rev-parse', 'HEAD').slice(0, 12);
  writeFileSync(join(dir, '.gitignore'), 'dist/\n');
  assert.is(commitOf(dir), `${head}-dirty`, 'untracked');
  git(dir, 'add', '.gitignore');
  git(dir, 'commit', '-q', '-m', 'two');
  const second = git(dir, 'rev-parse', 'HEAD').slice(0, 12);
  execFileSync('mkdir', [join(dir, 'dist')]);
  writeFileSync(join(dir, 'dist/drainguard'), 'built');
  assert.is(commitOf(dir), second, 'ignored');
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ version: '1.2.4' }));
  assert.is(commitOf(dir), `${second}-dirty`, 'changed');
});

test('outside git: unknown', () => {
  const dir = tempDir();
  assert.is(commitOf(dir), 'unknown');
  assert.is(commitTime(dir), undefined);
});

test("the built executable says this checkout's version and commit", async () => {
  const p = drainguard(['--version']);
  assert.is((await p.exit()).code, 0);
  const head = commitOf('.').replace(/-dirty$/, '');
  const version = packageVersion('.');
  assert.match(
    p.stdout[0]!,
    new RegExp(`^drainguard ${version.replaceAll('.', '\\.')} commit ${head}(-dirty)? \\(node v\\d+\\.\\d+\\.\\d+\\)$`),
  );
  assert.is(JSON.parse(readFileSync('package.json', 'utf8')).version, version);
});

test.run();
