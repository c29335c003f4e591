// The executable shows an error's code before the message, with the exit status
// the table of error codes (src/errors.ts) gives. errors.unit.test.ts holds the
// table to src/ and docs/errors.md.
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ERRORS } from '../src/errors.ts';
import { drainguard, tempDir } from './support/proc.ts';

test('a configuration error: code, then the message naming the variable; exit 2', async () => {
  const p = drainguard(['run', '--', 'true'], { DRAINGUARD_STOP_TIMEOUT: 'soon' });
  assert.equal((await p.exit()).code, ERRORS.DG_CONFIG_DURATION.exit);
  assert.equal(
    p.stderr.at(-1),
    'drainguard run: DG_CONFIG_DURATION: DRAINGUARD_STOP_TIMEOUT: expected a duration such as 500ms, 30s, 2m or a number of seconds, got "soon"',
  );
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
