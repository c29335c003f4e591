// The rule between the grace period and the timeouts (src/config/grace-rule.ts):
// what a drain and a stop need, the drain a grace period leaves, and the limit
// a resolved config is held to.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { checkFit, defaultDrainTimeout, graceNeeded } from '../../src/config/grace-rule.ts';

test('the grace period a drain and a stop need: drain + stop timeout + 2s', () => {
  assert.is(graceNeeded(23_000, 5000), 30_000);
  assert.is(graceNeeded(0, 5000), 7000);
});

test('the drain timeout a grace period leaves: grace - stop timeout - 2s, never below 0', () => {
  assert.is(defaultDrainTimeout(10_000, 5000), 3000);
  assert.is(defaultDrainTimeout(30_000, 5000), 23_000);
  assert.is(defaultDrainTimeout(6000, 5000), 0);
});

test('checkFit: the stop timeout inside the grace period, drain + stop within it', () => {
  const sources = { stop: 'DRAINGUARD_STOP_TIMEOUT', drain: 'DRAINGUARD_DRAIN_TIMEOUT' };
  assert.is(checkFit({ gracePeriodMs: 10_000, stopTimeoutMs: 5000, drainTimeoutMs: 5000 }, sources), undefined);
  assert.match(
    checkFit({ gracePeriodMs: 10_000, stopTimeoutMs: 10_000 }, sources)!,
    /^DRAINGUARD_STOP_TIMEOUT: the stop timeout \(10s\) must be shorter than the grace period \(10s\)/,
  );
  assert.match(
    checkFit({ gracePeriodMs: 10_000, stopTimeoutMs: 5000, drainTimeoutMs: 6000 }, sources)!,
    /^DRAINGUARD_DRAIN_TIMEOUT: .* lower it to at most 5s$/,
  );
});

test.run();
