// KEDA's two replicas (leader election, a PodDisruptionBudget of minAvailable 1)
// through a rolling update and an eviction of the leader through the Eviction
// API, while ScaledObjects are being created and reconciled (see
// test/support/shipped/keda-rollout.ts), without drainguard: the control of
// keda-rollout-guarded.test.ts (the two do not fit the runner's 240 s in one
// file: each handover waits for KEDA's lease to expire).

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { kedaNode } from '../support/shipped/keda-test.ts';
import type { KedaRun } from '../support/shipped/keda-uninstall.ts';
import { assertHandedOver, rollKeda, story } from '../support/shipped/keda-rollout.ts';
import { removeKedaCharts } from '../support/shipped/keda.ts';

let run: KedaRun;

test.before(async () => {
  run = await kedaNode();
});

test.after(() => removeKedaCharts());

test('control, without drainguard: both handovers, every ScaledObject reconciled, no 403', async () => {
  const r = await rollKeda(run, false);
  assertHandedOver(r);
  assert.equal(r.holders, [], story(r));
});

test.run();
