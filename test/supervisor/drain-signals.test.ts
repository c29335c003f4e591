// Which signals start the drain, against the built executable in wrap mode,
// with the fixture operator in the middle of a 1.5 s reconcile. The runtime
// stops a container with its stop signal (an image's STOPSIGNAL, a Pod's
// lifecycle.stopSignal): SIGINT drains as SIGTERM does; SIGQUIT, which
// drainguard passes on, drains only when it is one of the drain signals
// (DRAINGUARD_DRAIN_SIGNALS here; from the Pod in test/scenarios/lifecycle/stop-signal.test.ts).
// The operator takes SIGQUIT as a Go program does: its work interrupted, a goroutine dump, exit 2.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { NODE, type Proc, drainguard, fixture } from '../support/proc.ts';

const run = (env: NodeJS.ProcessEnv = {}) =>
  drainguard(['run', '--', NODE, fixture('operator.ts')], { FIXTURE_WORK: '1500', FIXTURE_ON_QUIT: 'dump', ...env });

/** The operator's lines from its reconcile's start on. */
const after = (p: Proc): string[] => p.stdout.slice(p.stdout.indexOf('work start 0')).map((l) => l.replace(/=\d+$/, '=N'));

test('the control: SIGQUIT as the stop signal, drainguard as it was: only passed on, the reconcile lost, exit 2', async () => {
  const p = run();
  try {
    await p.line('work start 0');
    p.kill('SIGQUIT');
    const exit = await p.exit();
    assert.equal(after(p), ['work start 0', 'ready', 'signal SIGQUIT', 'work interrupted 0', 'goroutine dump', 'counts {"SIGQUIT":1}']);
    assert.is(exit.code, 2, "the operator's own status");
    const msgs = p.logs().map((l) => l.msg);
    assert.not.ok(msgs.includes('termination requested'), 'no drain');
    assert.ok(msgs.includes('operator exited by itself'), msgs.join(' | '));
  } finally {
    p.killAll();
  }
});

test('DRAINGUARD_DRAIN_SIGNALS=SIGQUIT: SIGQUIT starts the drain, the reconcile completes, then the stop signal (SIGTERM), exit 0', async () => {
  const p = run({ DRAINGUARD_DRAIN_SIGNALS: 'SIGQUIT' });
  try {
    await p.line('work start 0');
    p.kill('SIGQUIT');
    const exit = await p.exit();
    assert.equal(after(p), ['work start 0', 'ready', 'drain remainingMs=N', 'work done 0', 'signal SIGTERM', 'counts {"SIGTERM":1}']);
    assert.is(exit.code, 0);
    assert.equal(p.logs().find((l) => l.msg === 'termination requested')?.signal, 'SIGQUIT');
    assert.equal(p.logs().find((l) => l.msg === 'drain ended')?.outcome, 'drained');
    assert.equal(
      p.logs().find((l) => l.msg === 'stop signal sent')?.signal,
      'SIGTERM',
      'DRAINGUARD_STOP_SIGNAL, not the SIGQUIT that came',
    );
  } finally {
    p.killAll();
  }
});

test('SIGINT as the stop signal drains as SIGTERM does, with nothing configured; a second one cuts the drain short', async () => {
  const p = run({ FIXTURE_WORK: '60000' });
  try {
    await p.line('work start 0');
    p.kill('SIGINT');
    await p.line(/^drain remainingMs=/);
    // stdout and stderr are separate pipes: wait for the log line, do not look it up.
    assert.equal((await p.log('termination requested')).signal, 'SIGINT');
    p.kill('SIGINT');
    const exit = await p.exit();
    assert.is(exit.code, 0);
    assert.equal(p.logs().find((l) => l.msg === 'drain ended')?.outcome, 'cut-short');
    assert.not.ok(p.stdout.includes('signal SIGINT'), 'a drain signal is not passed on');
    assert.ok(p.stdout.includes('signal SIGTERM'));
  } finally {
    p.killAll();
  }
});

test.run();
