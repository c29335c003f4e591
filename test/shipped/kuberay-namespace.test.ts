// KubeRay v1.5.0 through a namespace deletion (see kuberay-kubectl.test.ts for
// the setup): its kustomize install applied with `kubectl apply -k`, the RayJob
// in the operator's own namespace (its RayCluster's pods never bound), then
// `kubectl delete namespace` of it. The namespace controller deletes the pods
// first and the rest once they are gone (docs/namespace.md): without drainguard
// the operator is gone when the RayJob is deleted, which keeps
// ray.io/rayjob-finalizer for good and the namespace Terminating. With
// drainguard (adopt and the hold on KubeRay's kinds; KubeRay's own ClusterRole
// grants `delete` on RayJobs and RayClusters, which docs/namespace.md's step
// needs, so nothing is added) drainguard deletes the RayJob and RayCluster while
// the operator runs, the operator finalizes the RayJob, and the namespace goes.
// What is cluster-scoped (the CRDs, the ClusterRoles and their bindings) is not
// the namespace's and stays, without a finalizer.

import { test } from 'uvu';
import { assertKubeRayClean, assertKubeRayLoss, kubeRayNode } from '../support/shipped/kuberay-test.ts';
import { type KubeRayRun, uninstallKubeRay } from '../support/shipped/kuberay-uninstall.ts';
import { removeKubeRayOverlays } from '../support/shipped/kuberay.ts';

let run: KubeRayRun;

test.before(async () => {
  run = await kubeRayNode();
});

test.after(() => removeKubeRayOverlays());

test('control, kubectl delete namespace without drainguard: the RayJob stuck, the namespace Terminating', async () => {
  assertKubeRayLoss(await uninstallKubeRay(run, false, 'kubectl delete namespace'));
});

test('kubectl delete namespace with drainguard: the operator finalizes the RayJob, the namespace goes, no 403', async () => {
  assertKubeRayClean(await uninstallKubeRay(run, true, 'kubectl delete namespace'));
});

test.run();
