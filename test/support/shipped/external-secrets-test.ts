// What the External Secrets Operator's test files share: the node (with its
// image), and what an uninstall is held to, with drainguard and without (the control).

import * as assert from 'uvu/assert';
import { useCluster } from '../cluster/index.ts';
import { startNode } from '../node/index.ts';
import { builtOperator, shippedDir } from './build.ts';
import { PUSHSECRET_FINALIZER, importEsoImage } from './external-secrets.ts';
import { type EsoRun, type EsoUninstalled, apiServerCleaning } from './external-secrets-uninstall.ts';

/** The run's control plane and a real node of this file's, the operator's image imported. Fails when it was not built. */
export async function esoNode(): Promise<EsoRun> {
  if (!builtOperator('external-secrets'))
    throw new Error(
      `external-secrets is not built in ${shippedDir('external-secrets')}: node test/support/shipped/build.ts builds it (.ci/run does)`,
    );
  const c = await useCluster();
  const node = await startNode(c);
  importEsoImage(node);
  return { c, node };
}

const story = (r: EsoUninstalled) =>
  `${r.guarded ? 'with' : 'without'} drainguard, ${r.way}: exit ${r.code}, settled after ${r.settledMs} ms\n` +
  `left:\n  ${r.left.join('\n  ') || '(nothing)'}\n${r.output}\noperator log (last 30):\n${r.log.slice(-30).join('\n')}`;

/** TEST_VERBOSE=1: what each uninstall did and left. */
const tell = (r: EsoUninstalled) => process.env.TEST_VERBOSE && process.stderr.write(`${story(r)}\n\n`);

/** The PushSecret finalized by the operator itself, nothing left, no 401/403 in its log. */
export function assertEsoClean(r: EsoUninstalled): void {
  tell(r);
  // Said, not failed on: no object's finalizer holds it (see apiServerCleaning).
  const cleaning = r.left.filter((l) => apiServerCleaning(r.left, l));
  if (cleaning.length > 0) process.stderr.write(`  the API server still cleaning up: ${cleaning.join(', ')}\n`);
  assert.equal(
    r.left.filter((l) => !cleaning.includes(l)),
    [],
    story(r),
  );
  assert.ok(r.finalizedByOperator, `the operator finalized the PushSecret itself\n${story(r)}`);
  assert.equal(r.refused, [], `no 401/403 in the operator's log\n${story(r)}`);
  assert.is.not(r.rightsGoneWhileRunning, true, `the operator's rights outlived its pods\n${story(r)}`);
  assert.is(r.code, 0, story(r));
}

/** The control's loss: the PushSecret stuck with the operator's finalizer, its CRD Terminating, nobody finalized it. */
export function assertEsoLoss(r: EsoUninstalled): void {
  tell(r);
  const stuck = r.left.find((l) => l.startsWith('pushsecret/') && l.includes('(being deleted)') && l.includes(PUSHSECRET_FINALIZER));
  assert.ok(stuck, `the PushSecret left being deleted with ${PUSHSECRET_FINALIZER}\n${story(r)}`);
  assert.ok(
    r.left.some((l) => l.startsWith('customresourcedefinition/pushsecrets.external-secrets.io') && l.includes('(being deleted)')),
    `its CRD left Terminating\n${story(r)}`,
  );
  assert.not.ok(r.finalizedByOperator, story(r));
}

/**
 * The control of `kubectl delete -f`: the render lists the CRDs before the RBAC and the Deployment, so the PushSecret's
 * deletion starts while the operator runs, and whether it finalizes it before its ClusterRole goes is a race (it won in
 * the runs measured). What is lost every time is its RBAC while it runs: its binding is deleted while no operator pod
 * is even being deleted yet. Whether it makes a request in the second that is left (its Lease's renewal, a list) and
 * logs a 403 is a race too (one run of several had none): when it did, the refusal is its ServiceAccount's.
 */
export function assertEsoRightsLost(r: EsoUninstalled): void {
  tell(r);
  assert.is(r.rightsGoneWhileRunning, true, `the operator's ClusterRoleBinding deleted while its pod was not being deleted\n${story(r)}`);
  assert.ok(
    r.refused.every((l) => l.includes(`system:serviceaccount:`) && l.includes('forbidden')),
    `each refusal is of the operator's ServiceAccount\n${story(r)}`,
  );
}
