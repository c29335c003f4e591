// KEDA through a namespace deletion (see keda-helm.test.ts for the setup): the
// chart rendered without hooks and applied with kubectl, the ScaledObject and
// its target in the operator's own namespace, then `kubectl delete namespace`
// of it. Since 1.33 the namespace controller deletes the pods first and the
// rest once they are gone (docs/namespace.md): without drainguard the operator
// is gone when the ScaledObject is deleted, which keeps KEDA's finalizer for
// good and the namespace Terminating. With drainguard (its hold on KEDA's
// kinds, and the Role docs/namespace.md's Rights asks for: KEDA's own role has
// no `delete` on ScaledObjects, and without it drainguard's step is refused,
// 403) the ScaledObject is deleted while the operator runs, KEDA finalizes it,
// and the namespace goes. What is cluster-scoped (the CRDs, the
// ClusterRoles and their bindings) is not the namespace's and stays, without
// a finalizer.

import { test } from 'uvu';
import { assertClean, assertLoss, kedaNode } from '../support/shipped/keda-test.ts';
import { type KedaRun, uninstallKeda } from '../support/shipped/keda-uninstall.ts';
import { removeKedaCharts } from '../support/shipped/keda.ts';

let run: KedaRun;

test.before(async () => {
  run = await kedaNode();
});

test.after(() => removeKedaCharts());

test('control, kubectl delete namespace without drainguard: the ScaledObject stuck, the namespace Terminating', async () => {
  assertLoss(await uninstallKeda(run, false, 'kubectl delete namespace'));
});

test('kubectl delete namespace with drainguard: KEDA finalizes the ScaledObject, the namespace goes, nothing stuck, no 403', async () => {
  assertClean(await uninstallKeda(run, true, 'kubectl delete namespace'));
});

test.run();
