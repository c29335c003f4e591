// Sidecar mode with the built executable: a sidecar, a separate operator
// process on its socket, and `drainguard prestop` as the preStop hook runs it.
import { existsSync, statSync } from 'node:fs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { logIndex, prestop, startOperator, startSidecar, stillRunning } from './support.ts';

test('prestop blocks until the operator said drained, then exits 0', async () => {
  const pod = await startSidecar();
  assert.equal(statSync(pod.socket).mode & 0o777, 0o600);
  const operator = await startOperator(pod, { FIXTURE_WORK: '1200' });
  const started = Date.now();
  const hook = prestop(pod);
  await operator.line(/^drain remainingMs=/);
  assert.ok(stillRunning(hook), 'prestop returned while the reconcile was still running');
  const exit = await hook.exit();
  const waited = Date.now() - started;
  assert.equal(exit.code, 0, hook.stderr.join('\n'));
  await operator.line('work done 0');
  const ended = hook.logs().find((l) => l.msg === 'drain ended')!;
  assert.equal(ended.outcome, 'drained');
  assert.equal(ended.clients, 1);
  assert.equal(ended.joined, false);
  const [drained, end] = logIndex(pod.sidecar, 'client drained', 'drain ended');
  assert.ok(drained >= 0 && drained < end, 'the sidecar ended the drain on the drained message');
  assert.equal(pod.sidecar.logs().find((l) => l.msg === 'drain started')!.source, 'socket');
  assert.ok(waited < 8000, `prestop took ${waited} ms`);
  assert.not.ok(operator.stdout.some((l) => l.startsWith('work interrupted')));
  assert.not.ok(operator.stdout.includes('signal SIGTERM'), 'the sidecar never signals the operator');

  // A second hook (the kubelet retrying, or a second container) joins the drain that is over.
  const again = prestop(pod);
  assert.equal((await again.exit()).code, 0);
  assert.equal(again.logs().find((l) => l.msg === 'drain ended')!.joined, true);
  assert.equal(pod.sidecar.logs().filter((l) => l.msg === 'drain started').length, 1);

  operator.kill('SIGTERM');
  await operator.exit();
  pod.sidecar.kill('SIGTERM');
  assert.equal((await pod.sidecar.exit()).code, 0);
});

test('an operator that gives up at the announced deadline and acknowledges then is reported as deadline', async () => {
  const pods = await Promise.all(Array.from({ length: 3 }, () => startSidecar({ DRAINGUARD_DRAIN_TIMEOUT: '600ms' })));
  const operators = await Promise.all(pods.map((pod) => startOperator(pod, { FIXTURE_ACK: 'at-deadline', FIXTURE_WORK: '20000' })));
  try {
    const hooks = pods.map((pod) => prestop(pod));
    for (const [i, hook] of hooks.entries()) {
      assert.equal((await hook.exit()).code, 0);
      assert.equal(hook.logs().find((l) => l.msg === 'drain ended')!.outcome, 'deadline');
      assert.equal(pods[i]!.sidecar.logs().find((l) => l.msg === 'drain ended')!.outcome, 'deadline');
    }
  } finally {
    for (const p of [...operators, ...pods.map((pod) => pod.sidecar)]) p.kill('SIGKILL');
  }
});

test('prestop returns at the drain deadline when the operator never says drained', async () => {
  const pod = await startSidecar({ DRAINGUARD_DRAIN_TIMEOUT: '800ms' });
  const operator = await startOperator(pod, { FIXTURE_ACK: 'never' });
  const started = Date.now();
  const hook = prestop(pod);
  assert.equal((await hook.exit()).code, 0);
  const waited = Date.now() - started;
  assert.ok(waited >= 790 && waited < 6000, `prestop took ${waited} ms`);
  assert.equal(hook.logs().find((l) => l.msg === 'drain ended')!.outcome, 'deadline');
  await operator.line('deadline');
  const ended = await pod.sidecar.log('drain ended');
  assert.equal(ended.outcome, 'deadline');
  assert.equal(ended.waitingFor, ['fixture']);
  operator.kill('SIGTERM');
  pod.sidecar.kill('SIGTERM');
  assert.equal((await pod.sidecar.exit()).code, 0);
});

test('native sidecar order: the operator stops first, then SIGTERM releases at once', async () => {
  const pod = await startSidecar();
  const operator = await startOperator(pod, { FIXTURE_WORK: '300' });
  assert.equal((await prestop(pod).exit()).code, 0);
  // The kubelet: SIGTERM to the operator after its hook, and to the sidecar once the operator is gone.
  operator.kill('SIGTERM');
  assert.equal((await operator.exit()).code, 0);
  await pod.sidecar.log('client disconnected');
  pod.sidecar.kill('SIGTERM');
  assert.equal((await pod.sidecar.exit()).code, 0);
  assert.equal(pod.sidecar.logs().find((l) => l.msg === 'termination requested')!.clients, 0);
  const [terminated, atOnce, stopped] = logIndex(
    pod.sidecar,
    'termination requested',
    'no operator client connected: releasing at once',
    'sidecar stopped',
  );
  assert.ok(terminated < atOnce && atOnce < stopped, pod.sidecar.stderr.join('\n'));
  assert.equal(logIndex(pod.sidecar, 'waiting for the operator to stop'), [-1]);
  assert.equal(pod.sidecar.logs().filter((l) => l.msg === 'drain started').length, 1, 'no second drain at SIGTERM');
  assert.not.ok(existsSync(pod.socket), 'socket removed');
});

test('plain sidecar order: SIGTERM together with the hook; the release waits for the operator to go', async () => {
  const pod = await startSidecar();
  const operator = await startOperator(pod, { FIXTURE_WORK: '600', FIXTURE_ON_TERM: 'ignore' });
  // The kubelet runs the operator's preStop hook and signals the plain sidecar at the same moment.
  const hook = prestop(pod);
  pod.sidecar.kill('SIGTERM');
  assert.equal((await hook.exit()).code, 0, hook.stderr.join('\n'));
  assert.equal(hook.logs().find((l) => l.msg === 'drain ended')!.outcome, 'drained');
  const waiting = await pod.sidecar.log('waiting for the operator to stop');
  assert.equal(waiting.clients, 1);
  // The hook is done: the kubelet signals the operator, which (here) takes its time.
  operator.kill('SIGTERM');
  await operator.line('signal SIGTERM');
  assert.ok(stillRunning(pod.sidecar), 'the sidecar released while the operator was still running');
  assert.equal(logIndex(pod.sidecar, 'operator stopped', 'sidecar stopped'), [-1, -1]);
  operator.kill('SIGKILL');
  await operator.exit();
  assert.equal((await pod.sidecar.exit()).code, 0);
  const [wait, stopped, done] = logIndex(pod.sidecar, 'waiting for the operator to stop', 'operator stopped', 'sidecar stopped');
  assert.ok(wait < stopped && stopped < done, pod.sidecar.stderr.join('\n'));
  assert.equal(pod.sidecar.logs().filter((l) => l.msg === 'drain started').length, 1, 'hook and signal share one drain');
});

test('plain sidecar without a hook: SIGTERM starts the drain itself', async () => {
  const pod = await startSidecar();
  const operator = await startOperator(pod, { FIXTURE_WORK: '400' });
  pod.sidecar.kill('SIGTERM');
  await operator.line(/^drain remainingMs=/);
  await operator.line('work done 0');
  await pod.sidecar.log('waiting for the operator to stop');
  operator.kill('SIGTERM');
  assert.equal((await pod.sidecar.exit()).code, 0);
  const started = pod.sidecar.logs().find((l) => l.msg === 'drain started')!;
  assert.equal(started.source, 'signal');
  assert.equal(pod.sidecar.logs().find((l) => l.msg === 'drain ended')!.outcome, 'drained');
});

test('the release never waits past the grace period for an operator that does not stop', async () => {
  const pod = await startSidecar({ DRAINGUARD_GRACE_PERIOD: '3s', DRAINGUARD_STOP_TIMEOUT: '1s' });
  const operator = await startOperator(pod, { FIXTURE_ON_TERM: 'ignore' });
  const started = Date.now();
  pod.sidecar.kill('SIGTERM');
  operator.kill('SIGTERM');
  assert.equal((await pod.sidecar.exit(6000)).code, 0);
  const took = Date.now() - started;
  // grace 3s - 1s margin - 0.75s kept for the release itself
  assert.ok(took >= 1200 && took < 3000, `released after ${took} ms`);
  const warned = pod.sidecar.logs().find((l) => l.msg.startsWith('the operator has not stopped'));
  assert.ok(warned, pod.sidecar.stderr.join('\n'));
  assert.equal(warned!.clients, 1);
  operator.kill('SIGKILL');
  await operator.exit();
});

test('a second SIGTERM cuts the drain and the wait short', async () => {
  const pod = await startSidecar();
  const operator = await startOperator(pod, { FIXTURE_WORK: '30000' });
  const hook = prestop(pod);
  await operator.line(/^drain remainingMs=/);
  pod.sidecar.kill('SIGTERM');
  await pod.sidecar.log('termination requested');
  pod.sidecar.kill('SIGTERM');
  assert.equal((await pod.sidecar.exit()).code, 0);
  assert.equal((await hook.exit()).code, 0);
  assert.equal(hook.logs().find((l) => l.msg === 'drain ended')!.outcome, 'cut-short');
  assert.ok(pod.sidecar.logs().some((l) => l.msg === 'second termination signal: releasing now'));
  operator.kill('SIGKILL');
  await operator.exit();
});

test.run();
