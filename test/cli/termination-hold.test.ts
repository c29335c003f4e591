// From the start of a run to drainguard's exit there is no moment without a
// handler for a signal the run catches: at that moment its default action would
// act instead (a SIGTERM just after the operator exited by itself: 143 instead
// of the operator's status; a SIGUSR1: Node's inspector; SIGQUIT: a core). The
// run's handlers go at its end; the hold (supervisor/signals.ts) must be in
// place by then, for every one of them.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { main } from '../../src/cli/main.ts';
import { FORWARDED, JOB_CONTROL, TERMINATING } from '../../src/config/signals.ts';

test('`run`: a listener for every signal it catches, at every moment from the run to the exit status', async () => {
  const caught = new Set<string | symbol>([...TERMINATING, ...JOB_CONTROL, ...FORWARDED]);
  const after = new Map<string | symbol, number[]>();
  const record = (event: string | symbol) => {
    if (caught.has(event)) after.set(event, [...(after.get(event) ?? []), process.listenerCount(event)]);
  };
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
  assert.equal([...after.keys()].sort(), [...caught].sort(), 'the run removed a handler of each');
  const bare = [...after].filter(([, counts]) => counts.includes(0)).map(([sig]) => String(sig));
  assert.equal(bare, [], 'signals left without a listener after a removal');
});

test.run();
