// KEDA (one replica, leader election) under drainguard without idleMetrics,
// through a rolling update by `helm upgrade` and a node drain (cordon, an
// eviction through the Eviction API and a PodDisruptionBudget, uncordon)
// while ScaledObjects are being created and reconciled (see
// test/support/shipped/keda-idle.ts): the control of keda-idle-guarded.test.ts.
// KEDA connects no drain client, so drainguard passes the SIGTERM on at once
// and controller-runtime cancels the reconciles running then. (The two do not
// fit the runner's 240 s in one file: each handover waits for KEDA's lease.)

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { kedaNode } from '../support/shipped/keda-test.ts';
import type { KedaRun } from '../support/shipped/keda-uninstall.ts';
import { assertHandedOver, idleKeda, story } from '../support/shipped/keda-idle.ts';
import { removeKedaCharts } from '../support/shipped/keda.ts';

let run: KedaRun;

test.before(async () => {
  run = await kedaNode();
});

test.after(() => removeKedaCharts());

test('control, drainguard without idleMetrics: the stop passed on at once, reconciles in flight cut short', async () => {
  const r = await idleKeda(run, false);
  assertHandedOver(r);
  for (const s of r.stops) {
    assert.is(s.drainEnded!.outcome, 'no-client', story(r));
    assert.ok(s.tally.interrupted.length > 0, `${s.what}: reconciles cut short (context canceled) in ${s.from}'s log\n${story(r)}`);
  }
});

test.run();
