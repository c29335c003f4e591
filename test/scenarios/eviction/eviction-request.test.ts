// The EvictionRequest responder (KEP-4563) on the first release with its
// controller: a control plane of this file's own, Kubernetes v1.38.0-beta.0
// (test/support/kubernetes builds it: npm run k8s -- 1.38.0-beta.0) with the
// EvictionRequestAPI gate and lifecycle.k8s.io/v1alpha1 on, its real
// evictionrequest-controller and imperative-eviction-responder-controller.
// The pod runs through the kubelet stand-in (1.38.0-beta.0's kubelet cannot be
// built from the module proxy: test/support/kubernetes/build.ts), which sends
// SIGTERM when the pod is deleted, as the kubelet does (eviction-request-node.test.ts:
// the same on the real v1.37.2 kubelet). deploy/examples/wrap,
// its Role as shipped, the Pod naming drainguard.dev/drain in
// spec.evictionResponders; a reconcile of 6 s in flight.
// - An EvictionRequest for the pod: the controller makes drainguard's entry
//   Active; drainguard drains before any SIGTERM, heartbeats status.responders[]
//   while the reconcile runs, sets completionTime once drained; then the
//   imperative evictor evicts the pod, and the SIGTERM finds the drain done.
// - The control: the same pod without spec.evictionResponders: the controller
//   goes straight to the imperative evictor, and nothing drains until the SIGTERM.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { privateCluster } from '../../support/cluster/index.ts';
import { type KubeletCluster, kubeletCluster } from '../../support/kubelet/cluster.ts';
import { EVICTION_REQUEST_RELEASE, releaseAssets } from '../../support/kubernetes/build.ts';
import { RESPONDER, type Running, WORK_MS, at, running } from './support.ts';

const REQUESTER = 'tests.drainguard.dev/requester';

let c: KubeletCluster;
test.before(async () => {
  const { cluster } = await privateCluster({
    assets: releaseAssets(EVICTION_REQUEST_RELEASE),
    featureGates: { EvictionRequestAPI: true },
    runtimeConfig: 'lifecycle.k8s.io/v1alpha1=true',
  });
  c = await kubeletCluster(cluster);
});

/** Asks for the pod's eviction as a requester would; returns when it was asked (epoch ms). */
async function requestEviction(r: Running): Promise<number> {
  const asked = Date.now();
  await c.api.must('POST', `/apis/lifecycle.k8s.io/v1alpha1/namespaces/${r.ns}/evictionrequests`, {
    apiVersion: 'lifecycle.k8s.io/v1alpha1',
    kind: 'EvictionRequest',
    metadata: { name: `evict-${r.pod}` },
    spec: { target: { pod: { name: r.pod, uid: r.uid } }, requester: REQUESTER, intent: 'Eviction' },
  });
  return asked;
}

/** The pod's Eviction (the controller's), once `ok` holds of it. */
function eviction(r: Running, ok: (e: any) => boolean, ms: number, what: string): Promise<any> {
  return c
    .poll(
      `/apis/lifecycle.k8s.io/v1alpha1/namespaces/${r.ns}/evictions`,
      (b) => (b.items ?? []).some((e: any) => e.spec?.target?.pod?.uid === r.uid && ok(e)),
      ms,
      what,
    )
    .then((b) => b.items.find((e: any) => e.spec?.target?.pod?.uid === r.uid && ok(e)));
}
const entry = (e: any, name: string) => e.status?.responders?.find((x: any) => x.name === name);
const stateOf = (e: any, name: string) => e.status?.targetResponders?.find((x: any) => x.name === name)?.state;
const sigtermAt = (r: Running) =>
  r.kubelet.events.find((e) => e.pod === r.pod && e.container === 'manager' && e.what === 'signal SIGTERM')?.at;

test('an EvictionRequest for the pod: drainguard drains before any SIGTERM, heartbeats, completes; then the eviction', async () => {
  const r = await running(c, true);
  try {
    const asked = await requestEviction(r);
    const started = await r.dg.log('drain started', 30_000);
    assert.is(started.source, 'eviction', r.timeline());
    assert.is(sigtermAt(r), undefined, `a SIGTERM before the drain:\n${r.timeline()}`);
    assert.not.ok(r.dg.stdout.includes('work done 0'), 'the reconcile was still in flight at the drain');
    // The heartbeat while the reconcile runs: drainguard's entry Active, heartbeatTime set, no completionTime yet.
    const beating = await eviction(
      r,
      (e) => entry(e, RESPONDER)?.heartbeatTime !== undefined,
      WORK_MS + 20_000,
      "drainguard's heartbeat in the Eviction's status.responders[]",
    );
    assert.is(stateOf(beating, RESPONDER), 'Active');
    assert.is(
      entry(beating, RESPONDER).completionTime,
      undefined,
      `completed before the drain was over:\n${JSON.stringify(beating.status)}`,
    );
    assert.ok(Date.parse(entry(beating, RESPONDER).expectedCompletionTime) >= Date.parse(entry(beating, RESPONDER).startTime));
    assert.equal(beating.status.requesters, [{ name: REQUESTER, intent: 'Eviction' }]);
    // Drained: completionTime, then the controller passes the eviction on to the imperative evictor.
    const completed = await eviction(r, (e) => entry(e, RESPONDER)?.completionTime !== undefined, 60_000, "drainguard's completionTime");
    const ended = r.dg.logs().find((l) => l.msg === 'drain ended')!;
    assert.ok(ended, r.timeline());
    assert.is(ended.outcome, 'drained', r.timeline());
    assert.ok(r.dg.stdout.includes('work done 0'), `the reconcile did not finish:\n${r.timeline()}`);
    assert.match(entry(completed, RESPONDER).message, /operator drained \(drained\)/);
    const reported = await r.dg.log('eviction: drain over, completion reported', 10_000);
    // The imperative evictor evicts the pod: the kubelet's SIGTERM comes after the completion, and finds nothing left to drain.
    await r.kubelet.event((e) => e.pod === r.pod && e.what === 'deleted 200', 60_000, 'the pod evicted and deleted');
    const sigterm = sigtermAt(r)!;
    assert.ok(sigterm > at(reported), `the SIGTERM came before the completion:\n${r.timeline()}`);
    assert.ok(sigterm > at(ended), r.timeline());
    assert.not.ok(
      r.kubelet.events.some((e) => e.pod === r.pod && e.what === 'signal SIGKILL'),
      r.timeline(),
    );
    const stopSent = at(r.dg.logs().find((l) => l.msg === 'stop signal sent'));
    const released = at(await r.dg.log('guard released', 30_000));
    assert.ok(released < sigterm + r.graceMs, `released after the kubelet's SIGKILL:\n${r.timeline()}`);
    const final = await eviction(
      r,
      (e) => e.status?.conditions?.some((k: any) => k.type === 'TargetEvicted' && k.status === 'True'),
      30_000,
      'TargetEvicted',
    );
    assert.is(stateOf(final, RESPONDER), 'Completed', JSON.stringify(final.status));
    assert.not.ok(
      r.dg.logs().some((l) => l.msg === 'eviction no longer waits on drainguard: heartbeats stopped'),
      'its own completion taken for a withdrawal',
    );
    assert.equal(r.kubelet.errors, []);
    console.log(
      `eviction request: ${JSON.stringify({
        requestToDrainMs: at(started) - asked,
        drainMs: ended.durationMs,
        completionToSigtermMs: sigterm - at(reported),
        sigtermToStopSignalMs: stopSent - sigterm,
        requestToSigtermMs: sigterm - asked,
        releasedBeforeKillMs: sigterm + r.graceMs - released,
      })}`,
    );
  } finally {
    await r.close();
  }
});

test('the control: the same pod without spec.evictionResponders: nothing drains until the SIGTERM of the eviction', async () => {
  const r = await running(c, false);
  try {
    const asked = await requestEviction(r);
    const started = await r.dg.log('drain started', 60_000);
    const sigterm = sigtermAt(r);
    assert.ok(sigterm !== undefined && sigterm <= at(started), `the drain started before the kubelet's SIGTERM:\n${r.timeline()}`);
    assert.is(started.source, 'signal');
    const reason = r.dg.logs().find((l) => l.msg === 'not responding to eviction requests')!.reason;
    assert.match(String(reason), /does not name drainguard\.dev\/drain/);
    const e = await eviction(r, (x) => stateOf(x, 'imperative-eviction.k8s.io/evictor') !== undefined, 10_000, 'the Eviction');
    assert.is(entry(e, RESPONDER), undefined);
    await r.kubelet.event((x) => x.pod === r.pod && x.what === 'deleted 200', 60_000, 'the pod evicted and deleted');
    console.log(`control: ${JSON.stringify({ requestToSigtermMs: sigterm - asked, drainStartAfterSigtermMs: at(started) - sigterm })}`);
  } finally {
    await r.close();
  }
});

test.run();
