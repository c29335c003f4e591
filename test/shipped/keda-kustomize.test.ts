// KEDA through `kubectl delete -k` (see keda-helm.test.ts for the setup): the
// chart rendered without hooks into a kustomize directory, `kubectl apply -k`,
// then `kubectl delete -k` of it, drainguard's own RBAC included. kustomize
// orders the delete its own way (the CRDs, the RBAC, then the Deployment):
// without drainguard the CRD's deletion reaches the ScaledObject while KEDA
// loses its rights and its pod, and the ScaledObject keeps KEDA's finalizer.
// The control: the same of the chart without drainguard.
//
// Intermittent (3 of 5 runs passed here): the CRD's deletion comes first, so
// without drainguard KEDA sometimes finalizes the ScaledObject before its
// RBAC goes (1 of 5: no loss for the control to show), and KEDA leaves its HPA
// to the garbage collector, which keeps it for good when the CRD goes before
// it verified the owner's absence (kubernetes/kubernetes#102641; 2 of 5 with
// drainguard).

import { test } from 'uvu';
import { assertClean, assertLoss, kedaNode } from '../support/shipped/keda-test.ts';
import { type KedaRun, uninstallKeda } from '../support/shipped/keda-uninstall.ts';
import { removeKedaCharts } from '../support/shipped/keda.ts';

let run: KedaRun;

test.before(async () => {
  run = await kedaNode();
});

test.after(() => removeKedaCharts());

test('control, kubectl delete -k without drainguard: the ScaledObject stuck, its CRD Terminating', async () => {
  assertLoss(await uninstallKeda(run, false, 'kubectl delete -k'));
});

test('kubectl delete -k of everything with drainguard: KEDA finalizes the ScaledObject, nothing is left, no 403', async () => {
  assertClean(await uninstallKeda(run, true, 'kubectl delete -k'));
});

test.run();
