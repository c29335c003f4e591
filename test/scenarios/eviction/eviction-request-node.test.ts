// The EvictionRequest responder (KEP-4563) on the real kubelet: the control
// plane of eviction-request.test.ts (Kubernetes v1.38.0-beta.0, the
// EvictionRequestAPI gate and lifecycle.k8s.io/v1alpha1 on, its real
// evictionrequest-controller and imperative-eviction-responder-controller), and
// a real node whose kubelet is v1.37.2 (1.38.0-beta.0's cannot be built from the
// module proxy; the version-skew policy lets a kubelet be three minors older).
// A wrap-mode pod guarding a Role, a 6 s reconcile in flight, a 30 s grace.
// - Its spec.evictionResponders names drainguard.dev/drain: an EvictionRequest
//   for it; drainguard drains before any SIGTERM, heartbeats, sets
//   completionTime; the imperative evictor evicts the pod, the kubelet's real
//   SIGTERM finds the drain done, the guard is released before its SIGKILL.
// - The control: the same pod without spec.evictionResponders: the controller
//   goes straight to the imperative evictor, and nothing drains until the
//   kubelet's SIGTERM.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { type TestCluster, privateCluster } from '../../support/cluster/index.ts';
import { EVICTION_REQUEST_RELEASE, releaseAssets } from '../../support/kubernetes/build.ts';
import {
  type RealNode,
  kubeletKills,
  startNode,
  wrapLogs,
  wrapOperatorPid,
  wrapPod,
  wrapStderr,
  wrapStdout,
} from '../../support/node/index.ts';
import { fixture } from '../../support/proc.ts';
import { RESPONDER, WORK_MS, at } from './support.ts';

const KUBELET_RELEASE = 'v1.37.2';
const REQUESTER = 'tests.drainguard.dev/requester';
const GRACE_S = 30;

let c: TestCluster;
let node: RealNode;
let ns: string;

test.before(async () => {
  ({ cluster: c } = await privateCluster({
    assets: releaseAssets(EVICTION_REQUEST_RELEASE),
    featureGates: { EvictionRequestAPI: true },
    runtimeConfig: 'lifecycle.k8s.io/v1alpha1=true',
  }));
  node = await startNode(c, { kubeletRelease: KUBELET_RELEASE });
  ns = (await c.namespace('evreq')).name;
  await c.serviceAccount(ns, 'op');
  // deploy/components/rbac's namespaced rules for a guarded Role, the responder's included.
  await c.grant(ns, 'op', 'op', [
    { apiGroups: [''], resources: ['pods'], verbs: ['get'] },
    { apiGroups: [''], resources: ['events'], verbs: ['create'] },
    { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create', 'list', 'patch', 'delete'] },
    { apiGroups: ['rbac.authorization.k8s.io'], resources: ['roles'], resourceNames: ['guarded'], verbs: ['get', 'patch'] },
    { apiGroups: ['lifecycle.k8s.io'], resources: ['evictions'], verbs: ['list', 'watch'] },
    { apiGroups: ['lifecycle.k8s.io'], resources: ['evictions/status'], verbs: ['patch'] },
  ]);
  await c.api.create(`/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/roles`, {
    metadata: { name: 'guarded' },
    rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get'] }],
  });
});

const timeline = (pod: string) =>
  `--- ${pod}\n${wrapStdout(node, pod).join('\n')}\n${wrapStderr(node, pod).join('\n')}\n--- kubelet\n${node.tail()}`;
const logLine = (pod: string, msg: string) => wrapLogs(node, pod).find((l) => l.msg === msg);

/** drainguard's log line `msg` of pod `pod`, once written. */
const log = (pod: string, msg: string, ms: number) =>
  c.waitFor(
    () => logLine(pod, msg),
    ms,
    `"${msg}" in ${pod}'s log`,
    () => timeline(pod),
  );

/** The wrap-mode pod, naming drainguard's responder or not, running with its reconcile under way; returns its UID. */
async function running(pod: string, responder: boolean): Promise<string> {
  const spec = wrapPod(node, {
    name: pod,
    namespace: ns,
    serviceAccountName: 'op',
    apiUrl: c.url,
    operator: fixture('operator.ts'),
    terminationGracePeriodSeconds: GRACE_S,
    env: {
      DRAINGUARD_GUARD: `role/${ns}/guarded`,
      DRAINGUARD_LOG_LEVEL: 'debug',
      FIXTURE_WORK: String(WORK_MS),
      FIXTURE_WORK_AT: 'usr2',
    },
  }) as { spec: Record<string, unknown> };
  if (responder) spec.spec.evictionResponders = [{ name: RESPONDER, priority: 1000 }];
  const created = await c.api.create(`/api/v1/namespaces/${ns}/pods`, spec);
  assert.equal(
    created.spec.evictionResponders?.map((r: { name: string }) => r.name),
    responder ? [RESPONDER] : undefined,
    'the API server keeps spec.evictionResponders as given (the gate is on)',
  );
  await c.waitFor(
    () => wrapStdout(node, pod).includes('ready'),
    90_000,
    `${pod}'s operator ready`,
    () => timeline(pod),
  );
  await log(pod, responder ? 'responding to eviction requests' : 'not responding to eviction requests', 30_000);
  await c.waitFor(
    async () =>
      ((await c.api.get(`/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/roles/guarded`))?.metadata?.finalizers ?? []).length > 0,
    30_000,
    "the guard's finalizer on the Role",
    () => timeline(pod),
  );
  process.kill(wrapOperatorPid(ns, pod), 'SIGUSR2');
  await c.waitFor(
    () => wrapStdout(node, pod).includes('work start 0'),
    10_000,
    `${pod}'s reconcile started`,
    () => timeline(pod),
  );
  return created.metadata.uid;
}

/** Asks for the pod's eviction as a requester would; returns when it was asked (epoch ms). */
async function requestEviction(pod: string, uid: string): Promise<number> {
  const asked = Date.now();
  await c.api.create(`/apis/lifecycle.k8s.io/v1alpha1/namespaces/${ns}/evictionrequests`, {
    apiVersion: 'lifecycle.k8s.io/v1alpha1',
    kind: 'EvictionRequest',
    metadata: { name: `evict-${pod}` },
    spec: { target: { pod: { name: pod, uid } }, requester: REQUESTER, intent: 'Eviction' },
  });
  return asked;
}

/** The pod's Eviction (the controller's), once `ok` holds of it. */
function eviction(uid: string, ok: (e: any) => boolean, ms: number, what: string): Promise<any> {
  return c.waitFor(
    async () => {
      const list = await c.api.get(`/apis/lifecycle.k8s.io/v1alpha1/namespaces/${ns}/evictions`);
      return (list?.items ?? []).find((e: any) => e.spec?.target?.pod?.uid === uid && ok(e));
    },
    ms,
    what,
  );
}
const entry = (e: any, name: string) => e.status?.responders?.find((x: any) => x.name === name);
const stateOf = (e: any, name: string) => e.status?.targetResponders?.find((x: any) => x.name === name)?.state;

async function gone(pod: string): Promise<void> {
  await c.waitFor(
    async () => (await c.api.get(`/api/v1/namespaces/${ns}/pods/${pod}`)) === undefined,
    90_000,
    `${pod} gone`,
    () => timeline(pod),
  );
}

test("an EvictionRequest on the real kubelet: drainguard drains before the kubelet's SIGTERM, heartbeats, completes; the guard released before its SIGKILL", async () => {
  const pod = 'responder';
  const uid = await running(pod, true);
  const asked = await requestEviction(pod, uid);
  const started = await log(pod, 'drain started', 30_000);
  assert.is(started.source, 'eviction', timeline(pod));
  assert.equal(kubeletKills(node, ns, pod, 'manager'), [], `the kubelet stopped the container before the drain:\n${timeline(pod)}`);
  assert.not.ok(wrapStdout(node, pod).includes('work done 0'), 'the reconcile was still in flight at the drain');
  const beating = await eviction(
    uid,
    (e) => entry(e, RESPONDER)?.heartbeatTime !== undefined,
    WORK_MS + 20_000,
    "drainguard's heartbeat in the Eviction's status.responders[]",
  );
  assert.is(stateOf(beating, RESPONDER), 'Active');
  assert.is(entry(beating, RESPONDER).completionTime, undefined, `completed before the drain was over:\n${JSON.stringify(beating.status)}`);
  assert.equal(beating.status.requesters, [{ name: REQUESTER, intent: 'Eviction' }]);
  const completed = await eviction(uid, (e) => entry(e, RESPONDER)?.completionTime !== undefined, 60_000, "drainguard's completionTime");
  assert.match(entry(completed, RESPONDER).message, /operator drained \(drained\)/);
  const ended = logLine(pod, 'drain ended');
  assert.is(ended?.outcome, 'drained', timeline(pod));
  const reported = await log(pod, 'eviction: drain over, completion reported', 10_000);
  // The imperative evictor evicts the pod: the kubelet's real stop, after the completion.
  await gone(pod);
  const out = wrapStdout(node, pod);
  assert.ok(out.includes('work done 0') && !out.includes('work interrupted 0'), `the reconcile completed:\n${timeline(pod)}`);
  const [kill] = kubeletKills(node, ns, pod, 'manager');
  assert.ok(kill, `the kubelet's stop of the container in its log:\n${timeline(pod)}`);
  assert.is(kill!.gracePeriodS, GRACE_S, "the eviction's grace is the Pod's");
  assert.ok(kill!.at > at(reported), `the kubelet's SIGTERM came before the completion:\n${timeline(pod)}`);
  assert.ok(kill!.at > at(ended), timeline(pod));
  const released = await log(pod, 'guard released', 10_000);
  const killAt = kill!.at + GRACE_S * 1000;
  const marginMs = killAt - at(released);
  assert.ok(marginMs > 0, `released ${marginMs} ms before the kubelet's SIGKILL:\n${timeline(pod)}`);
  const final = await eviction(
    uid,
    (e) => e.status?.conditions?.some((k: any) => k.type === 'TargetEvicted' && k.status === 'True'),
    30_000,
    'TargetEvicted',
  );
  assert.is(stateOf(final, RESPONDER), 'Completed', JSON.stringify(final.status));
  assert.not.ok(logLine(pod, 'eviction no longer waits on drainguard: heartbeats stopped'), 'its own completion taken for a withdrawal');
  console.log(
    `eviction request, kubelet ${KUBELET_RELEASE} on a ${EVICTION_REQUEST_RELEASE} control plane: ${JSON.stringify({
      requestToDrainMs: at(started) - asked,
      drainMs: ended?.durationMs,
      completionToKubeletStopMs: kill!.at - at(reported),
      requestToKubeletStopMs: kill!.at - asked,
      releasedBeforeKillMs: marginMs,
    })}`,
  );
});

test("the control on the real kubelet: the same pod without spec.evictionResponders: nothing drains until the kubelet's SIGTERM", async () => {
  const pod = 'control';
  const uid = await running(pod, false);
  const asked = await requestEviction(pod, uid);
  const started = await log(pod, 'drain started', 60_000);
  assert.is(started.source, 'signal', timeline(pod));
  const [kill] = kubeletKills(node, ns, pod, 'manager');
  assert.ok(kill && kill.at <= at(started), `the drain started before the kubelet's stop:\n${timeline(pod)}`);
  assert.match(String(logLine(pod, 'not responding to eviction requests')?.reason), /does not name drainguard\.dev\/drain/);
  const e = await eviction(uid, (x) => stateOf(x, 'imperative-eviction.k8s.io/evictor') !== undefined, 10_000, 'the Eviction');
  assert.is(entry(e, RESPONDER), undefined);
  await gone(pod);
  console.log(
    `control: ${JSON.stringify({ requestToKubeletStopMs: kill!.at - asked, drainStartAfterKubeletStopMs: at(started) - kill!.at })}`,
  );
});

test.run();
