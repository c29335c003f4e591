// The seed of issue 27: `kubectl delete -f` of an operator's whole manifest set
// (its Deployment, the Installation and APIServer carrying its finalizer, its
// RBAC) on the cluster back end, the kubelet stand-in running the pod. With
// the hold, the Deployment stays Terminating while the operator, its RBAC kept
// by the guard, finalizes the custom resources; then it stops and nothing is
// left. The control: the same delete without the hold leaves them stuck.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createCrds, deleteCrds, stripCustomResources } from '../support/cr-operator.ts';
import { type KubeletCluster, kubeletCluster } from '../support/kubelet/cluster.ts';
import { kubectl, leftOf, operatorPods, operatorSet } from './support.ts';

const GROUP = 'operator.hold.example.io';
const HOLD = `installations.${GROUP},apiservers.${GROUP}`;

let c: KubeletCluster;
test.before(async () => {
  c = await kubeletCluster();
  await createCrds(c, GROUP);
});
test.after(() => deleteCrds(c, GROUP));

test('kubectl delete -f with the hold: the operator finalizes its custom resources with its RBAC intact, then stops; nothing is left', async () => {
  const s = await operatorSet(c, GROUP, { hold: HOLD, holdSettle: '2s' });
  try {
    const applied = await kubectl(c, ['apply', '-f', '-'], s.manifest);
    assert.is(applied.code, 0, applied.stderr);
    s.at('kubectl apply -f: Deployment, Installation, APIServer, ServiceAccount, ClusterRole, ClusterRoleBinding');
    const [{ proc: operator, pod }] = await operatorPods(c, s);
    const holder = `drainguard.dev/holder-${pod.metadata.uid}`;
    await c.poll(`/apis/apps/v1/namespaces/${s.ns}/deployments/${s.name}`, (b) => b.metadata?.finalizers?.includes(holder), 20_000, "the pod's finalizer on its Deployment");
    s.at("operator running; the Deployment and the RBAC carry the pod's finalizer");

    const deleting = kubectl(c, ['delete', '-f', '-'], s.manifest).then((r) => {
      s.at(`kubectl delete -f returned ${r.code}: ${r.stdout.trim().split('\n').join('; ')}`);
      return r;
    });
    s.at('kubectl delete -f started (background propagation, in manifest order)');
    const seen = await operator.log('the Deployment is being deleted: holding the operator until the listed custom resources are finalized', 20_000);
    s.at(`drainguard: the Deployment is being deleted (finalizers ${JSON.stringify(seen.finalizers)}), holding`, seen.time);
    await operator.line('cleanup installations/default started', 30_000);
    s.at('operator: cleanup of installations/default started (it takes 3 s)');
    await operator.line('finalize installations/default 200', 30_000);
    s.at('operator: finalize installations/default 200 (its RBAC still in force)');
    await operator.line('finalize apiservers/default 200', 30_000);
    s.at('operator: finalize apiservers/default 200');
    const line = await c.cluster.waitFor(() => operator.logs().find((l) => String(l.msg).startsWith('hold released')), 30_000, 'the hold released');
    assert.is(line.reason, 'finalized', String(line.msg));
    s.at(`drainguard: ${line.msg}`, line.time);
    await operator.line('drained', 30_000);
    s.at(`operator drained (${operator.stdout.find((l) => l.startsWith('delete state'))})`);
    assert.ok(operator.stdout.includes('delete state 200'), 'its cleanup still authorised');
    const guard = await operator.log('guard released', 30_000);
    s.at(`drainguard: guard released (${(guard.deleted as string[]).join(', ')} went with it)`, guard.time);
    const result = await deleting;
    assert.is(result.code, 0, result.stderr);
    const left = await leftOf(c, s, 30_000);
    assert.equal(left, [], 'nothing is left');
    s.at('nothing is left');
    const event = (await c.api.must('GET', `/api/v1/namespaces/${s.ns}/events`)).items.find((e: any) => e.reason === 'HoldReleased');
    assert.ok(event && event.message.includes('(reason finalized)'), 'a HoldReleased Event with the reason');
    assert.equal(s.kubelet.errors, []);
  } finally {
    console.log(`\nwith the hold:\n${s.timeline.join('\n')}\n`);
    if (process.env.TEST_VERBOSE) console.log(`kubelet:\n${s.kubelet.timeline()}\n`);
    await s.kubelet.stop();
    await stripCustomResources(c, GROUP);
  }
});

test('control: the same kubectl delete -f without the hold leaves the custom resources stuck with their finalizer', async () => {
  const s = await operatorSet(c, GROUP, {});
  try {
    assert.is((await kubectl(c, ['apply', '-f', '-'], s.manifest)).code, 0);
    s.at('kubectl apply -f: the same set, DRAINGUARD_HOLD unset');
    const [{ proc: operator, pod }] = await operatorPods(c, s);
    s.at('operator running; the RBAC carries the pod\'s finalizer (the guard)');
    const deleting = kubectl(c, ['delete', '-f', '-', '--wait=false'], s.manifest);
    s.at('kubectl delete -f started');
    await operator.line('drained', 30_000);
    s.at(`operator drained: the pod was deleted with the Deployment at once${operator.stdout.includes('cleanup installations/default started') ? ', its cleanup of installations/default under way' : ''}`);
    const released = await operator.log('guard released', 30_000);
    s.at('drainguard: guard released', released.time);
    assert.is((await deleting).code, 0);
    await c.poll(`/api/v1/namespaces/${s.ns}/pods/${pod.metadata.name}`, (_b, st) => st === 404, 30_000, 'the pod gone');
    s.at('pod gone');
    assert.not.ok(operator.stdout.some((l) => l.startsWith('finalize ')), `it removed no finalizer: ${operator.stdout.join('\n')}`);
    for (const plural of ['installations', 'apiservers']) {
      const cr = await c.api.must('GET', `/apis/${GROUP}/v1/${plural}/default`);
      assert.ok(cr.metadata.deletionTimestamp && cr.metadata.finalizers.includes(`${GROUP}/cleanup`), `${plural}/default stuck Terminating with its finalizer`);
    }
    s.at('installations/default and apiservers/default stuck Terminating with the operator\'s finalizer, no operator left');
  } finally {
    console.log(`\nwithout the hold:\n${s.timeline.join('\n')}\n`);
    await s.kubelet.stop();
    await stripCustomResources(c, GROUP);
  }
});

test.run();
