// KEDA (github.com/kedacore/keda/v2, built by test/support/shipped/build.ts)
// on a real node, installed by a chart in the shape of KEDA's own, a
// ScaledObject reconciled, then `helm uninstall`. Helm deletes the Deployment
// first and the CRDs last: without drainguard the operator is gone when the
// CRD's deletion reaches the ScaledObject, which keeps KEDA's finalizer for
// good, its CRD Terminating, the target's replicas never restored. With
// drainguard (docs/helm.md, the hold of docs/hold.md) the operator runs on with
// its RBAC until it has finalized it, and nothing is left.

import { test } from 'uvu';
import { assertClean, assertLoss, kedaNode } from '../support/shipped/keda-test.ts';
import { type KedaRun, uninstallKeda } from '../support/shipped/keda-uninstall.ts';
import { removeKedaCharts } from '../support/shipped/keda.ts';

let run: KedaRun;

test.before(async () => {
  run = await kedaNode();
});

test.after(() => removeKedaCharts());

test('control, helm uninstall without drainguard: the ScaledObject keeps its finalizer, its CRD stays Terminating', async () => {
  assertLoss(await uninstallKeda(run, false, 'helm'));
});

test('helm uninstall with drainguard: KEDA finalizes the ScaledObject itself, nothing is left, no 403', async () => {
  assertClean(await uninstallKeda(run, true, 'helm'));
});

test.run();
