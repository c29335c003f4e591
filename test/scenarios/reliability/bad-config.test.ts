// Bad configuration, against the built executable: every option of
// `drainguard run`, as a variable and as a flag, with every kind of wrong
// value. Each must end in exit 2 before the operator is started, with one
// message that names the variable (or flag) and says what to write instead.

import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import { type AddressInfo, createServer } from 'node:net';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { optionsFor } from '../../../src/config/load.ts';
import { envName } from '../../../src/config/options.ts';
import { NOBODY, copyForUser } from '../../support/other-user.ts';
import { EXE, tempDir } from '../../support/proc.ts';
import { within } from '../../support/wait.ts';

interface Case {
  /** The option the case is about: its variable or flag must be named. */
  readonly option: string;
  readonly value: string;
  /** Other settings the case needs (variables). */
  readonly with?: NodeJS.ProcessEnv;
  /** What the message must say besides the name: the expected form, or the fix. */
  readonly fix: RegExp;
  /** The name the message must carry, when it is another setting's rule that is broken. */
  readonly names?: string;
  /** Not repeated as a flag (the value only makes sense as a variable, or the flag's case is elsewhere). */
  readonly envOnly?: boolean;
  readonly uid?: number;
}

const dir = tempDir();
chmodSync(dir, 0o777);
const aFile = join(dir, 'a-file');
writeFileSync(aFile, '');
const readOnly = join(dir, 'read-only');
mkdirSync(readOnly, { mode: 0o555 });
chmodSync(readOnly, 0o555);
// Root writes anywhere: the not-writable case then runs as nobody, from a copy of the executable nobody can reach.
const asNobody = process.getuid?.() === 0 ? NOBODY : undefined;
const liveSocket = join(dir, 'live.sock');

const DURATION = /expected a duration such as 500ms, 30s, 2m or a number of seconds/;
const AT_MOST_A_DAY = /expected a duration of at most 24h/;
const SIGNAL = /expected a signal name or number such as SIGTERM, TERM or 15/;
const GUARD_FORMS =
  /expected comma-separated clusterrole\/NAME, clusterrolebinding\/NAME, role\/NAMESPACE\/NAME, rolebinding\/NAMESPACE\/NAME or serviceaccount\/NAMESPACE\/NAME/;
const POD = { DRAINGUARD_POD_NAME: 'op-0', DRAINGUARD_POD_NAMESPACE: 'ops', DRAINGUARD_POD_UID: '6f1c2b9e-0d7a-4c1e-9a57-2f0c8e4b1d33' };
const durations = (option: string): Case[] => [
  { option, value: '', fix: DURATION },
  { option, value: '   ', fix: DURATION },
  { option, value: '-1', fix: DURATION },
  { option, value: '-5s', fix: DURATION },
  { option, value: 'soon', fix: DURATION },
  { option, value: '30sec', fix: DURATION },
  { option, value: '5 s', fix: DURATION },
  { option, value: '1e3', fix: DURATION },
  { option, value: 'Infinity', fix: DURATION },
  { option, value: '25h', fix: AT_MOST_A_DAY },
  { option, value: '86401', fix: AT_MOST_A_DAY },
];

function cases(httpInUse: number): Case[] {
  return [
    { option: 'socket', value: '', fix: /expected the path of a Unix socket, such as \/run\/drainguard\/drain.sock/ },
    { option: 'socket', value: ' ', fix: /expected the path of a Unix socket/ },
    { option: 'socket', value: aFile, fix: /exists and is not a socket; remove it or choose another path/ },
    { option: 'socket', value: dir, fix: /exists and is not a socket; remove it or choose another path/ },
    { option: 'socket', value: join(dir, 'missing', 'drain.sock'), fix: /does not exist; create it or choose another path/ },
    { option: 'socket', value: join(aFile, 'drain.sock'), fix: /is not a directory, so the socket .* cannot be made there/ },
    { option: 'socket', value: `/tmp/${'s'.repeat(110)}.sock`, fix: /at most 107 bytes \(the Unix socket limit\)/ },
    { option: 'socket', value: liveSocket, fix: /is in use by another process; choose another path/ },
    {
      option: 'socket',
      value: join(readOnly, 'drain.sock'),
      fix: /EACCES; this user may not create files in .*; choose a writable directory/,
      uid: asNobody,
    },
    ...durations('grace-period'),
    {
      option: 'grace-period',
      value: '3s',
      names: 'DRAINGUARD_STOP_TIMEOUT',
      fix: /stop timeout \(5s\) must be shorter than the grace period \(3s\); lower it or raise DRAINGUARD_GRACE_PERIOD/,
      envOnly: true,
    },
    ...durations('drain-timeout'),
    {
      option: 'drain-timeout',
      value: '40s',
      fix: /the drain timeout \(40s\) plus the stop timeout \(5s\) must fit in the grace period \(30s\).*lower it to at most 25s/,
    },
    { option: 'drain-timeout', value: '26s', fix: /lower it to at most 25s/ },
    {
      option: 'drain-timeout',
      value: '9s',
      with: { DRAINGUARD_GRACE_PERIOD: '10s', DRAINGUARD_STOP_TIMEOUT: '2s' },
      fix: /must fit in the grace period \(10s\).*lower it to at most 8s/,
    },
    ...['', 'SIGNOPE', 'NOPE', '0', '65', '-15', 'SIG TERM', 'SIGTERM,SIGINT'].map((value) => ({
      option: 'stop-signal',
      value,
      fix: SIGNAL,
    })),
    ...['SIGNOPE', 'QUIT;HUP', '99', 'SIGQUIT,,NOPE'].map((value) => ({
      option: 'drain-signals',
      value,
      fix: /expected signal names or numbers separated by commas, such as SIGQUIT,SIGHUP/,
    })),
    ...['SIGKILL', 'SIGQUIT,SIGSTOP', 'SIGSEGV', 'SIGPIPE', 'CHLD'].map((value) => ({
      option: 'drain-signals',
      value,
      fix: /expected signals drainguard can catch \(SIG[A-Z]+ (cannot be caught|is not one drainguard catches)\)/,
    })),
    ...['', 'Bad Name!', 'UPPER', '-lease', `${'a'.repeat(254)}`].map((value) => ({
      option: 'leader-lease',
      value,
      fix: /expected auto, off, or the name of the operator's leader Lease/,
    })),
    ...['SIGSTOP', 'SIGCHLD', '19'].map((value) => ({
      option: 'stop-signal',
      value,
      fix: /expected a signal that stops a process \(not SIGSTOP or SIGCHLD\)/,
    })),
    ...durations('stop-timeout'),
    {
      option: 'stop-timeout',
      value: '30s',
      fix: /must be shorter than the grace period \(30s\); lower it or raise DRAINGUARD_GRACE_PERIOD/,
    },
    { option: 'stop-timeout', value: '1h', fix: /must be shorter than the grace period/ },
    { option: 'node-shutdown-grace', value: 'abc', fix: /expected a duration such as 500ms, 30s, 2m or a number of seconds, got "abc"/ },
    { option: 'node-pressure-grace', value: 'abc', fix: /expected a duration such as 500ms, 30s, 2m or a number of seconds, got "abc"/ },
    { option: 'eviction-responder', value: 'on', fix: /expected one of auto, off/ },
    { option: 'drain-signals', value: 'SIGKILL', fix: /expected signals drainguard can catch \(SIGKILL cannot be caught\)/ },
    {
      option: 'drain-signals',
      value: 'NOPE',
      fix: /expected signal names or numbers separated by commas, such as SIGQUIT,SIGHUP, got "NOPE"/,
    },
    ...['', 'pgroup', 'both', 'session'].map((value) => ({ option: 'signal-target', value, fix: /expected one of group, child/ })),
    { option: 'guard', value: 'clusterrole', fix: /expected clusterrole\/NAME, got "clusterrole"/, with: POD },
    { option: 'guard', value: 'clusterrole/a/b', fix: /expected clusterrole\/NAME, got "clusterrole\/a\/b"/, with: POD },
    { option: 'guard', value: 'role/ns', fix: /expected role\/NAMESPACE\/NAME, got "role\/ns"/, with: POD },
    { option: 'guard', value: 'clusterrole/', fix: /expected clusterrole\/NAME where NAME is the object's name/, with: POD },
    { option: 'guard', value: 'clusterrole/a b', fix: /expected clusterrole\/NAME where NAME is the object's name/, with: POD },
    { option: 'guard', value: 'clusterrole/..', fix: /expected clusterrole\/NAME where NAME is the object's name/, with: POD },
    {
      option: 'guard',
      value: 'rolebinding/Bad_NS/x',
      fix: /expected rolebinding\/NAMESPACE\/NAME where NAMESPACE is a valid namespace name/,
      with: POD,
    },
    { option: 'guard', value: 'deployment/x', fix: GUARD_FORMS, with: POD },
    { option: 'guard', value: 'clusterrole/op,configmap/ns/x', fix: GUARD_FORMS, with: POD },
    {
      option: 'guard',
      value: 'clusterrole/op',
      fix: /needs to know its pod: set DRAINGUARD_POD_NAME, DRAINGUARD_POD_NAMESPACE, DRAINGUARD_POD_UID from the downward API/,
    },
    {
      option: 'guard',
      value: 'clusterrole/op',
      with: { DRAINGUARD_POD_NAME: 'op-0' },
      fix: /set DRAINGUARD_POD_NAMESPACE, DRAINGUARD_POD_UID from the downward API/,
    },
    {
      option: 'guard',
      value: 'clusterrole/op',
      with: { ...POD, KUBECONFIG: join(dir, 'no-kubeconfig') },
      fix: /needs the Kubernetes API: KUBECONFIG names no file that exists/,
      envOnly: true,
    },
    ...durations('lease-duration'),
    ...[
      'installations',
      'deployments.apps',
      'Installations.operator.tigera.io',
      'installations.',
      '.operator.tigera.io',
      'installations/operator.tigera.io',
      'a.b.c,bad',
    ].map((value) => ({
      option: 'hold',
      value,
      fix: /expected comma-separated custom resource kinds as PLURAL.GROUP, such as installations.operator.tigera.io/,
      with: POD,
    })),
    {
      option: 'hold',
      value: 'installations.operator.tigera.io',
      fix: /needs to know its pod: set DRAINGUARD_POD_NAME, DRAINGUARD_POD_NAMESPACE, DRAINGUARD_POD_UID from the downward API/,
    },
    ...durations('hold-timeout'),
    ...durations('hold-settle'),
    ...['', 'Op-0', 'op_0', `${'p'.repeat(254)}`].map((value) => ({
      option: 'pod-name',
      value,
      fix: /the pod's name .* fieldRef metadata.name; set it from the downward API/,
    })),
    ...['', 'Ops', 'kube_system', 'n'.repeat(64)].map((value) => ({
      option: 'pod-namespace',
      value,
      fix: /the pod's namespace .* fieldRef metadata.namespace; set it from the downward API/,
    })),
    ...['', ' ', 'UID', 'a/b', '$(POD_UID)', 'u'.repeat(57)].map((value) => ({
      option: 'pod-uid',
      value,
      fix: /the pod's UID .* fieldRef metadata.uid; set it from the downward API/,
    })),
    ...['', '9404', ':99999', 'localhost:http', 'localhost:'].map((value) => ({
      option: 'http-addr',
      value,
      fix: /expected HOST:PORT such as 127.0.0.1:9404, :9404 or \[::1\]:9404/,
    })),
    // Found when listening, where only the variable's name is known.
    { option: 'http-addr', value: `127.0.0.1:${httpInUse}`, fix: /cannot listen on 127.0.0.1:\d+: EADDRINUSE/, envOnly: true },
    ...['', 'metrics', '127.0.0.1:8080/metrics', 'ftp://127.0.0.1/metrics', 'file:///metrics'].map((value) => ({
      option: 'idle-metrics',
      value,
      fix: /expected an http or https URL such as http:\/\/127.0.0.1:8080\/metrics/,
    })),
    ...['', 'loud', 'trace', 'verbose'].map((value) => ({ option: 'log-level', value, fix: /expected one of debug, info, warn, error/ })),
    ...['', 'xml', 'yaml'].map((value) => ({ option: 'log-format', value, fix: /expected one of json, text/ })),
  ];
}

interface Outcome {
  readonly status: number | null;
  readonly stderr: string;
  readonly started: boolean;
}

/** Runs `drainguard run ARGS -- touch MARKER` and reports whether the operator ran. */
async function attempt(args: readonly string[], env: NodeJS.ProcessEnv, uid?: number): Promise<Outcome> {
  const work = tempDir();
  chmodSync(work, 0o777);
  const marker = join(work, 'started');
  const child = spawn(uid === undefined ? EXE : copyForUser(uid), ['run', ...args, '--', 'touch', marker], {
    env: { PATH: process.env.PATH, TMPDIR: work, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(uid !== undefined && { uid, gid: uid }),
  });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  child.stdout.resume();
  const status = await within(
    15_000,
    `drainguard run ${args.join(' ')}`,
    new Promise<number | null>((r) => child.on('close', (code) => r(code))),
  );
  const leftovers = readdirSync(work).filter((f) => f !== 'started');
  assert.equal(leftovers, [], 'nothing left behind in TMPDIR');
  return { status, stderr, started: existsSync(marker) };
}

function check(outcome: Outcome, name: string, fix: RegExp, what: string): void {
  assert.equal(outcome.status, 2, `${what}: exit status\n${outcome.stderr}`);
  assert.not.ok(outcome.started, `${what}: the operator was started`);
  const lines = outcome.stderr.split('\n').filter(Boolean);
  const message = lines.at(-1) ?? '';
  assert.ok(message.startsWith('drainguard run: '), `${what}: ${outcome.stderr}`);
  assert.ok(message.includes(name), `${what}: the message does not name ${name}: ${message}`);
  assert.match(message, fix, `${what}: the message does not say what to do: ${message}`);
  assert.not.match(outcome.stderr, /\n\s+at /, `${what}: a stack trace`);
}

/** Runs `work` over `items`, `n` at a time. */
async function inParallel<T>(items: readonly T[], n: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: n }, async () => {
      while (next < items.length) await work(items[next++]!);
    }),
  );
}

test('every option of drainguard run, every kind of wrong value, as variable and as flag: exit 2, named, fix given, nothing started', async () => {
  const live = createServer().listen(liveSocket);
  const http = createHttpServer().listen(0, '127.0.0.1');
  await within(
    5000,
    'listeners',
    Promise.all([new Promise((r) => live.once('listening', r)), new Promise((r) => http.once('listening', r))]),
  );
  const all = cases((http.address() as AddressInfo).port);
  const byFlag = new Map(optionsFor('run').map((o) => [o.flag, o]));
  let runs = 0;
  // The flag form of each option's first case, and of every case found after parsing (where the source must be carried along).
  const flagged = new Set(all.filter((c, i) => all.findIndex((d) => d.option === c.option) === i || c.option === 'socket'));
  try {
    await inParallel(all, 4, async (c) => {
      const spec = byFlag.get(c.option);
      assert.ok(spec, `no option --${c.option} for run`);
      const variable = envName(spec);
      const what = `${variable}=${JSON.stringify(c.value)}${c.with ? ` with ${JSON.stringify(c.with)}` : ''}`;
      check(await attempt([], { ...c.with, [variable]: c.value }, c.uid), c.names ?? variable, c.fix, what);
      runs++;
      if (c.envOnly || c.names || !flagged.has(c)) return;
      const flag = `--${c.option}`;
      check(await attempt([`${flag}=${c.value}`], { ...c.with }, c.uid), flag, c.fix, `${flag}=${JSON.stringify(c.value)}`);
      runs++;
    });
  } finally {
    live.close();
    http.close();
  }
  console.log(`  ${all.length} wrong values, ${runs} runs of the executable`);

  // Every option drainguard run reads has its wrong values here.
  const covered = new Set(all.map((c) => c.option));
  assert.equal(
    optionsFor('run')
      .map((o) => o.flag)
      .filter((f) => !covered.has(f)),
    [],
    'options of run without a bad-value case',
  );
});

test('the options only drainguard sidecar has, and shared ones through the sidecar: exit 2 before it listens', async () => {
  const sidecarOnly = optionsFor('sidecar')
    .filter((o) => !optionsFor('run').some((r) => r.flag === o.flag))
    .map((o) => o.flag);
  const cases: Case[] = [
    { option: 'prestop-token', value: 'short', fix: /expected a token of at least 16 characters without spaces/ },
    { option: 'prestop-token', value: '', fix: /expected a token of at least 16 characters/ },
    { option: 'prestop-token-file', value: join(dir, 'no-token'), fix: /cannot read the token file .*no-token: ENOENT/ },
    { option: 'prestop-token-file', value: '', fix: /expected a non-empty value/ },
    {
      option: 'prestop-token',
      value: 'a'.repeat(20),
      with: { DRAINGUARD_PRESTOP_TOKEN_FILE: aFile },
      fix: /both set; give the preStop token one way only/,
    },
    { option: 'operator-container', value: 'Manager_1', fix: /expected container names separated by commas, such as manager/ },
    { option: 'operator-container', value: ',', fix: /expected container names separated by commas/ },
    { option: 'drain-timeout', value: '40s', fix: /lower it to at most 25s/ },
    { option: 'socket', value: aFile, fix: /exists and is not a socket; remove it or choose another path/ },
    { option: 'http-addr', value: 'nope', fix: /expected HOST:PORT/ },
  ];
  assert.equal(
    sidecarOnly.filter((f) => !cases.some((c) => c.option === f)),
    [],
    'sidecar options without a bad-value case',
  );
  const byFlag = new Map(optionsFor('sidecar').map((o) => [o.flag, o]));
  await inParallel(cases, 4, async (c) => {
    const variable = envName(byFlag.get(c.option)!);
    const socketDir = tempDir();
    const socket = c.option === 'socket' ? c.value : join(socketDir, 'drain.sock');
    const child = spawn(EXE, ['sidecar'], {
      env: {
        PATH: process.env.PATH,
        HOME: socketDir,
        DRAINGUARD_SOCKET: socket,
        DRAINGUARD_HTTP_ADDR: '127.0.0.1:0',
        ...c.with,
        [variable]: c.value,
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const status = await within(10_000, `sidecar with ${variable}`, new Promise((r) => child.on('close', r)));
    const what = `${variable}=${JSON.stringify(c.value)}`;
    assert.equal(status, 2, `${what}: ${stderr}`);
    const line = stderr.trim().split('\n').at(-1)!;
    // The error's code (docs/errors.md) stands between the command and the message.
    assert.match(line, /^drainguard sidecar: DG_[A-Z_]+: /, `${what}: ${line}`);
    const message = line.replace(/^(drainguard sidecar: )DG_[A-Z_]+: /, '$1');
    assert.ok(message.startsWith(`drainguard sidecar: ${c.names ?? variable}`), `${what}: ${message}`);
    assert.match(message, c.fix, what);
    // The socket is claimed after the HTTP listener started: that one may have been up for a moment.
    assert.not.match(stderr, /sidecar ready/, `${what}: it started serving`);
    if (c.option !== 'socket') assert.equal(readdirSync(socketDir), [], `${what}: a socket was made`);
  });
});

test('usage errors: no command, an unknown flag, a flag without its value, a flag twice, a command not found', async () => {
  const usage: [string[], RegExp][] = [
    [['run'], /needs a command: drainguard run \[OPTIONS\] -- COMMAND/],
    [['run', '--'], /needs a command: drainguard run \[OPTIONS\] -- COMMAND/],
    [['run', '--drain-timout=5s', '--', 'true'], /unknown option --drain-timout for 'drainguard run' \(see 'drainguard run --help'\)/],
    [['run', '--drain-timeout'], /option --drain-timeout needs a value \(DURATION\)/],
    [['run', '--stop-timeout=1s', '--stop-timeout=2s', '--', 'true'], /option --stop-timeout given twice/],
    [['run', '--', join(dir, 'no-such-operator')], /cannot start ".*no-such-operator": not found/],
    [['run', '--', aFile], /cannot start ".*a-file": permission denied/],
  ];
  for (const [argv, message] of usage) {
    const child = spawn(EXE, argv, { env: { PATH: process.env.PATH }, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const status = await within(10_000, argv.join(' '), new Promise((r) => child.on('close', r)));
    assert.equal(status, 2, `${argv.join(' ')}: ${stderr}`);
    assert.match(stderr, message);
  }
});

test('no writable TMPDIR for the private socket: exit 2 naming TMPDIR and DRAINGUARD_SOCKET', async () => {
  const outcome = await attempt([], {});
  assert.equal(outcome.status, 0, 'the control: a writable TMPDIR works');
  const child = spawn(EXE, ['run', '--', 'true'], {
    env: { PATH: process.env.PATH, TMPDIR: join(dir, 'missing') },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  assert.equal(await within(10_000, 'exit', new Promise((r) => child.on('close', r))), 2, stderr);
  assert.match(
    stderr,
    /cannot make a private directory for the drain socket in .*missing: ENOENT; set TMPDIR to a writable directory, or DRAINGUARD_SOCKET to a socket path/,
  );
});

test.run();
