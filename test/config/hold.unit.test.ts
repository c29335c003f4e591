import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parseHoldList } from '../../src/config/hold-list.ts';
import { parseArgs } from '../../src/config/load.ts';
import { resolveSupervisorConfig } from '../../src/config/supervisor.ts';
import { exitStatus } from '../../src/errors.ts';

const POD = { DRAINGUARD_POD_NAME: 'op-1', DRAINGUARD_POD_NAMESPACE: 'ops', DRAINGUARD_POD_UID: 'u-1' };

test('hold kinds: PLURAL.GROUP, comma-separated, repeats once, empty entries skipped', () => {
  assert.equal(parseHoldList(' installations.operator.tigera.io, apiservers.operator.tigera.io,,installations.operator.tigera.io', 'H'), [
    { plural: 'installations', group: 'operator.tigera.io' },
    { plural: 'apiservers', group: 'operator.tigera.io' },
  ]);
  assert.equal(parseHoldList('', 'H'), []);
});

test('a malformed hold entry is a ConfigError naming the entry and the form', () => {
  for (const bad of [
    'installations',
    'Installations.operator.tigera.io',
    'deployments.apps',
    '.example.com',
    'foos.',
    'foos.ex_ample.com',
    'installation/x.example.com',
    'foos..example.com',
  ]) {
    let caught: unknown;
    try {
      parseHoldList(`widgets.example.com,${bad}`, 'DRAINGUARD_HOLD');
    } catch (err) {
      caught = err;
    }
    assert.ok(caught instanceof Error, bad);
    assert.is((caught as { code?: string }).code, 'DG_CONFIG_HOLD_LIST', bad);
    assert.is(exitStatus(caught), 2);
    assert.match((caught as Error).message, `DRAINGUARD_HOLD: expected comma-separated custom resource kinds as PLURAL.GROUP`);
    assert.ok((caught as Error).message.endsWith(`got ${JSON.stringify(bad)}`), (caught as Error).message);
  }
});

test('defaults: no hold, timeout 5m, settle 5s; flags win over variables', () => {
  const off = resolveSupervisorConfig(parseArgs('run', ['x'], {}, { stopAtPositional: true }));
  assert.equal(off.hold, []);
  assert.is(off.holdTimeoutMs, 300_000);
  assert.is(off.holdSettleMs, 5_000);
  const on = resolveSupervisorConfig(
    parseArgs('sidecar', ['--hold', 'foos.example.com', '--hold-settle=2s'], {
      ...POD,
      DRAINGUARD_HOLD: 'bars.example.com',
      DRAINGUARD_HOLD_TIMEOUT: '90s',
      DRAINGUARD_HOLD_SETTLE: '1s',
    }),
  );
  assert.equal(on.hold, [{ plural: 'foos', group: 'example.com' }]);
  assert.is(on.holdTimeoutMs, 90_000);
  assert.is(on.holdSettleMs, 2_000);
  assert.equal(resolveSupervisorConfig(parseArgs('sidecar', [], { DRAINGUARD_HOLD: '' })).hold, [], 'empty: off');
  assert.throws(() => parseArgs('sidecar', [], { DRAINGUARD_HOLD_SETTLE: 'soon' }), /DRAINGUARD_HOLD_SETTLE: expected a duration/);
});

test('the hold needs the pod identity, as the guard does', () => {
  assert.throws(
    () => resolveSupervisorConfig(parseArgs('sidecar', [], { DRAINGUARD_HOLD: 'foos.example.com', DRAINGUARD_POD_NAME: 'op-1' })),
    (err: Error) =>
      /^DRAINGUARD_HOLD is set, so drainguard needs to know its pod: set DRAINGUARD_POD_NAMESPACE, DRAINGUARD_POD_UID /.test(err.message) &&
      exitStatus(err) === 2,
  );
  assert.throws(() => resolveSupervisorConfig(parseArgs('sidecar', ['--hold=foos.example.com'], {})), /^--hold is set/);
  resolveSupervisorConfig(parseArgs('sidecar', [], { ...POD, DRAINGUARD_HOLD: 'foos.example.com' }));
});

test.run();
