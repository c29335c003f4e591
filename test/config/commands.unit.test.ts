// Each command's options resolved once: defaults from the options table, flags
// over variables, frozen, and the rules about arguments checked up front with
// their codes.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import {
  resolveCheckConfig,
  resolveInstallConfig,
  resolvePredeleteConfig,
  resolvePrestopConfig,
  resolveReleaseConfig,
  resolveStatusConfig,
} from '../../src/config/commands.ts';
import { ConfigError } from '../../src/errors.ts';
import { parseArgs } from '../../src/config/load.ts';
import {
  CHECK_OPTIONS,
  type Command,
  EVERY_OPTION,
  OPTIONS,
  type OptionSpec,
  PREDELETE_OPTIONS,
  RELEASE_OPTIONS,
  STATUS_OPTIONS,
  defaultShown,
} from '../../src/config/options.ts';
import { resolveSupervisorConfig } from '../../src/config/supervisor.ts';
import type { UsageErrorCode } from '../../src/errors.ts';

const EXTRA: Partial<Record<Command, readonly OptionSpec[]>> = {
  check: CHECK_OPTIONS,
  predelete: PREDELETE_OPTIONS,
  release: RELEASE_OPTIONS,
  status: STATUS_OPTIONS,
};
const args = (command: Command, argv: string[], env: NodeJS.ProcessEnv = {}) => parseArgs(command, argv, env, { extra: EXTRA[command] });

function throwsCode(fn: () => unknown, code: UsageErrorCode, message: RegExp): void {
  try {
    fn();
  } catch (err) {
    assert.instance(err, ConfigError);
    assert.is((err as ConfigError).code, code);
    assert.match((err as Error).message, message);
    return;
  }
  assert.unreachable(`expected ${code}`);
}

test('prestop: the sidecar socket by default, a flag over its variable; frozen', () => {
  const byDefault = resolvePrestopConfig(args('prestop', []));
  assert.equal(byDefault, { logLevel: 'info', logFormat: undefined, socket: '/run/drainguard/drain.sock', drainTimeoutMs: undefined });
  assert.ok(Object.isFrozen(byDefault));
  const given = resolvePrestopConfig(
    args('prestop', ['--socket', '/x/flag.sock', '--drain-timeout=3s'], { DRAINGUARD_SOCKET: '/x/env.sock', DRAINGUARD_LOG_LEVEL: 'warn' }),
  );
  assert.equal([given.socket, given.drainTimeoutMs, given.logLevel], ['/x/flag.sock', 3000, 'warn']);
});

test('run and sidecar: the default socket and HTTP listener differ by command', () => {
  const run = resolveSupervisorConfig(args('run', []));
  const sidecar = resolveSupervisorConfig(args('sidecar', []));
  assert.equal([run.socket, run.httpAddr], [undefined, undefined]);
  assert.equal([sidecar.socket, sidecar.httpAddr], ['/run/drainguard/drain.sock', { host: '127.0.0.1', port: 9404 }]);
  assert.equal(
    [sidecar.gracePeriodMs, sidecar.stopTimeoutMs, sidecar.leaseDurationMs, sidecar.stopSignal, sidecar.signalTarget],
    [30_000, 5_000, 60_000, 'SIGTERM', 'group'],
  );
});

test('release: objects must be named, --all needs --yes', () => {
  throwsCode(() => resolveReleaseConfig(args('release', [])), 'DG_CONFIG_ARGUMENTS', /name the objects to release/);
  throwsCode(() => resolveReleaseConfig(args('release', ['--all-objects', '--all'])), 'DG_CONFIG_CONFIRM', /add --yes to confirm/);
  const config = resolveReleaseConfig(args('release', ['--all', '--yes'], { DRAINGUARD_GUARD: 'clusterrole/op', DRAINGUARD_WAIT: '2s' }));
  assert.equal([config.targets, config.allObjects, config.all, config.waitMs], [[{ kind: 'clusterrole', name: 'op' }], false, true, 2000]);
});

test('release --delete: the guard forms and the admission policy by name, a malformed policy item named with its form', () => {
  const config = resolveReleaseConfig(
    args('release', ['--delete', 'clusterrole/dg,validatingadmissionpolicy/dg.ns.op'], { DRAINGUARD_GUARD: 'clusterrole/op' }),
  );
  assert.equal(config.remove, [
    { kind: 'clusterrole', name: 'dg' },
    { kind: 'validatingadmissionpolicy', name: 'dg.ns.op' },
  ]);
  throwsCode(
    () =>
      resolveReleaseConfig(args('release', ['--delete', 'validatingadmissionpolicybinding/ns/dg'], { DRAINGUARD_GUARD: 'clusterrole/op' })),
    'DG_CONFIG_GUARD_LIST',
    /validatingadmissionpolicybinding\/NAME \(validatingadmissionpolicy, validatingadmissionpolicybinding are cluster-scoped\)/,
  );
});

test('status: no list means every object with a holder; -o json', () => {
  const all = resolveStatusConfig(args('status', []));
  assert.equal([all.targets, all.allObjects, all.output], [[], true, 'text']);
  const named = resolveStatusConfig(args('status', ['-o', 'json'], { DRAINGUARD_GUARD: 'role/ns/r' }));
  assert.equal([named.allObjects, named.output], [false, 'json']);
  throwsCode(() => args('status', ['-o', 'yaml']), 'DG_CONFIG_CHOICE', /-o: expected one of text, json, got "yaml"/);
});

test('predelete: at least one RESOURCE; the 5m timeout and background propagation by default', () => {
  throwsCode(() => resolvePredeleteConfig(args('predelete', [])), 'DG_CONFIG_ARGUMENTS', /needs at least one RESOURCE/);
  const config = resolvePredeleteConfig(args('predelete', ['-n', 'ops', 'widgets.example.com'], { DRAINGUARD_NAMESPACE: 'other' }));
  assert.equal(config, {
    logLevel: 'info',
    logFormat: undefined,
    resources: ['widgets.example.com'],
    namespace: 'ops',
    allNamespaces: false,
    timeoutMs: 300_000,
    order: false,
    propagation: 'Background',
    requireReady: undefined,
  });
});

test('install: exactly one DIR, not a file', () => {
  const dir = mkdtempSync(join(tmpdir(), 'dg-config-'));
  try {
    const file = join(dir, 'f');
    writeFileSync(file, '');
    throwsCode(() => resolveInstallConfig(args('install', [])), 'DG_CONFIG_ARGUMENTS', /needs exactly one DIR, got none/);
    throwsCode(() => resolveInstallConfig(args('install', [file])), 'DG_INSTALL_DIR', /expected a directory/);
    assert.is(resolveInstallConfig(args('install', [join(dir, 'new')])).dir, join(dir, 'new'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('check: --deployment reads the API, so no manifests beside it', () => {
  throwsCode(
    () => resolveCheckConfig(args('check', ['--deployment', 'ns/op', 'a.yaml'])),
    'DG_CONFIG_ARGUMENTS',
    /name no manifests with it/,
  );
  assert.equal(resolveCheckConfig(args('check', ['a.yaml'])), { output: 'text', deployment: undefined, paths: ['a.yaml'], plain: [] });
});

test('check: --plain names the render before drainguard; standard input is read once', () => {
  assert.equal(resolveCheckConfig(args('check', ['--plain', 'plain.yaml', '--plain', 'more/', '-'])).plain, ['plain.yaml', 'more/']);
  throwsCode(() => resolveCheckConfig(args('check', ['--plain', '-', '-'])), 'DG_CONFIG_ARGUMENTS', /standard input is read once/);
  throwsCode(() => resolveCheckConfig(args('check', ['--deployment', 'ns/op', '--plain', 'p.yaml'])), 'DG_CONFIG_ARGUMENTS', /nor --plain/);
});

test('every option of every command shows a default in help: a value or the words for its absence', () => {
  for (const spec of EVERY_OPTION)
    for (const command of spec.commands) assert.type(defaultShown(spec, command), 'string', `${command} --${spec.flag}`);
  assert.is(
    defaultShown(
      OPTIONS.find((o) => o.flag === 'stop-timeout')!,
      'run',
    ),
    '5s',
  );
  assert.is(
    defaultShown(
      OPTIONS.find((o) => o.flag === 'http-addr')!,
      'sidecar',
    ),
    '127.0.0.1:9404',
  );
  assert.is(
    defaultShown(
      OPTIONS.find((o) => o.flag === 'http-addr')!,
      'run',
    ),
    'off',
  );
});

test.run();
