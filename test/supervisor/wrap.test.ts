// Wrap mode against the built executable, with a real operator process.
import { statSync, existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { NODE, Proc, drainguard, fixture, tempDir } from '../support/proc.ts';

const OPERATOR = fixture('operator.ts');
const run = (env: NodeJS.ProcessEnv, flags: string[] = [], command = [NODE, OPERATOR]) =>
  drainguard(['run', ...flags, '--', ...command], { DRAINGUARD_LOG_LEVEL: 'debug', ...env });

const order = (p: Proc, ...lines: string[]) => {
  const at = lines.map((l) => p.stdout.indexOf(l));
  assert.ok(
    at.every((i) => i >= 0),
    `missing one of ${lines.join(' | ')} in:\n${p.stdout.join('\n')}`,
  );
  assert.equal(
    [...at].sort((a, b) => a - b),
    at,
    `out of order: ${lines.join(' < ')}`,
  );
};

test('acknowledged drain: the stop signal comes only after drained, no work interrupted', async () => {
  const p = run({ FIXTURE_WORK: '400,900' });
  await p.line('ready');
  p.kill('SIGTERM');
  const exit = await p.exit();
  assert.equal(exit.code, 0);
  order(
    p,
    'work start 1',
    p.stdout.find((l) => l.startsWith('drain remainingMs='))!,
    'work done 0',
    'work done 1',
    'signal SIGTERM',
  );
  assert.not.ok(p.stdout.some((l) => l.startsWith('work interrupted')));
  const logs = p.logs().map((l) => l.msg);
  assert.ok(logs.indexOf('client drained') < logs.indexOf('stop signal sent'));
  assert.equal(p.logs().find((l) => l.msg === 'drain ended')!.outcome, 'drained');
});

test('the drain message carries the deadline from the drain timeout', async () => {
  const p = run({ FIXTURE_WORK: '10000', DRAINGUARD_DRAIN_TIMEOUT: '7s' });
  await p.line('ready');
  p.kill('SIGTERM');
  const drain = await p.line(/^drain remainingMs=/);
  const remaining = Number(drain.split('=')[1]);
  assert.ok(remaining > 6000 && remaining <= 7000, `remainingMs ${remaining}`);
  p.kill('SIGTERM');
  await p.exit();
});

test('no acknowledgement: the stop signal comes at the drain deadline', async () => {
  const p = run({ FIXTURE_ACK: 'never', DRAINGUARD_DRAIN_TIMEOUT: '800ms' });
  await p.line('ready');
  p.kill('SIGTERM');
  const exit = await p.exit();
  assert.equal(exit.code, 0);
  order(p, 'ready', 'signal SIGTERM');
  const ended = p.logs().find((l) => l.msg === 'drain ended')!;
  assert.equal(ended.outcome, 'deadline');
  assert.ok((ended.durationMs as number) >= 790, `drain lasted ${ended.durationMs} ms`);
  assert.equal(ended.waitingFor, ['fixture']);
});

test('an operator that gives up at the announced deadline and acknowledges then is reported as deadline', async () => {
  // Several at once, on a busy machine: each must be timed from the deadline it was told.
  const runs = Array.from({ length: 4 }, () =>
    run({ FIXTURE_ACK: 'at-deadline', FIXTURE_WORK: '20000', DRAINGUARD_DRAIN_TIMEOUT: '600ms' }),
  );
  try {
    await Promise.all(runs.map((p) => p.line('ready')));
    for (const p of runs) p.kill('SIGTERM');
    for (const p of runs) {
      await p.exit();
      const ended = p.logs().find((l) => l.msg === 'drain ended')!;
      assert.equal(ended.outcome, 'deadline', `drain ended ${JSON.stringify(ended)}`);
    }
  } finally {
    for (const p of runs) p.killAll();
  }
});

test('no protocol client: the kill is passed on at once', async () => {
  const p = run({ FIXTURE_CONNECT: 'never', FIXTURE_WORK: '5000' });
  await p.line('ready');
  p.kill('SIGTERM');
  const exit = await p.exit();
  assert.equal(exit.code, 0);
  assert.equal(p.logs().find((l) => l.msg === 'drain ended')!.outcome, 'no-client');
  assert.ok(p.stdout.includes('work interrupted 0'), 'the untracked reconcile is killed: nobody asked to wait');
});

test("the child's exit code is passed through", async () => {
  const p = run({}, [], ['sh', '-c', 'exit 42']);
  assert.equal((await p.exit()).code, 42);
  assert.equal(p.logs().find((l) => l.msg === 'operator exited by itself')!.status, 42);
});

test('a crash during the drain ends the drain and its code is passed through', async () => {
  const p = run({ FIXTURE_ACK: 'crash', FIXTURE_WORK: '5000' });
  await p.line('ready');
  p.kill('SIGTERM');
  const exit = await p.exit();
  assert.equal(exit.code, 3);
  // The crash closes the connection and ends the process; whichever drainguard sees first ends the drain.
  assert.ok(['child-exited', 'disconnected'].includes(p.logs().find((l) => l.msg === 'drain ended')!.outcome as string));
  assert.equal(p.logs().find((l) => l.msg === 'operator exited')!.status, 3);
});

test('a child killed by signal N makes drainguard exit 128+N', async () => {
  const p = run({}, [], ['sh', '-c', 'kill -USR2 $$']);
  assert.equal((await p.exit()).code, 128 + 12);
  const p2 = run({ FIXTURE_ON_TERM: 'ignore' }, ['--stop-timeout', '300ms', '--drain-timeout', '0']);
  await p2.line('ready');
  p2.kill('SIGTERM');
  assert.equal((await p2.exit()).code, 128 + 9, 'SIGKILL after the stop timeout');
  assert.ok(p2.logs().some((l) => l.msg === 'stop timeout passed, operator killed'));
});

test('signals other than SIGTERM/SIGINT go to the child unchanged', async () => {
  const p = run({ FIXTURE_CONNECT: 'never' });
  await p.line('ready');
  for (const sig of ['SIGHUP', 'SIGUSR1', 'SIGUSR2', 'SIGWINCH', 'SIGQUIT', 'SIGALRM', 'SIGURG'] as const) {
    p.kill(sig);
    await p.line(`signal ${sig}`);
  }
  p.kill('SIGTERM');
  assert.equal((await p.exit()).code, 0);
});

test('SIGINT starts the drain like SIGTERM and the stop signal is configurable', async () => {
  const p = run({ FIXTURE_WORK: '300', DRAINGUARD_STOP_SIGNAL: 'SIGUSR2', FIXTURE_ON_TERM: 'exit' }, ['--stop-timeout', '500ms']);
  await p.line('ready');
  p.kill('SIGINT');
  await p.line('signal SIGUSR2');
  assert.not.ok(p.stdout.includes('signal SIGINT'), 'SIGINT itself is not forwarded');
  order(p, 'work done 0', 'signal SIGUSR2');
  assert.equal((await p.exit()).code, 137, 'the fixture ignores SIGUSR2, so SIGKILL follows');
});

test('a second SIGTERM cuts the drain short; later ones are not passed on again', async () => {
  const p = run({ FIXTURE_WORK: '20000', FIXTURE_TERM_CODE: '5' });
  await p.line('ready');
  p.kill('SIGTERM');
  await p.line(/^drain /);
  p.kill('SIGTERM');
  const exit = await p.exit();
  assert.equal(exit.code, 5);
  assert.equal(p.logs().find((l) => l.msg === 'drain ended')!.outcome, 'cut-short');
  assert.equal(p.stdout.filter((l) => l === 'signal SIGTERM').length, 1);
});

test('bad configuration exits 2 naming the variable, and the child is never started', async () => {
  const dir = tempDir();
  const marker = join(dir, 'started');
  const cases: [NodeJS.ProcessEnv, RegExp][] = [
    [{ DRAINGUARD_STOP_TIMEOUT: 'soon' }, /DRAINGUARD_STOP_TIMEOUT: expected a duration/],
    [{ DRAINGUARD_GRACE_PERIOD: '' }, /DRAINGUARD_GRACE_PERIOD: expected a duration/],
    [{ DRAINGUARD_STOP_SIGNAL: 'SIGNOPE' }, /DRAINGUARD_STOP_SIGNAL: expected a signal/],
    [{ DRAINGUARD_DRAIN_TIMEOUT: '40s' }, /DRAINGUARD_DRAIN_TIMEOUT: the drain timeout \(40s\)/],
    [{ DRAINGUARD_GUARD: 'clusterrole' }, /DRAINGUARD_GUARD: expected clusterrole\/NAME/],
    [{ DRAINGUARD_GUARD: 'clusterrole/x' }, /DRAINGUARD_POD_NAME, DRAINGUARD_POD_NAMESPACE, DRAINGUARD_POD_UID/],
    [{ DRAINGUARD_LOG_LEVEL: 'loud' }, /DRAINGUARD_LOG_LEVEL: expected one of debug, info, warn, error/],
    [{ DRAINGUARD_SOCKET: join(dir, 'missing', 's.sock') }, /DRAINGUARD_SOCKET: the directory .* does not exist/],
    [{ DRAINGUARD_SOCKET: marker + '.file' }, /exists and is not a socket/],
  ];
  writeFileSync(marker + '.file', '');
  for (const [env, message] of cases) {
    const p = run(env, [], ['sh', '-c', `touch ${marker}`]);
    const exit = await p.exit();
    assert.equal(exit.code, 2, JSON.stringify(env));
    assert.match(p.stderr.join('\n'), message);
    assert.not.ok(existsSync(marker), `child started with ${JSON.stringify(env)}`);
  }
  const flag = run({}, ['--drain-timeout', '-1'], ['sh', '-c', `touch ${marker}`]);
  assert.equal((await flag.exit()).code, 2);
  assert.match(flag.stderr.join('\n'), /--drain-timeout: expected a duration/);
  const missing = run({}, [], ['/nonexistent/operator']);
  assert.equal((await missing.exit()).code, 2);
  assert.match(missing.stderr.join('\n'), /cannot start "\/nonexistent\/operator": not found/);
});

test('a flag wins over its variable', async () => {
  const p = run({ DRAINGUARD_STOP_SIGNAL: 'nonsense' }, ['--stop-signal', 'USR1'], ['true']);
  // The variable is read and refused before the flag can win: both are validated.
  assert.equal((await p.exit()).code, 2);
  const q = run({ DRAINGUARD_DRAIN_TIMEOUT: '1h', FIXTURE_ACK: 'never' }, ['--drain-timeout', '300ms']);
  await q.line('ready');
  q.kill('SIGTERM');
  assert.equal((await q.exit()).code, 0);
  assert.equal(q.logs().find((l) => l.msg === 'drain started')!.timeoutMs, 300);
});

test('the socket is private (0600), exported to the child, and removed at exit', async () => {
  const dir = tempDir();
  const path = join(dir, 'drain.sock');
  const p = run(
    { DRAINGUARD_SOCKET: path, FIXTURE_CONNECT: 'never' },
    [],
    ['sh', '-c', 'echo "socket=$DRAINGUARD_SOCKET"; echo ready; exec sleep 100'],
  );
  await p.line('ready');
  assert.ok(p.stdout.includes(`socket=${path}`));
  const st = statSync(path);
  assert.ok(st.isSocket());
  assert.equal(st.mode & 0o777, 0o600);
  p.kill('SIGTERM');
  assert.equal((await p.exit()).code, 128 + 15);
  assert.not.ok(existsSync(path), 'socket file removed');

  const q = run({ FIXTURE_CONNECT: 'never' }, [], ['sh', '-c', 'echo "socket=$DRAINGUARD_SOCKET"; echo ready; exec sleep 100']);
  await q.line('ready');
  const own = q.stdout.find((l) => l.startsWith('socket='))!.slice(7);
  assert.equal(statSync(own).mode & 0o777, 0o600);
  assert.equal(statSync(join(own, '..')).mode & 0o777, 0o700);
  q.kill('SIGTERM');
  await q.exit();
  assert.not.ok(existsSync(join(own, '..')), 'private directory removed');
});

test('a stale socket left by a killed drainguard is replaced; a live one is refused', async () => {
  const dir = tempDir();
  const path = join(dir, 'drain.sock');
  const first = run({ DRAINGUARD_SOCKET: path, FIXTURE_CONNECT: 'never' });
  await first.line('ready');
  const second = run({ DRAINGUARD_SOCKET: path, FIXTURE_CONNECT: 'never' });
  assert.equal((await second.exit()).code, 2);
  assert.match(second.stderr.join('\n'), /in use by another process/);
  first.kill('SIGKILL');
  await first.processExit();
  // drainguard killed with SIGKILL cannot take its child along: the orphan is ours to end.
  process.kill(first.logs().find((l) => l.msg === 'operator started')!.pid as number, 'SIGKILL');
  await first.exit();
  const third = run({ DRAINGUARD_SOCKET: path, FIXTURE_WORK: '100' });
  await third.line('ready');
  third.kill('SIGTERM');
  assert.equal((await third.exit()).code, 0);
  assert.ok(third.logs().some((l) => l.msg === 'client drained'));
});

test('a grandchild holding stdout open does not keep drainguard waiting', async () => {
  const p = run({ FIXTURE_CONNECT: 'never', FIXTURE_CHILDREN: 'session' }, ['--signal-target', 'child']);
  await p.line('ready');
  const grandchild = Number(p.stdout.find((l) => l.startsWith('sleeper '))!.split(' ')[1]);
  p.kill('SIGTERM');
  const exit = await p.processExit();
  assert.equal(exit.code, 0);
  process.kill(grandchild, 'SIGKILL');
  await p.exit();
});

test.run();
