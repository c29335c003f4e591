// The supervising guard's one factory, without an API server: what it refuses
// before the operator starts, what it reports before it is opened (the hold's
// part from the start, held false), and that a late open that fails is logged
// and leaves the guard not set, where an open at once throws.

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ConfigError } from '../../src/errors.ts';
import { type GuardSettings, openGuard } from '../../src/guard/open.ts';
import { createLogger, silentLogger } from '../../src/log/logger.ts';
import { FakeClock } from '../support/fake-clock.ts';
import { within } from '../support/wait.ts';

const home = mkdtempSync(join(tmpdir(), 'guard-open-'));
test.after(() => rmSync(home, { recursive: true, force: true }));

const guardOnly: GuardSettings = {
  targets: [{ kind: 'clusterrole', name: 'op' }],
  pod: { name: 'op-0', namespace: 'op', uid: '3f2a0000-0000-4000-8000-000000000001' },
  leaseDurationMs: 15_000,
};
const withHold: GuardSettings = {
  ...guardOnly,
  targets: [],
  hold: { kinds: [{ plural: 'widgets', group: 'example.com' }], timeoutMs: 60_000, settleMs: 5_000 },
};

/** No KUBECONFIG, no ~/.kube/config, not in a cluster: no API configured. */
const noApi = { HOME: home };

/** A kubeconfig the cheap check passes (it names a current context) and the client cannot use (no such context). */
function unusableKubeconfig(): NodeJS.ProcessEnv {
  const dir = join(home, 'unusable');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'config'), 'apiVersion: v1\nkind: Config\ncurrent-context: nowhere\n');
  return { HOME: home, KUBECONFIG: join(dir, 'config') };
}

async function rejection(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected a rejection');
}

test('late, without an API configured: a ConfigError before anything starts, naming what needs the API', async () => {
  for (const [settings, why] of [
    [guardOnly, 'DRAINGUARD_GUARD'],
    [withHold, 'DRAINGUARD_HOLD'],
  ] as const) {
    const err = await rejection(openGuard(settings, { env: noApi, logger: silentLogger, clock: new FakeClock(), late: true }));
    assert.instance(err, ConfigError);
    assert.is((err as ConfigError).code, 'DG_CONFIG_NO_API');
    assert.match(err.message, `${why} is set, so drainguard needs the Kubernetes API`);
  }
});

test('late: not set before it opens, with the hold part from the start only when the hold is on', async () => {
  const env = unusableKubeconfig();
  const held = await openGuard(withHold, { env, logger: silentLogger, clock: new FakeClock(), late: true });
  assert.equal(held.report(), { set: false, objectsHeld: 0, errors: 0, hold: { held: false, released: {} } });
  const plain = await openGuard(guardOnly, { env, logger: silentLogger, clock: new FakeClock(), late: true });
  assert.equal(plain.report(), { set: false, objectsHeld: 0, errors: 0 });
});

test('late: a configuration the client cannot read is logged at start(), the guard stays not set and releases as a no-op', async () => {
  const lines: string[] = [];
  let logged = (): void => {};
  const error = new Promise<void>((resolve) => (logged = resolve));
  const logger = createLogger({
    level: 'debug',
    format: 'json',
    stream: {
      write: (line: string) => {
        lines.push(line);
        if (line.includes('the guard cannot be set')) logged();
        return true;
      },
    },
  });
  const guard = await openGuard(withHold, { env: unusableKubeconfig(), logger, clock: new FakeClock(), late: true });
  assert.equal(lines, [], 'nothing is opened before start()');
  guard.start();
  await within(5_000, 'the failed open logged', error);
  assert.match(lines.join(''), 'DRAINGUARD_HOLD is set, so drainguard needs the Kubernetes API, but its configuration cannot be read');
  assert.equal(guard.report(), { set: false, objectsHeld: 0, errors: 0, hold: { held: false, released: {} } });
  await within(5_000, 'the release', guard.release(Date.now() + 1_000));
});

test('at once (sidecar): the same configuration is a ConfigError from the factory itself', async () => {
  const err = await rejection(
    openGuard(guardOnly, { env: unusableKubeconfig(), logger: silentLogger, clock: new FakeClock(), late: false }),
  );
  assert.instance(err, ConfigError);
  assert.match(err.message, 'DRAINGUARD_GUARD is set, so drainguard needs the Kubernetes API, but its configuration cannot be read');
});

test.run();
