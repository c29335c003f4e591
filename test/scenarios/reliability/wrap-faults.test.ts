// The fault matrix of wrap mode, against the built executable: every way the
// operator (or drainguard itself) can misbehave around a stop. Each case checks
// the exit status, the order of events in drainguard's log and on the
// operator's stdout, and that no reconcile that could finish in time was cut off.

import { chmodSync, existsSync, readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { dirname, join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parseArgs } from '../../../src/config/load.ts';
import { resolveSupervisorConfig } from '../../../src/config/supervisor.ts';
import { createLogger } from '../../../src/log/logger.ts';
import { StopProcedure } from '../../../src/supervisor/stop-procedure.ts';
import { WrapMode } from '../../../src/supervisor/wrap-mode.ts';
import { NOBODY, copyForUser } from '../../support/other-user.ts';
import { NODE, Proc, drainguard, fixture, tempDir } from '../../support/proc.ts';
import { until, within } from '../../support/wait.ts';
import { alive, sessionOf } from './support/procfs.ts';
import { prng } from '../../support/random.ts';
import { sizes } from './support/sizes.ts';
import { between, count, inOrder, logOf, messages, noErrors, noWorkInterrupted, signalCounts } from './support/timeline.ts';

const OPERATOR = fixture('operator.ts');
const SLACK_MS = 1500;

const run = (env: NodeJS.ProcessEnv, flags: string[] = []) =>
  drainguard(['run', ...flags, '--', NODE, OPERATOR], { DRAINGUARD_LOG_LEVEL: 'debug', ...env });

const operatorPid = (p: Proc): number => logOf(p, 'operator started').pid as number;

test('the operator acknowledges: the stop signal follows drained, in-flight work finishes', async () => {
  const p = run({ FIXTURE_WORK: '300,700', DRAINGUARD_DRAIN_TIMEOUT: '5s' });
  await p.line('ready');
  p.kill('SIGTERM');
  assert.equal((await p.exit()).code, 0);
  inOrder(
    messages(p),
    ['operator started', 'termination requested', 'drain started', 'client drained', 'drain ended', 'stop signal sent', 'operator exited'],
    'log',
  );
  inOrder(p.stdout, ['work start 1', 'ready', /^drain remainingMs=/, 'work done 0', 'work done 1', 'signal SIGTERM'], 'stdout');
  const ended = logOf(p, 'drain ended');
  assert.equal(ended.outcome, 'drained');
  assert.ok((ended.durationMs as number) < 5000 - 1000, `the ack ended the drain, not the deadline (${ended.durationMs} ms)`);
  assert.equal(signalCounts(p), { SIGTERM: 1 });
  noWorkInterrupted(p);
  noErrors(p);
});

test('the operator never acknowledges: the stop signal comes at the deadline, not before, not much after', async () => {
  const p = run({ FIXTURE_ACK: 'never', FIXTURE_WORK: '200', DRAINGUARD_DRAIN_TIMEOUT: '1s' });
  await p.line('ready');
  p.kill('SIGTERM');
  assert.equal((await p.exit()).code, 0);
  // The operator's own deadline timer and drainguard's fire together: either may come first.
  inOrder(p.stdout, [/^drain /, 'work done 0', 'signal SIGTERM'], 'stdout');
  inOrder(messages(p), ['drain started', 'drain ended', 'stop signal sent', 'operator exited'], 'log');
  const ended = logOf(p, 'drain ended');
  assert.equal(ended.outcome, 'deadline');
  // The deadline counts from the signal (as the kubelet's grace does), not from the drain's start a moment later:
  // the drain ends at the deadline it announced. libuv counts a timer from its loop's cached time, which may be
  // 1 ms behind Date.now().
  const late = Date.parse(ended.time as string) - Date.parse(logOf(p, 'drain started').deadline as string);
  assert.ok(late >= -1 && late < SLACK_MS, `drain ended ${late} ms after its deadline (lasted ${ended.durationMs} ms)`);
  assert.ok((ended.durationMs as number) < 1000 + SLACK_MS, `drain lasted ${ended.durationMs} ms`);
  assert.equal(ended.waitingFor, ['fixture']);
  noWorkInterrupted(p);
});

test('the operator crashes during the drain: its status is passed on, no stop signal, no waiting', async () => {
  const p = run({ FIXTURE_ACK: 'crash', FIXTURE_WORK: '10000', DRAINGUARD_DRAIN_TIMEOUT: '8s' });
  await p.line('ready');
  p.kill('SIGTERM');
  assert.equal((await p.exit()).code, 3);
  const ended = logOf(p, 'drain ended');
  // The crash closes the connection and ends the process; whichever drainguard sees first ends the drain.
  assert.ok(['child-exited', 'disconnected'].includes(ended.outcome as string), String(ended.outcome));
  assert.ok((ended.durationMs as number) < SLACK_MS, `the crash ended the drain at once (${ended.durationMs} ms)`);
  assert.equal(signalCounts(p), {}, 'the crashed operator got no signal');
  assert.not.ok(messages(p).includes('stop timeout passed, operator killed'));
  assert.equal(logOf(p, 'operator exited').status, 3);
  noErrors(p);
});

test('the operator exits without acknowledging: drainguard exits with it at once', async () => {
  const p = run({ FIXTURE_ACK: 'exit', FIXTURE_WORK: '10000', DRAINGUARD_DRAIN_TIMEOUT: '8s' });
  await p.line('ready');
  p.kill('SIGTERM');
  assert.equal((await p.exit()).code, 0);
  const ended = logOf(p, 'drain ended');
  assert.ok(['child-exited', 'disconnected'].includes(ended.outcome as string), String(ended.outcome));
  assert.ok((ended.durationMs as number) < SLACK_MS, `${ended.durationMs} ms`);
  assert.equal(signalCounts(p), {});
  noErrors(p);
});

test('the operator acknowledges and then hangs: SIGKILL exactly one stop timeout after the stop signal', async () => {
  const p = run({ FIXTURE_ACK: 'block', FIXTURE_WORK: '200', DRAINGUARD_DRAIN_TIMEOUT: '5s' }, ['--stop-timeout', '800ms']);
  await p.line('ready');
  p.kill('SIGTERM');
  assert.equal((await p.exit()).code, 128 + 9);
  inOrder(p.stdout, [/^drain /, 'work done 0', 'blocking'], 'stdout');
  inOrder(
    messages(p),
    ['client drained', 'drain ended', 'stop signal sent', 'stop timeout passed, operator killed', 'operator exited'],
    'log',
  );
  const waited = between(logOf(p, 'stop signal sent'), logOf(p, 'stop timeout passed, operator killed'));
  assert.ok(waited >= 790 && waited < 800 + SLACK_MS, `SIGKILL came ${waited} ms after the stop signal`);
  assert.equal(logOf(p, 'operator exited').signal, 'SIGKILL');
  noWorkInterrupted(p);
});

test('the operator acknowledges and then ignores SIGTERM: SIGKILL after the stop timeout', async () => {
  const p = run({ FIXTURE_ON_TERM: 'ignore', FIXTURE_WORK: '200', DRAINGUARD_DRAIN_TIMEOUT: '5s' }, ['--stop-timeout', '600ms']);
  await p.line('ready');
  p.kill('SIGTERM');
  assert.equal((await p.exit()).code, 128 + 9);
  inOrder(p.stdout, ['work done 0', 'signal SIGTERM'], 'stdout');
  inOrder(messages(p), ['client drained', 'stop signal sent', 'stop timeout passed, operator killed'], 'log');
  assert.equal(logOf(p, 'drain ended').outcome, 'drained');
  noWorkInterrupted(p);
});

test('an operator without a client that ignores SIGTERM: no drain, SIGKILL after the stop timeout', async () => {
  const p = run({ FIXTURE_CONNECT: 'never', FIXTURE_ON_TERM: 'ignore' }, ['--stop-timeout', '500ms']);
  await p.line('ready');
  p.kill('SIGTERM');
  assert.equal((await p.exit()).code, 128 + 9);
  assert.equal(logOf(p, 'drain ended').outcome, 'no-client');
  inOrder(messages(p), ['drain ended', 'stop signal sent', 'stop timeout passed, operator killed', 'operator exited'], 'log');
  assert.equal(count(p.stdout, 'signal SIGTERM'), 1);
});

test('an operator drainguard may not signal (it became root through a setuid program): told, supervised, never orphaned', async () => {
  // drainguard as nobody; its command a setuid-root copy of setpriv that makes the operator root for good,
  // so that every kill(2) drainguard sends is refused with EPERM (a fault no ordinary operator shows).
  // Both copies where nobody reaches them (the checkout may not be); the operator runs as root, from here.
  const becomeRoot = copyForUser(NOBODY, '/usr/bin/setpriv');
  chmodSync(becomeRoot, 0o4755);
  const asRoot = [becomeRoot, '--reuid=0', '--regid=0', '--clear-groups', '--', NODE, OPERATOR];
  const asNobody = [`--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups'];
  const p = new Proc('setpriv', [...asNobody, '--', copyForUser(NOBODY), 'run', '--stop-timeout', '500ms', '--', ...asRoot], {
    DRAINGUARD_LOG_LEVEL: 'debug',
    DRAINGUARD_DRAIN_TIMEOUT: '5s',
    FIXTURE_WORK: '300',
  });
  await p.line('ready');
  const pid = operatorPid(p);
  assert.is(readFileSync(`/proc/${pid}/status`, 'utf8').match(/^Uid:\s+(\d+)/m)?.[1], '0', 'the operator runs as root');
  // A forwarded signal refused: told once, and drainguard lives on (it used to crash here, its operator orphaned).
  p.kill('SIGHUP');
  p.kill('SIGHUP');
  const hup = await p.log(
    'cannot send SIGHUP to the operator: EPERM; it runs as a user drainguard may not signal (a setuid program?), so drainguard cannot stop it, only wait for it',
  );
  assert.is(hup.level, 'error');
  assert.is(hup.pid, pid);
  // The drain needs no signal: the operator drains; the stop signal and SIGKILL are refused and told.
  p.kill('SIGTERM');
  await p.line('work done 0');
  await p.log(
    'cannot send SIGKILL to the operator: EPERM; it runs as a user drainguard may not signal (a setuid program?), so drainguard cannot stop it, only wait for it',
  );
  assert.ok(alive(pid), 'the operator still runs');
  assert.ok(alive(p.pid), 'drainguard still supervises it');
  assert.is(count(messages(p), /^cannot send SIGHUP/), 1, 'the refused SIGHUP told once');
  assert.is(logOf(p, 'drain ended').outcome, 'drained');
  assert.not.ok(messages(p).includes('stop signal sent'));
  // Stopped by someone who may: drainguard exits with its status and removes its socket's directory.
  const socket = logOf(p, 'operator started').socket as string;
  process.kill(pid, 'SIGTERM');
  assert.equal((await p.exit()).code, 0);
  assert.not.ok(existsSync(dirname(socket)), 'the private socket directory removed');
  inOrder(p.stdout, ['ready', /^drain remainingMs=/, 'work done 0', 'signal SIGTERM'], 'stdout');
  assert.equal(signalCounts(p), { SIGTERM: 1 });
  noWorkInterrupted(p);
});

test("children in the operator's process group holding stdout open get the stop signal too", async () => {
  const p = run({ FIXTURE_CHILDREN: 'group', FIXTURE_WORK: '200', DRAINGUARD_DRAIN_TIMEOUT: '5s' });
  await p.line('ready');
  const sleeper = Number(p.stdout.find((l) => l.startsWith('sleeper '))!.split(' ')[1]);
  assert.equal(sessionOf(sleeper).pgrp, operatorPid(p), 'the sleeper is in the operator group');
  p.kill('SIGTERM');
  // exit() waits for stdout to close: only possible once the sleeper is gone too.
  assert.equal((await p.exit()).code, 0);
  assert.not.ok(alive(sleeper), 'the sleeper died with the group');
  noWorkInterrupted(p);
});

test('children in a session of their own holding stdout open do not keep drainguard waiting', async () => {
  const p = run({ FIXTURE_CHILDREN: 'session', FIXTURE_WORK: '200', DRAINGUARD_DRAIN_TIMEOUT: '5s' });
  await p.line('ready');
  const sleeper = Number(p.stdout.find((l) => l.startsWith('sleeper '))!.split(' ')[1]);
  p.kill('SIGTERM');
  assert.equal((await p.processExit()).code, 0);
  // Out of reach of group signals: it outlives drainguard (in a container, the end of PID 1 ends it).
  assert.ok(alive(sleeper), 'the detached sleeper is still there');
  process.kill(sleeper, 'SIGKILL');
  await p.exit();
  inOrder(messages(p), ['client drained', 'stop signal sent', 'operator exited'], 'log');
});

test('the operator is already gone when SIGTERM arrives: its status, never a failure of drainguard', async () => {
  const outcomes = new Map<string, number>();
  for (let i = 0; i < 8; i++) {
    const p = run({ FIXTURE_EXIT_AFTER: '50', FIXTURE_EXIT_CODE: '7', FIXTURE_CONNECT: i % 2 ? 'start' : 'never' });
    // The operator prints its counts right before it exits: SIGTERM races its end.
    await p.line(/^counts /);
    p.kill('SIGTERM');
    assert.equal((await p.exit()).code, 7, p.stderr.join('\n'));
    const msgs = messages(p);
    const seen = msgs.includes('operator exited by itself') ? 'exit seen first' : `signal seen first (${logOf(p, 'drain ended').outcome})`;
    outcomes.set(seen, (outcomes.get(seen) ?? 0) + 1);
    assert.not.ok(msgs.includes('stop timeout passed, operator killed'));
    noErrors(p);
  }
  console.log('  already gone:', Object.fromEntries(outcomes));
});

test("nobody reads drainguard's log any more (stderr a broken pipe): the drain works as ever", async () => {
  const p = run({ FIXTURE_WORK: '300', DRAINGUARD_DRAIN_TIMEOUT: '5s' });
  p.child.stderr!.destroy();
  await p.line('ready');
  p.kill('SIGTERM');
  assert.equal((await p.exit()).code, 0);
  inOrder(p.stdout, [/^drain /, 'work done 0', 'signal SIGTERM'], 'stdout');
  assert.equal(signalCounts(p), { SIGTERM: 1 });
  noWorkInterrupted(p);
});

test('drainguard SIGKILLed: the operator, in its own session, lives on and its client keeps retrying', async () => {
  const dir = tempDir();
  const socket = join(dir, 'drain.sock');
  const p = run({ DRAINGUARD_SOCKET: socket });
  await p.line('ready');
  const pid = operatorPid(p);
  assert.equal(sessionOf(pid).session, pid, 'the operator leads a session of its own');
  assert.not.equal(sessionOf(pid).session, sessionOf(p.pid).session);
  p.kill('SIGKILL');
  assert.equal((await p.processExit()).signal, 'SIGKILL');
  await p.line('client error ECONNREFUSED');
  assert.ok(alive(pid), 'the operator outlives a SIGKILLed drainguard');
  assert.ok(existsSync(socket), 'nobody removed the socket file');

  // The next drainguard on that path clears the stale socket, and the orphan's client attaches to it.
  const next = run({ DRAINGUARD_SOCKET: socket, FIXTURE_CONNECT: 'never' });
  await next.line('ready');
  await until(
    (check) => {
      const t = setInterval(check, 20);
      return () => clearInterval(t);
    },
    () => next.logs().find((l) => l.msg === 'client connected' && l.pid === pid),
    5000,
    'the orphan to reconnect',
  );
  process.kill(pid, 'SIGKILL');
  await p.exit();
  next.kill('SIGTERM');
  assert.equal((await next.exit()).code, 0);
});

test('SIGTERM while drainguard itself is starting: the operator is never started', async () => {
  const dir = tempDir();
  const marker = join(dir, 'started');
  const p = run({ FIXTURE_MARKER: marker });
  // The runtime is still booting: no handler is installed yet, so SIGTERM ends drainguard as it would any process.
  p.kill('SIGTERM');
  const exit = await p.exit();
  assert.ok(exit.signal === 'SIGTERM' || exit.code === 143, JSON.stringify(exit));
  assert.not.ok(existsSync(marker), 'the operator was started');
  assert.not.ok(messages(p).includes('operator started'));
});

test('SIGTERM at any moment of the start: either not started (143) or started and stopped in order', async () => {
  const dir = tempDir();
  const outcomes = { notStarted: 0, started: 0 };
  // From the first millisecond on, until the operator was started a few times (later on a loaded machine).
  for (let delay = 0; outcomes.started < 4 && delay <= 3000; delay += outcomes.notStarted > 15 ? 40 : 10) {
    const marker = join(dir, `started-${delay}`);
    const p = run({ FIXTURE_MARKER: marker, FIXTURE_WORK: '100' });
    await within(1000, 'the delay', new Promise((r) => setTimeout(r, delay)));
    p.kill('SIGTERM');
    const exit = await p.exit();
    const msgs = messages(p);
    if (msgs.includes('operator started')) {
      outcomes.started++;
      inOrder(msgs, ['operator started', 'termination requested', 'drain ended', 'operator exited'], `delay ${delay}`);
      // Stopped before its handlers were in place, the operator dies of SIGTERM: 143 as well.
      assert.ok(exit.code === 0 || exit.code === 143, `delay ${delay}: ${JSON.stringify(exit)}`);
      if (p.stdout.includes('ready')) noWorkInterrupted(p);
    } else {
      outcomes.notStarted++;
      assert.ok(exit.signal === 'SIGTERM' || exit.code === 143, `delay ${delay}: ${JSON.stringify(exit)}`);
      assert.not.ok(existsSync(marker));
    }
  }
  console.log('  SIGTERM during start:', outcomes);
  assert.ok(outcomes.notStarted > 0 && outcomes.started > 0, 'both sides of the start were hit');
});

test('a SIGTERM received before the operator is started is honoured (library, real signal)', async () => {
  const dir = tempDir();
  const marker = join(dir, 'started');
  const lines: string[] = [];
  const logger = createLogger({ level: 'debug', format: 'json', stream: { write: (l: string) => lines.push(l) } });
  const config = resolveSupervisorConfig(parseArgs('run', [], {}));
  const status = await within(
    5000,
    'the stop procedure',
    new StopProcedure(config, new WrapMode([NODE, OPERATOR], { ...process.env, FIXTURE_MARKER: marker }), { logger }).run({
      // The socket listens; the kernel delivers SIGTERM now, before the operator is started.
      onServer: () => process.kill(process.pid, 'SIGTERM'),
    }),
  );
  assert.equal(status, 143);
  assert.not.ok(existsSync(marker), 'the operator was started');
  assert.ok(
    lines.some((l) => l.includes('terminated before the operator was started')),
    lines.join(''),
  );
});

test('SIGTERM before the client connected: the drain ends at once (no client)', async () => {
  const p = run({ FIXTURE_CONNECT: 'usr1', DRAINGUARD_DRAIN_TIMEOUT: '5s' });
  await p.line('ready');
  p.kill('SIGTERM');
  assert.equal((await p.exit()).code, 0);
  const ended = logOf(p, 'drain ended');
  assert.equal(ended.outcome, 'no-client');
  assert.ok((ended.durationMs as number) < 300, `${ended.durationMs} ms`);
  inOrder(messages(p), ['drain started', 'drain ended', 'stop signal sent', 'operator exited'], 'log');
});

test('a client that connects while the drain is under way gets drain right after welcome', async () => {
  const dir = tempDir();
  const socket = join(dir, 'drain.sock');
  const p = run({ DRAINGUARD_SOCKET: socket, FIXTURE_CONNECT: 'usr1', DRAINGUARD_DRAIN_TIMEOUT: '5s' });
  await p.line('ready');
  // Another client holds the drain open until the late one has drained.
  const early = connect(socket);
  const received: string[] = [];
  early.setEncoding('utf8').on('data', (d: string) => received.push(...d.split('\n').filter(Boolean)));
  early.write('{"type":"hello","protocol":1,"name":"early"}\n');
  await p.log('client connected');
  p.kill('SIGTERM');
  await until(
    (check) => (early.on('data', check), () => early.off('data', check)),
    () => received.find((l) => l.includes('"drain"')),
    5000,
    'drain',
  );
  process.kill(operatorPid(p), 'SIGUSR1');
  const drain = await p.line(/^drain remainingMs=/);
  const remaining = Number(drain.split('=')[1]);
  assert.ok(remaining > 0 && remaining <= 5000, drain);
  await until(
    (check) => {
      const t = setInterval(check, 20);
      return () => clearInterval(t);
    },
    () => p.logs().find((l) => l.msg === 'client drained' && l.name === 'fixture'),
    5000,
    'the late client to drain',
  );
  early.write('{"type":"drained"}\n');
  assert.equal((await p.exit()).code, 0);
  assert.equal(logOf(p, 'drain ended').outcome, 'drained');
  early.destroy();
});

test('a storm of 1000 SIGTERM/SIGINT/SIGHUP: one stop signal, SIGHUP forwarded, SIGINT not', async () => {
  const random = prng(sizes.seed);
  console.log(`  storm seed ${sizes.seed} (FUZZ_SEED)`);
  // The operator outlives the storm (it ignores SIGTERM), so every signal passed on reaches it while it runs.
  const p = run({ FIXTURE_WORK: '20000', FIXTURE_ON_TERM: 'ignore', DRAINGUARD_DRAIN_TIMEOUT: '10s' }, ['--stop-timeout', '1500ms']);
  await p.line('ready');
  const sent = { SIGTERM: 0, SIGINT: 0, SIGHUP: 0 };
  for (let i = 0; i < 1000; i++) {
    const sig = i === 0 ? 'SIGTERM' : random.pick(['SIGTERM', 'SIGINT', 'SIGHUP'] as const);
    sent[sig]++;
    process.kill(p.pid, sig);
  }
  assert.equal((await p.exit()).code, 128 + 9, 'SIGKILL after the stop timeout');
  const got = {
    SIGTERM: count(p.stdout, 'signal SIGTERM'),
    SIGINT: count(p.stdout, 'signal SIGINT'),
    SIGHUP: count(p.stdout, 'signal SIGHUP'),
  };
  assert.equal(got.SIGTERM, 1, 'the stop signal was passed on once');
  assert.equal(got.SIGINT, 0, 'SIGINT is not passed on');
  // The kernel merges a signal still pending with the next of its kind: fewer arrive than were sent.
  assert.ok(got.SIGHUP >= 1 && got.SIGHUP <= sent.SIGHUP, `SIGHUP forwarded ${got.SIGHUP} of ${sent.SIGHUP}`);
  assert.equal(count(messages(p), 'termination requested'), 1);
  assert.equal(count(messages(p), 'stop signal sent'), 1);
  assert.equal(count(messages(p), 'stop timeout passed, operator killed'), 1);
  // A second termination signal cuts the drain short: the 20 s reconcile could not have finished anyway.
  assert.equal(logOf(p, 'drain ended').outcome, 'cut-short');
  noErrors(p);
  console.log('  storm sent', sent, 'operator got', got);
});

test('a storm of 1000 SIGHUP during a drain: forwarded, and the drain is not disturbed', async () => {
  const p = run({ FIXTURE_WORK: '700', DRAINGUARD_DRAIN_TIMEOUT: '5s' });
  await p.line('ready');
  p.kill('SIGTERM');
  await p.line(/^drain /);
  for (let i = 0; i < 1000; i++) process.kill(p.pid, 'SIGHUP');
  assert.equal((await p.exit()).code, 0);
  assert.equal(logOf(p, 'drain ended').outcome, 'drained');
  inOrder(p.stdout, [/^drain /, 'work done 0', 'signal SIGTERM'], 'stdout');
  assert.ok(signalCounts(p).SIGHUP! >= 1);
  assert.equal(signalCounts(p).SIGTERM, 1);
  noWorkInterrupted(p);
});

test.run();
