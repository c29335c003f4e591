// keda-rollout.test.ts with drainguard added to KEDA's chart (docs/helm.md's
// steps, wrap mode): the same rolling update and eviction under the same load.

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

// KEDA does not speak the drain protocol: drainguard passes the SIGTERM on at once, and controller-runtime cancels the
// reconciles running then, as without drainguard (docs/guard.md, "A rolling update and an eviction"). What drainguard adds holds
// across the handovers: each live pod holds the operator's RBAC, no pod that left does.
test('with drainguard: both handovers, every ScaledObject reconciled, no 403, the RBAC held by the live pods alone', async () => {
  const r = await rollKeda(run, true);
  assertHandedOver(r);
  assert.equal(
    [...r.holders].sort(),
    r.livePods.map((uid) => `drainguard.dev/holder-${uid}`).sort(),
    `the ClusterRole held by each live pod, by no other\n${story(r)}`,
  );
});

test.run();
