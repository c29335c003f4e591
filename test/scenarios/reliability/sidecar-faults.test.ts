// The fault matrix of sidecar mode, against the built executable: the sidecar,
// an operator process of its own on the shared socket (another container of
// the pod), `drainguard prestop` as the operator's preStop hook, and the test
// in the kubelet's place (SIGTERM to the operator after its hook, to the
// sidecar after or with it, SIGKILL at the end of the grace period).
//
// Not here, because a sidecar has no child: forwarding signals and children
// holding stdout open (the wrap-mode matrix has them).

import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { type Socket, connect } from 'node:net';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { NODE, Proc, drainguard, fixture, tempDir } from '../../support/proc.ts';
import { until, within } from '../../support/wait.ts';
import { alive, memory, mib } from './support/procfs.ts';
import { prng } from '../../support/random.ts';
import { sizes } from './support/sizes.ts';
import { count, inOrder, logOf, messages, noErrors, noWorkInterrupted } from './support/timeline.ts';

const OPERATOR = fixture('operator.ts');
const SLACK_MS = 1500;

interface Pod {
  readonly socket: string;
  readonly sidecar: Proc;
}

async function startSidecar(env: NodeJS.ProcessEnv = {}, socket = join(tempDir(), 'drain.sock')): Promise<Pod> {
  const sidecar = drainguard(['sidecar'], {
    DRAINGUARD_SOCKET: socket,
    DRAINGUARD_HTTP_ADDR: '127.0.0.1:0',
    DRAINGUARD_LOG_LEVEL: 'debug',
    ...env,
  });
  await sidecar.log('sidecar ready');
  return { socket, sidecar };
}

async function startOperator(pod: Pod, env: NodeJS.ProcessEnv = {}): Promise<Proc> {
  const operator = new Proc(NODE, [OPERATOR], { DRAINGUARD_SOCKET: pod.socket, ...env });
  await operator.line('ready');
  return operator;
}

const prestop = (pod: Pod) => drainguard(['prestop'], { DRAINGUARD_SOCKET: pod.socket });

/** The native-sidecar ending: the operator is gone, then the sidecar gets SIGTERM and releases at once. */
async function endNative(pod: Pod): Promise<void> {
  pod.sidecar.kill('SIGTERM');
  assert.equal((await pod.sidecar.exit()).code, 0);
  inOrder(
    messages(pod.sidecar),
    ['termination requested', 'no operator client connected: releasing at once', 'sidecar stopped'],
    'sidecar log',
  );
  noErrors(pod.sidecar);
}

test('the operator acknowledges: the hook returns once its work is done; the kubelet stops it; the sidecar releases', async () => {
  const pod = await startSidecar({ DRAINGUARD_DRAIN_TIMEOUT: '5s' });
  const operator = await startOperator(pod, { FIXTURE_WORK: '300,700' });
  const hook = prestop(pod);
  assert.equal((await hook.exit()).code, 0, hook.stderr.join('\n'));
  inOrder(operator.stdout, [/^drain remainingMs=/, 'work done 0', 'work done 1'], 'operator');
  assert.equal(logOf(hook, 'drain ended').outcome, 'drained');
  operator.kill('SIGTERM');
  assert.equal((await operator.exit()).code, 0);
  noWorkInterrupted(operator);
  await pod.sidecar.log('client disconnected');
  inOrder(
    messages(pod.sidecar),
    ['drain requested', 'drain started', 'client drained', 'drain ended', 'client disconnected'],
    'sidecar log',
  );
  await endNative(pod);
});

test('the operator never acknowledges: the hook returns at the deadline, after the work that fit', async () => {
  const pod = await startSidecar({ DRAINGUARD_DRAIN_TIMEOUT: '1s' });
  const operator = await startOperator(pod, { FIXTURE_ACK: 'never', FIXTURE_WORK: '300' });
  const t0 = Date.now();
  const hook = prestop(pod);
  assert.equal((await hook.exit()).code, 0);
  const took = Date.now() - t0;
  assert.ok(took >= 1000 && took < 1000 + SLACK_MS + 1000, `the hook took ${took} ms`);
  assert.equal(logOf(hook, 'drain ended').outcome, 'deadline');
  assert.ok(operator.stdout.includes('work done 0'), 'the reconcile that fitted in the deadline finished');
  operator.kill('SIGTERM');
  await operator.exit();
  noWorkInterrupted(operator);
  await endNative(pod);
});

for (const [how, ack, code] of [
  ['crashes', 'crash', 3],
  ['exits without acknowledging', 'exit', 0],
] as const) {
  test(`the operator ${how} during the drain: the hook returns at once, the sidecar releases at once`, async () => {
    const pod = await startSidecar({ DRAINGUARD_DRAIN_TIMEOUT: '8s' });
    const operator = await startOperator(pod, { FIXTURE_ACK: ack, FIXTURE_WORK: '20000' });
    const t0 = Date.now();
    const hook = prestop(pod);
    assert.equal((await hook.exit()).code, 0);
    assert.ok(Date.now() - t0 < SLACK_MS + 1000, `the hook took ${Date.now() - t0} ms`);
    assert.equal(logOf(hook, 'drain ended').outcome, 'disconnected');
    assert.equal((await operator.exit()).code, code);
    await endNative(pod);
  });
}

test('the operator acknowledges, then hangs and ignores SIGTERM (plain sidecar): released only once the kubelet killed it', async () => {
  const pod = await startSidecar({ DRAINGUARD_DRAIN_TIMEOUT: '5s', DRAINGUARD_GRACE_PERIOD: '20s' });
  const operator = await startOperator(pod, { FIXTURE_ACK: 'block', FIXTURE_WORK: '200' });
  const hook = prestop(pod);
  // A plain sidecar gets its SIGTERM with the hook.
  pod.sidecar.kill('SIGTERM');
  assert.equal((await hook.exit()).code, 0);
  assert.equal(logOf(hook, 'drain ended').outcome, 'drained');
  await operator.line('blocking');
  operator.kill('SIGTERM');
  await pod.sidecar.log('waiting for the operator to stop');
  assert.ok(pod.sidecar.child.exitCode === null, 'released while the operator still ran');
  // The end of the grace period: the kubelet's SIGKILL.
  operator.kill('SIGKILL');
  await operator.exit();
  assert.equal((await pod.sidecar.exit()).code, 0);
  inOrder(
    messages(pod.sidecar),
    ['client drained', 'waiting for the operator to stop', 'client disconnected', 'operator stopped', 'sidecar stopped'],
    'sidecar log',
  );
  noWorkInterrupted(operator);
});

test('the operator is already gone when the hook and SIGTERM come: the drain ends at once (no client), released at once', async () => {
  const pod = await startSidecar({ DRAINGUARD_DRAIN_TIMEOUT: '5s' });
  const operator = await startOperator(pod);
  operator.kill('SIGKILL');
  await operator.exit();
  await pod.sidecar.log('client disconnected');
  const hook = prestop(pod);
  assert.equal((await hook.exit()).code, 0);
  assert.equal(logOf(hook, 'drain ended').outcome, 'no-client');
  await endNative(pod);
});

test('SIGTERM before any client connected: no drain to wait for, released at once', async () => {
  const pod = await startSidecar();
  pod.sidecar.kill('SIGTERM');
  assert.equal((await pod.sidecar.exit()).code, 0);
  assert.equal(logOf(pod.sidecar, 'termination requested').clients, 0);
  inOrder(
    messages(pod.sidecar),
    ['termination requested', 'no operator client connected: releasing at once', 'sidecar stopped'],
    'sidecar log',
  );
});

test('the sidecar SIGKILLed and restarted: the operator lives on, reconnects to the new sidecar, and drains through it', async () => {
  const first = await startSidecar({ DRAINGUARD_DRAIN_TIMEOUT: '5s' });
  const operator = await startOperator(first, { FIXTURE_WORK: '400', FIXTURE_WORK_AT: 'usr2' });
  first.sidecar.kill('SIGKILL');
  assert.equal((await first.sidecar.exit()).signal, 'SIGKILL');
  await operator.line('client error ECONNREFUSED');
  assert.ok(alive(operator.pid));
  // The kubelet restarts the container: the socket file on the shared volume is stale, and replaced.
  const second = await startSidecar({ DRAINGUARD_DRAIN_TIMEOUT: '5s' }, first.socket);
  await until(
    (check) => {
      const t = setInterval(check, 20);
      return () => clearInterval(t);
    },
    () => second.sidecar.logs().find((l) => l.msg === 'client connected' && l.pid === operator.pid),
    5000,
    'the operator to reconnect',
  );
  operator.kill('SIGUSR2');
  await operator.line('work start 0');
  const hook = prestop(second);
  assert.equal((await hook.exit()).code, 0);
  assert.equal(logOf(hook, 'drain ended').outcome, 'drained');
  inOrder(operator.stdout, [/^drain remainingMs=/, 'work done 0'], 'operator');
  operator.kill('SIGTERM');
  await operator.exit();
  noWorkInterrupted(operator);
  await endNative(second);
});

test('stray signals and a storm of 1000 SIGTERM/SIGINT/SIGHUP at the sidecar: survived, then one drain, the operator never signalled', async () => {
  const random = prng(sizes.seed);
  const pod = await startSidecar({ DRAINGUARD_DRAIN_TIMEOUT: '5s' });
  const operator = await startOperator(pod, { FIXTURE_WORK: '20000' });
  // Signals a sidecar has no use for are caught, not fatal: a closed terminal, a shared process namespace.
  for (let i = 0; i < 200; i++)
    process.kill(pod.sidecar.pid, random.pick(['SIGHUP', 'SIGUSR1', 'SIGUSR2', 'SIGQUIT', 'SIGALRM', 'SIGWINCH'] as const));
  const probe = connect(pod.socket);
  probe.write('{"type":"hello","protocol":1,"name":"probe"}\n');
  assert.match(String((await within(5000, 'welcome', once(probe, 'data')))[0]), /"welcome"/, 'the sidecar still serves');
  probe.destroy();
  assert.ok(alive(pod.sidecar.pid));
  const sent = { SIGTERM: 0, SIGINT: 0, SIGHUP: 0 };
  for (let i = 0; i < 1000; i++) {
    const sig = i === 0 ? 'SIGTERM' : random.pick(['SIGTERM', 'SIGINT', 'SIGHUP'] as const);
    sent[sig]++;
    process.kill(pod.sidecar.pid, sig);
  }
  const exit = await pod.sidecar.exit();
  // The storm outlasts the sidecar, which is done 2 ms after the second SIGTERM: one that lands in
  // the last instant, once every handler is gone and the socket removed, ends it by that signal.
  const late = exit.signal !== null && messages(pod.sidecar).includes('sidecar stopped') && !existsSync(pod.socket);
  assert.ok(exit.code === 0 || late, `${JSON.stringify(exit)}\n${pod.sidecar.stderr.slice(-5).join('\n')}`);
  assert.equal(count(messages(pod.sidecar), 'termination requested'), 1);
  assert.ok(count(messages(pod.sidecar), 'drain started') <= 1);
  assert.ok(alive(operator.pid), 'the operator is not the sidecar’s to stop');
  assert.not.ok(operator.stdout.includes('signal SIGTERM'));
  noErrors(pod.sidecar);
  operator.kill('SIGKILL');
  await operator.exit();
  console.log('  storm sent', sent, 'sidecar exit', exit);
});

test('control connections: 120 drain requests at once join one drain, each hears how it ended; rude ones are refused', async () => {
  const pod = await startSidecar({ DRAINGUARD_DRAIN_TIMEOUT: '5s' });
  const operator = await startOperator(pod, { FIXTURE_WORK: '600' });
  const before = memory(pod.sidecar.pid).rssKiB;
  // As many at once as the socket takes before they have spoken (128, docs/protocol.md "Bounds"), less the operator's.
  const requests = 120;
  const answers = await Promise.all(
    Array.from({ length: requests }, async (_, i) => {
      const s: Socket = connect(pod.socket);
      s.on('error', () => {});
      let text = '';
      s.setEncoding('utf8').on('data', (d: string) => (text += d));
      await within(10_000, 'connect', once(s, 'connect'));
      // Some hang up at once, some never read, the rest wait for the end.
      s.write(`{"type":"request-drain","protocol":1,"source":"storm-${i}"}\n`);
      if (i % 10 === 0) s.destroy();
      if (i % 10 === 1) s.pause();
      if (i % 10 < 2) return undefined;
      await within(15_000, 'the end of the drain', once(s, 'close'));
      return text
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as { type: string; outcome?: string; joined?: boolean });
    }),
  );
  const heard = answers.filter((a) => a !== undefined);
  assert.ok(
    heard.every((a) => a.length === 2 && a[0]!.type === 'drain-started' && a[1]!.type === 'drain-ended' && a[1]!.outcome === 'drained'),
    JSON.stringify(heard.find((a) => a.length !== 2)),
  );
  // The first request (which may have hung up at once) started it; every other one joined.
  assert.ok(heard.filter((a) => a[0]!.joined === false).length <= 1, 'one drain, the others joined it');
  assert.equal(count(messages(pod.sidecar), 'drain started'), 1);
  inOrder(operator.stdout, [/^drain remainingMs=/, 'work done 0'], 'operator');
  const peak = memory(pod.sidecar.pid).peakKiB;

  // Control requests that break the rules get an error, and change nothing.
  for (const bad of ['{"type":"request-drain","protocol":2}', '{"type":"request-drain"}', '{"type":"request-drain","protocol":"1"}']) {
    const s = connect(pod.socket);
    let text = '';
    s.setEncoding('utf8').on('data', (d: string) => (text += d));
    s.write(`${bad}\n`);
    await within(5000, 'close', once(s, 'close'));
    assert.match(text, /"type":"error"/, bad);
  }
  operator.kill('SIGTERM');
  await operator.exit();
  noWorkInterrupted(operator);
  await endNative(pod);
  console.log(`  ${requests} drain requests: ${heard.length} heard the end; sidecar RSS ${mib(before)} -> peak ${mib(peak)}`);
});

test.run();
