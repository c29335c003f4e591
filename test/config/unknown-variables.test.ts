// A misspelt DRAINGUARD_* variable is warned about with the closest known
// name; never an error, and nothing drainguard reads is warned about.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { join } from 'node:path';
import { drainguard, tempDir } from '../support/proc.ts';

const warnings = (lines: { msg: string; level: string }[]) =>
  lines.filter((l) => l.level === 'warn' && l.msg.includes('is not a drainguard variable'));

test('a misspelt variable: warned with the closest name, the operator still runs with the default', async () => {
  const p = drainguard(['run', '--', 'sh', '-c', 'echo ran'], { DRAINGUARD_DRAIN_TIMOUT: '5s', DRAINGUARD_GARCE_PERIOD: '10s' });
  const exit = await p.exit();
  assert.equal(exit.code, 0);
  assert.ok(p.stdout.includes('ran'));
  const warned = warnings(p.logs());
  assert.equal(
    warned.map((w) => w.msg),
    [
      'DRAINGUARD_DRAIN_TIMOUT is not a drainguard variable and is ignored; did you mean DRAINGUARD_DRAIN_TIMEOUT?',
      'DRAINGUARD_GARCE_PERIOD is not a drainguard variable and is ignored; did you mean DRAINGUARD_GRACE_PERIOD?',
    ],
  );
});

test("no warning for what drainguard reads, also another command's variable (containers of a pod share env)", async () => {
  const p = drainguard(['run', '--', 'true'], {
    DRAINGUARD_SOCKET: join(tempDir(), 'drain.sock'),
    DRAINGUARD_OPERATOR_CONTAINER: 'manager',
    DRAINGUARD_PRESTOP_TOKEN: 'x',
    DRAINGUARD_TIMEOUT: '5m',
    DRAINGUARD_LOG_LEVEL: 'info',
  });
  assert.equal((await p.exit()).code, 0, p.stderr.join('\n'));
  assert.ok(p.logs().some((l) => l.msg === 'operator started'));
  assert.equal(warnings(p.logs()), [], p.stderr.join('\n'));
});

test('a name far from every known one: warned without a suggestion, in every command', async () => {
  for (const args of [['run', '--', 'true'], ['status'], ['prestop', '--socket', '/nonexistent/drain.sock']]) {
    const p = drainguard(args, { DRAINGUARD_WIBBLE: '1' });
    await p.exit();
    assert.equal(
      warnings(p.logs()).map((w) => w.msg),
      ['DRAINGUARD_WIBBLE is not a drainguard variable and is ignored'],
      `${args[0]}: ${p.stderr.join('\n')}`,
    );
  }
});

test.run();
