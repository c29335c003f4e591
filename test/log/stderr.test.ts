// drainguard's stderr (src/log/stderr.ts), through the built executable: a
// descriptor someone else made non-blocking loses no line when it is full.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { EXE, Proc, fixture } from '../support/proc.ts';

test('stderr a full non-blocking pipe: every line comes out, whole and in order, once it is read', async () => {
  const names = Array.from({ length: 40 }, (_, i) => `DRAINGUARD_NOT_AN_OPTION_${String(i).padStart(2, '0')}`);
  const p = new Proc(
    'perl',
    [fixture('nonblocking-stderr.pl'), EXE, 'run', '--', '/bin/true'],
    Object.fromEntries(names.map((n) => [n, 'x'])),
  );
  assert.equal((await p.exit()).code, 0, p.stderr.join('\n'));
  // The pipe's page holds about 20 of these lines: the rest found it full.
  const lines = p.stdout.map((l) => JSON.parse(l) as { msg: string; variable?: string });
  const warned = lines.filter((l) => l.variable !== undefined).map((l) => l.variable);
  // drainguard warns in the order of the names.
  assert.equal(warned, names, 'each unknown variable warned about once, in order');
  assert.equal(
    lines.slice(-2).map((l) => l.msg),
    ['operator started', 'operator exited by itself'],
  );
});

test.run();
