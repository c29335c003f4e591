// KEDA through `helm uninstall --wait` (see keda-helm.test.ts for the setup):
// with drainguard Helm's wait ends once the operator has finalized its
// ScaledObject and every object of the release is gone; without, Helm waits
// its whole --timeout for the CRD that never goes, and fails.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { assertClean, assertLoss, kedaNode } from '../support/shipped/keda-test.ts';
import { type KedaRun, uninstallKeda } from '../support/shipped/keda-uninstall.ts';
import { removeKedaCharts } from '../support/shipped/keda.ts';

let run: KedaRun;

test.before(async () => {
  run = await kedaNode();
});

test.after(() => removeKedaCharts());

test('control, helm uninstall --wait without drainguard: the ScaledObject stuck, its CRD Terminating', async () => {
  const r = await uninstallKeda(run, false, 'helm --wait');
  assertLoss(r);
  assert.is.not(r.code, 0, `helm uninstall --wait failed at its timeout: ${r.output}`);
});

test('helm uninstall --wait with drainguard: KEDA finalizes the ScaledObject, nothing is left, no 403', async () => {
  assertClean(await uninstallKeda(run, true, 'helm --wait'));
});

test.run();
