// The stop procedure with a real operator: WrapMode starts a real sh, and the
// test moves the procedure's clock (the timers are the clock's, the process is
// real), so it is not of the unit tier.
import { existsSync, watch } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { WrapMode } from '../../src/supervisor/wrap-mode.ts';
import { tempDir } from '../support/proc.ts';
import { until as waitUntil, within } from '../support/wait.ts';
import { procedure, sigterm, until } from './procedure.ts';

test('wrap mode: an operator that ignores the stop signal is killed at the kill time, stop timeout after the stop signal', async () => {
  const dir = tempDir();
  const mode = new WrapMode(['sh', '-c', 'trap "" TERM; : > "$DIR/trapped"; exec sleep 30'], { PATH: process.env.PATH, DIR: dir });
  const s = procedure(mode, ['--signal-target=child']);
  await waitUntil(
    (check) =>
      (
        (w) => () =>
          w.close()
      )(watch(dir, check)),
    () => existsSync(join(dir, 'trapped')) || undefined,
    5000,
    'the operator ignoring SIGTERM',
  );
  const stopAt = s.clock.now();
  sigterm();
  await until(() => s.phases.includes('stopping'), 'stopping');
  assert.is(s.clock.nextAt, stopAt + 5000, 'the one timer left is the SIGKILL, at the stop timeout');
  await s.clock.advance(5000);
  assert.is(await within(5000, 'exit', s.running), 128 + 9, 'SIGKILLed');
});

test.run();
