// Every signal the README says is passed on reaches the operator, one after
// another through the same drainguard, which stays alive and still drains.
import { constants } from 'node:os';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { NODE, drainguard, fixture } from '../support/proc.ts';

// The README's table, row "passed on unchanged".
const PASSED_ON = [
  'SIGHUP',
  'SIGQUIT',
  'SIGTRAP',
  'SIGABRT',
  'SIGUSR1',
  'SIGUSR2',
  'SIGALRM',
  'SIGSTKFLT',
  'SIGCONT',
  'SIGURG',
  'SIGXCPU',
  'SIGXFSZ',
  'SIGVTALRM',
  'SIGPROF',
  'SIGWINCH',
  'SIGIO',
  'SIGPWR',
  'SIGSYS',
] as const;

// Every other name Node.js knows for the same numbers (SIGIOT = SIGABRT, SIGPOLL = SIGIO).
const ALIASES = Object.entries(constants.signals)
  .filter(([name, n]) => !(PASSED_ON as readonly string[]).includes(name) && PASSED_ON.some((s) => constants.signals[s] === n))
  .map(([name]) => name as NodeJS.Signals);

test('the aliases are known to this Node.js', () => {
  assert.ok(ALIASES.includes('SIGIOT') && ALIASES.includes('SIGPOLL'), `aliases: ${ALIASES.join(', ')}`);
});

test('all signals passed on, then the aliases, in order to one operator; drainguard stays and drains at SIGTERM', async () => {
  const p = drainguard(['run', '--', NODE, fixture('print-signals.ts')], { FIXTURE_SIGNALS: PASSED_ON.join(',') });
  try {
    await p.line('ready');
    const sent = [...PASSED_ON, ...ALIASES];
    for (const [i, sig] of sent.entries()) {
      p.kill(sig);
      // One echo line per signal, in the order sent: wait for the i-th before sending the next.
      await p.line(`got ${constants.signals[sig]} #${i + 1}`, 10_000).catch((err: Error) => {
        throw new Error(`${sig} (${i + 1} of ${sent.length}) did not reach the operator: ${err.message}`);
      });
    }
    assert.equal(
      p.stdout.filter((l) => l.startsWith('got ')),
      sent.map((s, i) => `got ${constants.signals[s]} #${i + 1}`),
    );
    p.kill('SIGTERM');
    const exit = await p.exit();
    assert.equal(exit.code, 0, p.stderr.join('\n'));
    const tail = p.stdout.slice(p.stdout.indexOf('drain'));
    assert.equal(tail, ['drain', 'got 15'], 'the drain comes first, then the stop signal');
    assert.equal(p.logs().find((l) => l.msg === 'drain ended')?.outcome, 'drained');
  } finally {
    p.killAll();
  }
});

test.run();
