// What the KEDA test files share: the node (with KEDA's image), and what an
// uninstall is held to, with drainguard and without (the control).

import * as assert from 'uvu/assert';
import { useCluster } from '../cluster/index.ts';
import { startNode } from '../node/index.ts';
import { builtOperator, shippedDir } from './build.ts';
import { SCALEDOBJECT_FINALIZER, importKedaImage } from './keda.ts';
import { type KedaRun, ORIGINAL_REPLICAS, SCALED_REPLICAS, type Uninstalled } from './keda-uninstall.ts';

/** The run's control plane and a real node of this file's, KEDA's image imported. Fails when KEDA was not built. */
export async function kedaNode(): Promise<KedaRun> {
  if (!builtOperator('keda'))
    throw new Error(`KEDA is not built in ${shippedDir('keda')}: node test/support/shipped/build.ts builds it (.ci/run does)`);
  const c = await useCluster();
  const node = await startNode(c);
  importKedaImage(node);
  return { c, node };
}

const story = (r: Uninstalled) =>
  `${r.guarded ? 'with' : 'without'} drainguard, ${r.way}: exit ${r.code}, settled after ${r.settledMs} ms\n` +
  `left:\n  ${r.left.join('\n  ') || '(nothing)'}\n${r.output}\noperator log (last 30):\n${r.log.slice(-30).join('\n')}`;

/** TEST_VERBOSE=1: what each uninstall did and left. */
const tell = (r: Uninstalled) => process.env.TEST_VERBOSE && process.stderr.write(`${story(r)}\n\n`);

/**
 * An HPA the garbage collector keeps for good, not held: its owner ScaledObject is gone, finalized by KEDA, and the
 * uninstall deleted the ScaledObject CRD before the collector looked at the HPA (kubernetes/kubernetes#102641). Not a
 * stuck object in the sense (no finalizer, nothing Terminating) nor drainguard's: said, not failed on.
 */
const orphanedHpa = (r: Uninstalled, l: string) =>
  l.startsWith('horizontalpodautoscaler/') &&
  !l.includes(' (being deleted)') &&
  !l.includes(' finalizers ') &&
  !r.left.some((x) => x.startsWith('scaledobject/') || x.startsWith('customresourcedefinition/'));

/** Every custom resource finalized by the operator itself, nothing stuck (no finalizer, nothing Terminating), no 401/403 in its log. */
export function assertClean(r: Uninstalled): void {
  tell(r);
  const orphans = r.left.filter((l) => orphanedHpa(r, l));
  if (orphans.length > 0) process.stderr.write(`  left by the garbage collector (kubernetes/kubernetes#102641): ${orphans.join(', ')}\n`);
  assert.equal(
    r.left.filter((l) => !orphans.includes(l)),
    [],
    story(r),
  );
  assert.ok(r.finalizedByOperator, `the operator finalized the ScaledObject itself\n${story(r)}`);
  assert.is(r.targetReplicas, ORIGINAL_REPLICAS, `its finalizer restored the target's replicas\n${story(r)}`);
  assert.equal(r.refused, [], `no 401/403 in the operator's log\n${story(r)}`);
  assert.is(r.code, 0, story(r));
}

/**
 * The control's loss: the ScaledObject stuck with KEDA's finalizer, what deleted it left Terminating (its CRD, or
 * with a namespace deletion the namespace), the target never restored.
 */
export function assertLoss(r: Uninstalled): void {
  tell(r);
  const stuck = r.left.find((l) => l.startsWith('scaledobject/') && l.includes('(being deleted)') && l.includes(SCALEDOBJECT_FINALIZER));
  assert.ok(stuck, `the ScaledObject left being deleted with ${SCALEDOBJECT_FINALIZER}\n${story(r)}`);
  const holder = r.way === 'kubectl delete namespace' ? 'namespace/' : 'customresourcedefinition/scaledobjects.keda.sh';
  assert.ok(
    r.left.some((l) => l.startsWith(holder) && l.includes('(being deleted)')),
    `${r.way === 'kubectl delete namespace' ? 'its namespace' : 'its CRD'} left Terminating\n${story(r)}`,
  );
  assert.not.ok(r.finalizedByOperator, story(r));
  assert.is(r.targetReplicas, SCALED_REPLICAS, `nobody restored the target\n${story(r)}`);
}
