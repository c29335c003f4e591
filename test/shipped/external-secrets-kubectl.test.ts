// The External Secrets Operator through the most natural kubectl uninstall (see
// external-secrets-helm.test.ts for the setup): its chart rendered without
// hooks, `kubectl apply`, then `kubectl delete -f` of the whole render,
// drainguard's own RBAC included, as a user does who has not read
// docs/guard.md. The control: the same of the chart without drainguard, where
// the operator's RBAC goes while it runs (the render lists the CRDs first, so
// whether the PushSecret is finalized before the ClusterRole goes is a race:
// see assertEsoRightsLost).

import { test } from 'uvu';
import { assertEsoClean, assertEsoRightsLost, esoNode } from '../support/shipped/external-secrets-test.ts';
import { type EsoRun, uninstallEso } from '../support/shipped/external-secrets-uninstall.ts';
import { removeEsoCharts } from '../support/shipped/external-secrets.ts';

let run: EsoRun;

test.before(async () => {
  run = await esoNode();
});

test.after(() => removeEsoCharts());

test('control, kubectl delete -f without drainguard: the operator loses its RBAC while it runs, 403 in its log', async () => {
  assertEsoRightsLost(await uninstallEso(run, false, 'kubectl delete -f'));
});

test('kubectl delete -f of everything with drainguard: the operator finalizes the PushSecret, nothing is left, no 403', async () => {
  assertEsoClean(await uninstallEso(run, true, 'kubectl delete -f'));
});

test.run();
