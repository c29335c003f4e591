// The table of error codes (src/errors.ts): every code src/ uses is in it and in
// docs/errors.md, every entry is used, and the executable shows the code before
// the message with the exit status the table gives.
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ERRORS } from '../src/errors.ts';
import { drainguard, tempDir } from './support/proc.ts';

const SRC = 'src';
const sources = (readdirSync(SRC, { recursive: true, encoding: 'utf8' }) as string[])
  .filter((f) => f.endsWith('.ts') && f !== 'errors.ts')
  .map((f) => ({ file: join(SRC, f), text: readFileSync(join(SRC, f), 'utf8') }));
const used = new Map<string, string[]>();
for (const { file, text } of sources) for (const [code] of text.matchAll(/\bDG_[A-Z0-9_]+\b/g)) used.set(code, [...(used.get(code) ?? []), file]);

test('every code used in src/ is in the table', () => {
  for (const [code, files] of used) assert.ok(Object.hasOwn(ERRORS, code), `${code} (${files.join(', ')}) is not in src/errors.ts`);
});

test('every code in the table is used somewhere in src/', () => {
  for (const code of Object.keys(ERRORS)) assert.ok(used.has(code), `${code} is in src/errors.ts but nothing throws it`);
});

test('every code is documented in docs/errors.md with its exit status', () => {
  const doc = readFileSync('docs/errors.md', 'utf8');
  for (const [code, spec] of Object.entries(ERRORS)) {
    const row = doc.split('\n').find((l) => l.startsWith(`| \`${code}\` |`));
    assert.ok(row, `${code} has no row in docs/errors.md`);
    assert.ok(row!.startsWith(`| \`${code}\` | ${'exit' in spec ? spec.exit : 'the connection is closed'} |`), row);
    assert.ok(spec.meaning.length > 0 && spec.fix.length > 0, code);
  }
});

test('no uncoded throw new Error( in src/: what a user sees has a code', () => {
  for (const { file, text } of sources) assert.not.ok(/throw new Error\(/.test(text), file);
});

test('a configuration error: code, then the message naming the variable; exit 2', async () => {
  const p = drainguard(['run', '--', 'true'], { DRAINGUARD_STOP_TIMEOUT: 'soon' });
  assert.equal((await p.exit()).code, ERRORS.DG_CONFIG_DURATION.exit);
  assert.equal(p.stderr.at(-1), 'drainguard run: DG_CONFIG_DURATION: DRAINGUARD_STOP_TIMEOUT: expected a duration such as 500ms, 30s, 2m or a number of seconds, got "soon"');
});

test('an unknown command, an unknown flag and a missing COMMAND have their codes', async () => {
  const flag = drainguard(['status', '--nope']);
  assert.equal((await flag.exit()).code, 2);
  assert.match(flag.stderr.at(-1)!, /^drainguard status: DG_CONFIG_UNKNOWN_OPTION: unknown option --nope for 'drainguard status'/);
  const command = drainguard(['nope']);
  assert.equal((await command.exit()).code, 2);
  assert.match(command.stderr.at(-1)!, /^drainguard: DG_CONFIG_UNKNOWN_COMMAND: unknown command "nope"/);
  const run = drainguard(['run']);
  assert.equal((await run.exit()).code, 2);
  assert.match(run.stderr.at(-1)!, /^drainguard run: DG_CONFIG_ARGUMENTS: 'drainguard run' needs a command/);
});

test('a failure after the start: prestop with no sidecar logs DG_PRESTOP_UNREACHABLE, exit 1', async () => {
  const p = drainguard(['prestop', '--socket', join(tempDir(), 'none.sock'), '--drain-timeout', '1s']);
  assert.equal((await p.exit()).code, ERRORS.DG_PRESTOP_UNREACHABLE.exit);
  const line = p.logs().find((l) => l.level === 'error');
  assert.is(line?.code, 'DG_PRESTOP_UNREACHABLE');
  assert.match(String(line?.msg), /cannot reach the drainguard sidecar: no socket at/);
});

test.run();
