// Kubernetes Events on the pod for the drain, written by the built sidecar to
// the real API server (test/support/cluster) as the pod's own ServiceAccount,
// with a token bound to the Pod. Where requests are counted or Events refused,
// the sidecar goes through the fault proxy (test/support/faultproxy).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { type TestCluster, resourcePath, useCluster } from '../../support/cluster/index.ts';
import { type FaultProxy, startFaultProxy } from '../../support/faultproxy/index.ts';
import { tempDir } from '../../support/proc.ts';
import { prestop, startOperator, startSidecar } from './support.ts';

const POD = 'op-7d9f';

const cluster: TestCluster = await useCluster();

interface SetUp {
  readonly ns: string;
  readonly uid: string;
  readonly env: NodeJS.ProcessEnv;
  readonly proxy?: FaultProxy;
  /** Every Event in the namespace. */
  events(): Promise<Record<string, any>[]>;
}

/** A namespace with a Pod bound to the file's Node and a ServiceAccount that may create Events there, as a Helm chart would set it up. */
async function setUp(options: { terminationGracePeriodSeconds?: number; proxy?: boolean } = {}): Promise<SetUp> {
  const { name: ns } = await cluster.namespace('events');
  await cluster.serviceAccount(ns, 'op');
  await cluster.grant(ns, 'op', 'op-events', [
    { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] },
    { apiGroups: [''], resources: ['pods'], verbs: ['get'] },
  ]);
  const { terminationGracePeriodSeconds } = options;
  const pod = await cluster.create({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: POD, namespace: ns },
    spec: {
      nodeName: await cluster.node(),
      serviceAccountName: 'op',
      containers: [{ name: 'operator', image: 'op' }],
      ...(terminationGracePeriodSeconds !== undefined && { terminationGracePeriodSeconds }),
    },
  });
  const uid = pod.metadata.uid as string;
  const proxy = options.proxy ? await startFaultProxy(cluster) : undefined;
  const token = await cluster.token(ns, 'op', { pod: { name: POD, uid } });
  const kubeconfig = cluster.kubeconfigFor(token, { server: proxy?.url ?? cluster.url });
  return {
    ns,
    uid,
    proxy,
    env: { KUBECONFIG: kubeconfig, DRAINGUARD_POD_NAME: POD, DRAINGUARD_POD_NAMESPACE: ns, DRAINGUARD_POD_UID: uid },
    events: () => cluster.api.list(resourcePath('v1', 'events', ns)),
  };
}

test('drain started and drained: Events on the pod, with the duration', async () => {
  const { ns, uid, env, proxy, events } = await setUp({ proxy: true });
  try {
    const pod = await startSidecar(env);
    const operator = await startOperator(pod, { FIXTURE_WORK: '500' });
    assert.equal((await prestop(pod).exit()).code, 0);
    const drained = await cluster.waitFor(async () => (await events()).find((e) => e.reason === 'Drained'), 10_000, 'the Drained Event');
    const started = (await events()).find((e) => e.reason === 'DrainStarted')!;
    assert.ok(started, 'DrainStarted Event');
    assert.equal(started.type, 'Normal');
    assert.match(started.message, /by the preStop hook \(drainguard prestop\)/);
    const durationMs = pod.sidecar.logs().find((l) => l.msg === 'drain ended')!.durationMs as number;
    assert.match(drained.message, new RegExp(`^drain ended after ${(durationMs / 1000).toFixed(1)}s: every operator client said drained`));
    for (const e of [started, drained]) {
      assert.equal(e.involvedObject, { apiVersion: 'v1', kind: 'Pod', name: POD, namespace: ns, uid });
      assert.equal(e.reportingComponent, 'drainguard');
    }
    // The Events (those two and StopCause, why the pod stops) were written by the pod's ServiceAccount, each accepted at the first try.
    const eventWrites = () => proxy!.requests.filter((r) => r.resource === 'events' && r.verb === 'create');
    await cluster.waitFor(() => eventWrites().filter((r) => r.done).length >= 3, 10_000, 'the three Event writes answered');
    const writes = eventWrites();
    assert.equal(writes.length, 3, JSON.stringify(writes.map((r) => [r.user, r.status])));
    assert.ok(
      writes.every((r) => r.user === `system:serviceaccount:${ns}:op` && r.status === 201),
      JSON.stringify(writes.map((r) => [r.user, r.status])),
    );
    operator.kill('SIGTERM');
    await operator.exit();
    pod.sidecar.kill('SIGTERM');
    assert.equal((await pod.sidecar.exit()).code, 0);
  } finally {
    await proxy!.close();
  }
});

test('a drain that times out is a Warning Event', async () => {
  const { env, events } = await setUp();
  const pod = await startSidecar({ ...env, DRAINGUARD_DRAIN_TIMEOUT: '600ms' });
  const operator = await startOperator(pod, { FIXTURE_ACK: 'never' });
  assert.equal((await prestop(pod).exit()).code, 0);
  const timedOut = await cluster.waitFor(
    async () => (await events()).find((e) => e.reason === 'DrainTimedOut'),
    10_000,
    'the DrainTimedOut Event',
  );
  assert.equal(timedOut.type, 'Warning');
  assert.match(timedOut.message, /^drain ended after 0\.[67]s: the drain deadline passed/);
  operator.kill('SIGKILL');
  await operator.exit();
  pod.sidecar.kill('SIGTERM');
  assert.equal((await pod.sidecar.exit()).code, 0);
});

test('Events are best effort: an API that refuses them changes nothing', async () => {
  const { env, proxy, events } = await setUp({ proxy: true });
  try {
    const refused = proxy!.rule({ match: (r) => r.resource === 'events', status: 500, message: 'etcd is sad' });
    const pod = await startSidecar(env);
    const operator = await startOperator(pod, { FIXTURE_WORK: '200' });
    assert.equal((await prestop(pod).exit()).code, 0);
    await pod.sidecar.log('could not record a Kubernetes Event');
    operator.kill('SIGTERM');
    await operator.exit();
    pod.sidecar.kill('SIGTERM');
    assert.equal((await pod.sidecar.exit()).code, 0);
    // The sidecar did try, and only the Events were refused: the Pod was read through the same proxy.
    assert.ok(refused.hits > 0, 'no Event write reached the API');
    assert.ok(
      proxy!.requests.some((r) => r.resource === 'pods' && r.verb === 'get' && r.status === 200),
      'the Pod read',
    );
    assert.equal((await events()).length, 0);
  } finally {
    await proxy!.close();
  }
});

test("the Pod's grace period replaces the default, and the drain timeout follows it", async () => {
  const { env, events } = await setUp({ terminationGracePeriodSeconds: 45 });
  const pod = await startSidecar(env);
  const read = await pod.sidecar.log('grace period read from the Pod');
  assert.equal([read.gracePeriodMs, read.drainTimeoutMs], [45_000, 38_000]);
  const operator = await startOperator(pod, { FIXTURE_ACK: 'never' });
  const hook = prestop(pod);
  const remaining = Number((await operator.line(/^drain remainingMs=/)).split('=')[1]);
  assert.ok(remaining > 37_000 && remaining <= 38_000, `remainingMs ${remaining}`);
  // Two signals cut the drain short (the second only once the first was seen: signals do not queue).
  pod.sidecar.kill('SIGTERM');
  await pod.sidecar.log('termination requested');
  pod.sidecar.kill('SIGTERM');
  assert.equal((await hook.exit()).code, 0);
  operator.kill('SIGKILL');
  await operator.exit();
  await pod.sidecar.exit();

  // A grace period given explicitly and shorter than the Pod's is kept (a budget the user chose).
  const fixed = await startSidecar({ ...env, DRAINGUARD_GRACE_PERIOD: '20s' });
  const second = await startOperator(fixed, { FIXTURE_ACK: 'never' });
  const fixedHook = prestop(fixed);
  const fixedRemaining = Number((await second.line(/^drain remainingMs=/)).split('=')[1]);
  assert.ok(fixedRemaining > 12_000 && fixedRemaining <= 13_000, `remainingMs ${fixedRemaining}: 20s - 5s - 2s`);
  second.kill('SIGKILL');
  assert.equal((await fixedHook.exit()).code, 0);
  await cluster.waitFor(
    async () => (await events()).filter((e) => e.reason === 'DrainStarted').length === 2,
    10_000,
    'the DrainStarted Event of the second sidecar',
  );
  assert.not.ok(fixed.sidecar.logs().some((l) => l.msg === 'grace period read from the Pod'));
  fixed.sidecar.kill('SIGTERM');
  await fixed.sidecar.exit();
});

test('no API configured: no Events, and the sidecar works as before', async () => {
  const pod = await startSidecar({ DRAINGUARD_POD_NAME: 'op', DRAINGUARD_POD_NAMESPACE: 'operators', HOME: tempDir() });
  const logged = await pod.sidecar.log('no Kubernetes API configured: no Events on the pod');
  assert.match(logged.reason as string, /no Kubernetes API configured/);
  assert.equal((await prestop(pod).exit()).code, 0);
  pod.sidecar.kill('SIGTERM');
  assert.equal((await pod.sidecar.exit()).code, 0);
});

test.run();
