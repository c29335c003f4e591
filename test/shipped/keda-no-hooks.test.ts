// KEDA through `helm uninstall --no-hooks --wait` (see keda-helm.test.ts for
// the setup): without drainguard's hooks the hold
// alone keeps the operator running until it has finalized its ScaledObject;
// drainguard's own RBAC is kept by its resource policy and, with no
// post-delete hook to delete it, left for `drainguard release` (docs/guard.md).
// The control: the same uninstalls of the chart without drainguard.

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

test('control, helm uninstall --no-hooks --wait without drainguard: the ScaledObject stuck, its CRD Terminating', async () => {
  assertLoss(await uninstallKeda(run, false, 'helm --no-hooks --wait'));
});

test('helm uninstall --no-hooks --wait with drainguard: KEDA finalizes the ScaledObject; only drainguard’s own RBAC is kept, held by nobody', async () => {
  const r = await uninstallKeda(run, true, 'helm --no-hooks --wait');
  // Kept by helm.sh/resource-policy: keep; without the post-delete hook nothing deletes it (docs/helm.md).
  const own = r.left.filter((l) => /drainguard[:.]/.test(l));
  assert.ok(own.length > 0 && own.every((l) => !l.includes('finalizers') && !l.includes('being deleted')), r.left.join('\n'));
  assertClean({ ...r, left: r.left.filter((l) => !own.includes(l)) });
});

test.run();
