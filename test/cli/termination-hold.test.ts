// From the start of a run to drainguard's exit there is no moment without a
// handler for SIGTERM: at that moment the default action would end drainguard
// with 143 instead of the operator's status (a SIGTERM just after the
// operator exited by itself). The run's handlers go at its end; the hold of
// the termination signals (supervisor/signals.ts) must be in place by then.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { main } from '../../src/cli/main.ts';

test('`run`: a SIGTERM listener at every moment from the run to the exit status', async () => {
  const counts: number[] = [];
  const record = (event: string | symbol) => event === 'SIGTERM' && counts.push(process.listenerCount('SIGTERM'));
  process.on('removeListener', record);
  const lines: string[] = [];
  const io = {
    env: { PATH: process.env.PATH },
    stdout: { write: (s: string) => lines.push(s) },
    stderr: { write: (s: string) => lines.push(s) },
  };
  try {
    assert.is(await main(['run', '--', 'sh', '-c', 'exit 7'], io), 7, lines.join(''));
  } finally {
    process.off('removeListener', record);
  }
  assert.ok(counts.length > 0, 'the run removed its SIGTERM handler');
  assert.not.ok(counts.includes(0), `SIGTERM listeners after each removal: ${counts.join(', ')}`);
});

test.run();
