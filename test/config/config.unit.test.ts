import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parseDuration } from '../../src/config/duration.ts';
import { parseGuardList } from '../../src/config/guard-list.ts';
import { parseArgs } from '../../src/config/load.ts';
import { parseSignal } from '../../src/config/signals.ts';
import { resolveSupervisorConfig } from '../../src/config/supervisor.ts';

test('durations: units, compounds and bare seconds', () => {
  assert.is(parseDuration('500ms'), 500);
  assert.is(parseDuration('30s'), 30_000);
  assert.is(parseDuration('2m'), 120_000);
  assert.is(parseDuration('1m30s'), 90_000);
  assert.is(parseDuration('1h'), 3_600_000);
  assert.is(parseDuration('30'), 30_000);
  assert.is(parseDuration('1.5'), 1500);
  for (const bad of ['', ' ', '-1', '5x', 's', '1s2', 'ms', '1 s', 'NaN', 'Infinity', '1e3']) assert.is(parseDuration(bad), undefined, bad);
});

test('signals by name, short name and number', () => {
  assert.is(parseSignal('SIGTERM'), 'SIGTERM');
  assert.is(parseSignal('term'), 'SIGTERM');
  assert.is(parseSignal('15'), 'SIGTERM');
  assert.is(parseSignal('SIGUSR1'), 'SIGUSR1');
  assert.is(parseSignal('SIGNOPE'), undefined);
  assert.is(parseSignal('99'), undefined);
});

test('drain signals: names, short names and numbers, each once by its conventional name; uncatchable ones refused with the reason', () => {
  const drainSignals = (value: string) => parseArgs('run', ['--', 'x'], { DRAINGUARD_DRAIN_SIGNALS: value }).values.drainSignals;
  assert.equal(drainSignals('QUIT, 1,SIGIOT,sigquit, SIGPOLL'), ['SIGQUIT', 'SIGHUP', 'SIGABRT', 'SIGIO']);
  assert.equal(drainSignals('SIGTSTP,SIGTERM'), ['SIGTSTP', 'SIGTERM']);
  assert.is(drainSignals(''), undefined, 'an empty variable leaves it unset, as a manifest unsets it');
  assert.equal(resolveSupervisorConfig(parseArgs('run', ['--', 'x'], {})).drainSignals, [], 'none besides SIGTERM and SIGINT by default');
  assert.throws(() => drainSignals('SIGNOPE'), /DRAINGUARD_DRAIN_SIGNALS: expected signal names or numbers separated by commas/);
  assert.throws(() => drainSignals('SIGQUIT,SIGKILL'), /expected signals drainguard can catch \(SIGKILL cannot be caught\)/);
  assert.throws(() => drainSignals('STOP'), /SIGSTOP cannot be caught/);
  for (const sig of ['SIGSEGV', 'SIGPIPE', 'SIGCHLD', 'SIGBUS'])
    assert.throws(() => drainSignals(sig), new RegExp(`\\(${sig} is not one drainguard catches\\)`), sig);
  assert.throws(() => parseArgs('run', ['--drain-signals=9', '--', 'x'], {}), /--drain-signals: expected signals drainguard can catch/);
});

test('guard entries', () => {
  assert.equal(parseGuardList('clusterrole/system:op, clusterrolebinding/op,role/ns/r,serviceaccount/ns/sa,role/ns/r', 'G'), [
    { kind: 'clusterrole', name: 'system:op' },
    { kind: 'clusterrolebinding', name: 'op' },
    { kind: 'role', namespace: 'ns', name: 'r' },
    { kind: 'serviceaccount', namespace: 'ns', name: 'sa' },
  ]);
  assert.throws(() => parseGuardList('deployment/x', 'G'), /unknown kind "deployment"/);
  assert.throws(() => parseGuardList('role/x', 'G'), /role\/NAMESPACE\/NAME/);
  assert.throws(() => parseGuardList('clusterrole/a/b', 'G'), /clusterrole\/NAME/);
  assert.throws(() => parseGuardList('role/Bad_NS/x', 'G'), /valid namespace/);
});

test('flags win over variables; each value names its source in errors', () => {
  const args = parseArgs('run', ['--stop-timeout=1s', '--', 'x'], { DRAINGUARD_STOP_TIMEOUT: '3s', DRAINGUARD_GRACE_PERIOD: '10s' });
  assert.is(args.values.stopTimeoutMs, 1000);
  assert.is(args.values.gracePeriodMs, 10_000);
  assert.equal(args.positionals, ['x']);
  const config = resolveSupervisorConfig(args);
  assert.is(config.drainTimeoutMs, 10_000 - 1000 - 2000, 'grace period - stop timeout - 2s');
  assert.throws(() => parseArgs('run', ['--stop-timeout'], {}), /--stop-timeout needs a value/);
  assert.throws(() => parseArgs('run', ['--nope'], {}), /unknown option --nope/);
  assert.throws(
    () => resolveSupervisorConfig(parseArgs('run', [], { DRAINGUARD_STOP_TIMEOUT: '30s' })),
    /DRAINGUARD_STOP_TIMEOUT: the stop timeout \(30s\) must be shorter than the grace period \(30s\)/,
  );
  const positional = parseArgs('run', ['./manager', '--leader-elect'], {}, { stopAtPositional: true });
  assert.equal(positional.positionals, ['./manager', '--leader-elect'], 'options after the command belong to it');
});

test("a supervisor's config: the options table's defaults, given values, what is resolved", () => {
  const defaults = {
    gracePeriodMs: 30_000,
    gracePeriodSource: 'default',
    nodeShutdownGraceMs: undefined,
    nodePressureGraceMs: undefined,
    drainTimeoutMs: 23_000,
    drainTimeoutExplicit: false,
    stopSignal: 'SIGTERM',
    drainSignals: [],
    stopTimeoutMs: 5_000,
    signalTarget: 'group',
    guard: [],
    hold: [],
    holdTimeoutMs: 300_000,
    holdSettleMs: 5_000,
    leaseDurationMs: 60_000,
    leaderLease: 'auto',
    evictionResponder: 'auto',
    pod: { name: undefined, namespace: undefined, uid: undefined },
    operatorContainers: [],
    prestopToken: undefined,
    idleMetrics: undefined,
    logLevel: 'info',
    logFormat: undefined,
    socketSource: 'DRAINGUARD_SOCKET',
  };
  assert.equal({ ...resolveSupervisorConfig(parseArgs('run', ['--', 'x'], {})) }, { ...defaults, socket: undefined, httpAddr: undefined });
  assert.equal(
    { ...resolveSupervisorConfig(parseArgs('sidecar', [], {})) },
    { ...defaults, socket: '/run/drainguard/drain.sock', httpAddr: { host: '127.0.0.1', port: 9404 } },
  );
  const pod = { DRAINGUARD_POD_NAME: 'p', DRAINGUARD_POD_NAMESPACE: 'ns', DRAINGUARD_POD_UID: 'u-1' };
  const config = resolveSupervisorConfig(
    parseArgs('run', ['--socket', '/tmp/s', '--drain-timeout', '4s', '--hold', 'widgets.example.com', '--', 'x'], {
      ...pod,
      DRAINGUARD_STOP_SIGNAL: 'INT',
      DRAINGUARD_LEADER_LEASE: 'off',
    }),
  );
  assert.equal(
    [config.socket, config.socketSource, config.drainTimeoutMs, config.drainTimeoutExplicit, config.stopSignal, config.leaderLease],
    ['/tmp/s', '--socket', 4000, true, 'SIGINT', 'off'],
  );
  assert.equal(config.hold, [{ plural: 'widgets', group: 'example.com' }]);
  assert.equal(config.pod, { name: 'p', namespace: 'ns', uid: 'u-1' });
  assert.ok(Object.isFrozen(config));
});

test('a guard without its pod, and the preStop token given twice: the messages name the variables or flags used', () => {
  assert.throws(
    () => resolveSupervisorConfig(parseArgs('run', ['--', 'x'], { DRAINGUARD_GUARD: 'clusterrole/op', DRAINGUARD_POD_NAME: 'p' })),
    /DRAINGUARD_GUARD is set, so drainguard needs to know its pod: set DRAINGUARD_POD_NAMESPACE, DRAINGUARD_POD_UID from the downward API/,
  );
  assert.throws(
    () =>
      resolveSupervisorConfig(parseArgs('sidecar', ['--pod-uid', 'u-1', '--hold', 'widgets.example.com'], { DRAINGUARD_POD_NAME: 'p' })),
    /--hold is set, so drainguard needs to know its pod: set DRAINGUARD_POD_NAMESPACE from the downward API/,
  );
  const token = 'a-token-of-more-than-16-characters';
  assert.throws(
    () =>
      resolveSupervisorConfig(parseArgs('sidecar', ['--prestop-token-file', '/run/secrets/token'], { DRAINGUARD_PRESTOP_TOKEN: token })),
    /DRAINGUARD_PRESTOP_TOKEN and --prestop-token-file are both set; give the preStop token one way only/,
  );
  const deprecated = resolveSupervisorConfig(parseArgs('sidecar', ['--prestop-token', token], {})).prestopToken;
  assert.match(deprecated?.deprecation ?? '', /^--prestop-token is deprecated: .*name the file in DRAINGUARD_PRESTOP_TOKEN_FILE$/);
});

test.run();
