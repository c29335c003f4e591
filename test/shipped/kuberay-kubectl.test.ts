// KubeRay v1.5.0 through `kubectl delete -k` of its kustomize install
// (config/default of its module, under the test's overlay: namespace, image,
// ports), with a RayJob the operator took on. kustomize's order deletes the
// CRDs, then the RBAC, then the Deployment: the RayJob's deletion starts while
// the operator runs, and its finalizer needs the operator and its RBAC.
// Without drainguard the operator is refused and stopped within a second and
// the RayJob keeps ray.io/rayjob-finalizer for good, its CRD Terminating. With
// drainguard (`drainguard adopt` of that overlay and the hold on KubeRay's
// kinds: kubectl-and-kustomize setup in kuberay.ts) the hold keeps the operator
// with its RBAC until it has removed the finalizer, and nothing is left.

import { test } from 'uvu';
import { assertKubeRayClean, assertKubeRayLoss, kubeRayNode } from '../support/shipped/kuberay-test.ts';
import { type KubeRayRun, uninstallKubeRay } from '../support/shipped/kuberay-uninstall.ts';
import { removeKubeRayOverlays } from '../support/shipped/kuberay.ts';

let run: KubeRayRun;

test.before(async () => {
  run = await kubeRayNode();
});

test.after(() => removeKubeRayOverlays());

test('control, kubectl delete -k without drainguard: the RayJob stuck with its finalizer, its CRD Terminating', async () => {
  assertKubeRayLoss(await uninstallKubeRay(run, false, 'kubectl delete -k'));
});

test('kubectl delete -k with drainguard: the operator finalizes the RayJob, nothing is left, no 403', async () => {
  assertKubeRayClean(await uninstallKubeRay(run, true, 'kubectl delete -k'));
});

test.run();
