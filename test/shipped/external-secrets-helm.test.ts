// The External Secrets Operator (github.com/external-secrets/external-secrets,
// built by test/support/shipped/build.ts) on a real node, installed by its own
// chart, a PushSecret with `deletionPolicy: Delete` pushed to a SecretStore of
// the fake provider, then `helm uninstall`. Helm deletes the Deployment first
// and the CRDs last: without drainguard the operator is gone when the CRD's
// deletion reaches the PushSecret, which keeps the operator's finalizer for
// good, its CRD Terminating. With drainguard (docs/helm.md with its pre-delete
// hook, the hold of docs/hold.md) the hook deletes the PushSecret while the
// operator and its SecretStore are there, the operator finalizes it with its
// RBAC, and nothing is left. The hold alone is not enough here: the CRDs'
// deletion removes the SecretStore at once, and a PushSecret reconciled after
// that can never be finalized (external-secrets#3411; seen once in CI). PushSecret is served in v1alpha1 of a group that prefers
// v1: the hold finds it there (src/kube/discovery.ts); with the preferred version
// only, it let go after its 5 s settle and the PushSecret stuck.

import { test } from 'uvu';
import { assertEsoClean, assertEsoLoss, esoNode } from '../support/shipped/external-secrets-test.ts';
import { type EsoRun, uninstallEso } from '../support/shipped/external-secrets-uninstall.ts';
import { removeEsoCharts } from '../support/shipped/external-secrets.ts';

let run: EsoRun;

test.before(async () => {
  run = await esoNode();
});

test.after(() => removeEsoCharts());

test('control, helm uninstall without drainguard: the PushSecret keeps its finalizer, its CRD stays Terminating', async () => {
  assertEsoLoss(await uninstallEso(run, false, 'helm'));
});

test('helm uninstall with drainguard: the operator finalizes the PushSecret itself, nothing is left, no 403', async () => {
  assertEsoClean(await uninstallEso(run, true, 'helm'));
});

test.run();
