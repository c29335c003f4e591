// KEDA through the most natural kubectl uninstall (see keda-helm.test.ts for
// the setup): the chart rendered without hooks, `kubectl apply`, then
// `kubectl delete -f` of the whole render, drainguard's own RBAC included, as a
// user does who has not read docs/guard.md. The control: the same of the
// chart without drainguard.

import { test } from 'uvu';
import { assertClean, assertLoss, kedaNode } from '../support/shipped/keda-test.ts';
import { type KedaRun, uninstallKeda } from '../support/shipped/keda-uninstall.ts';
import { removeKedaCharts } from '../support/shipped/keda.ts';

let run: KedaRun;

test.before(async () => {
  run = await kedaNode();
});

test.after(() => removeKedaCharts());

test('control, kubectl delete -f without drainguard: the ScaledObject stuck, its CRD Terminating', async () => {
  assertLoss(await uninstallKeda(run, false, 'kubectl delete -f'));
});

// Issue 51 item 4: on the code before its fix this is a race: in 1 of 7 runs here drainguard's own
// ClusterRoleBinding and RoleBinding kept the pod's holder finalizer for good (the release warns
// "released together"); KEDA's ScaledObject was finalized in every run.
test('kubectl delete -f of everything with drainguard: KEDA finalizes the ScaledObject, nothing is left, no 403', async () => {
  assertClean(await uninstallKeda(run, true, 'kubectl delete -f'));
});

test.run();
