// What KubeRay's test files share: the node (with its image), and what an
// uninstall is held to, with drainguard and without (the control).

import * as assert from 'uvu/assert';
import { useCluster } from '../cluster/index.ts';
import { startNode } from '../node/index.ts';
import { builtOperator, shippedDir } from './build.ts';
import { apiServerCleaning } from './external-secrets-uninstall.ts';
import { RAYJOB_FINALIZER, importKubeRayImage } from './kuberay.ts';
import type { KubeRayRun, KubeRayUninstalled } from './kuberay-uninstall.ts';

/** The run's control plane and a real node of this file's, the operator's image imported. Fails when it was not built. */
export async function kubeRayNode(): Promise<KubeRayRun> {
  if (!builtOperator('kuberay'))
    throw new Error(`kuberay is not built in ${shippedDir('kuberay')}: node test/support/shipped/build.ts builds it (.ci/run does)`);
  const c = await useCluster();
  const node = await startNode(c);
  importKubeRayImage(node);
  return { c, node };
}

const story = (r: KubeRayUninstalled) =>
  `${r.guarded ? 'with' : 'without'} drainguard, ${r.way}: took on the RayJob after ${r.tookOnMs} ms, ` +
  `exit ${r.code} after ${r.commandMs} ms, settled after ${r.settledMs} ms, ` +
  `the RayJob gone after ${r.rayJobGoneMs ?? '(never)'} ms, clean after ${r.cleanMs ?? '(never)'} ms, ` +
  `the operator's finalizer reconcile ${r.finalizerMs ?? '(none)'} ms\n` +
  `left:\n  ${r.left.join('\n  ') || '(nothing)'}\n${r.output}\noperator log (last 30):\n${r.log.slice(-30).join('\n')}`;

/** TEST_VERBOSE=1: what each uninstall did and left. */
const tell = (r: KubeRayUninstalled) => process.env.TEST_VERBOSE && process.stderr.write(`${story(r)}\n\n`);

/** The RayJob finalized by the operator itself, nothing left, no 401/403 in its log. */
export function assertKubeRayClean(r: KubeRayUninstalled): void {
  tell(r);
  // Said, not failed on: no object's finalizer holds it (see apiServerCleaning).
  const cleaning = r.left.filter((l) => apiServerCleaning(r.left, l));
  if (cleaning.length > 0) process.stderr.write(`  the API server still cleaning up: ${cleaning.join(', ')}\n`);
  assert.equal(
    r.left.filter((l) => !cleaning.includes(l)),
    [],
    story(r),
  );
  assert.ok(r.finalizedByOperator, `the operator removed the RayJob's finalizer itself\n${story(r)}`);
  assert.equal(r.refused, [], `no 401/403 in the operator's log\n${story(r)}`);
  assert.is(r.code, 0, story(r));
}

/**
 * The control's loss: the RayJob stuck with the operator's finalizer, what deleted it left Terminating (its CRD, or
 * with a namespace deletion the namespace), and the operator never removed the finalizer.
 */
export function assertKubeRayLoss(r: KubeRayUninstalled): void {
  tell(r);
  const stuck = r.left.find((l) => l.startsWith('rayjob/') && l.includes('(being deleted)') && l.includes(RAYJOB_FINALIZER));
  assert.ok(stuck, `the RayJob left being deleted with ${RAYJOB_FINALIZER}\n${story(r)}`);
  const holder =
    r.way === 'kubectl delete namespace'
      ? (l: string) => l.startsWith('namespace/') && l.includes('(being deleted)')
      : (l: string) => l.startsWith('customresourcedefinition/rayjobs.ray.io') && l.includes('(being deleted)');
  assert.ok(r.left.some(holder), `${r.way === 'kubectl delete namespace' ? 'the namespace' : 'its CRD'} left Terminating\n${story(r)}`);
  assert.not.ok(r.finalizedByOperator, story(r));
}
