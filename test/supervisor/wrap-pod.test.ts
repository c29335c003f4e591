// Wrap mode inside a pod (DRAINGUARD_POD_* set, an API reachable): the Pod's own
// grace period sets the drain timeout, and the drain is told in Events on the pod.
// On the real control plane; the Pods are only objects (nothing runs them but
// drainguard, started by the test as if in them).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { resourcePath, useCluster } from '../support/cluster/index.ts';
import { NODE, drainguard, fixture } from '../support/proc.ts';

const cluster = await useCluster();

/** A Pod object with this grace period, in a fresh namespace; bound to the file's Node. */
async function pod(terminationGracePeriodSeconds: number): Promise<{ ns: string; uid: string }> {
  const { name: ns } = await cluster.namespace('wrap-pod');
  const created = await cluster.create({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'op-0', namespace: ns },
    spec: {
      nodeName: await cluster.node(),
      terminationGracePeriodSeconds,
      containers: [{ name: 'manager', image: 'example.com/operator' }],
    },
  });
  return { ns, uid: created.metadata.uid };
}

test("the Pod's terminationGracePeriodSeconds sets the drain timeout; DrainStarted and Drained Events on the pod", async () => {
  const { ns, uid } = await pod(12);
  const p = drainguard(['run', '--', NODE, fixture('operator.ts')], {
    KUBECONFIG: cluster.adminKubeconfig,
    DRAINGUARD_POD_NAME: 'op-0',
    DRAINGUARD_POD_NAMESPACE: ns,
    DRAINGUARD_POD_UID: uid,
    FIXTURE_WORK: '200',
  });
  await p.line('ready');
  assert.equal((await p.log('grace period read from the Pod')).gracePeriodMs, 12_000);
  p.kill('SIGTERM');
  assert.equal((await p.exit()).code, 0);
  assert.equal(p.logs().find((l) => l.msg === 'drain started')!.timeoutMs, 12_000 - 5_000 - 2_000, 'grace - stop timeout - 2s');
  const reasons = (await cluster.api.list(resourcePath('v1', 'events', ns))).map(
    (e: any) => `${e.involvedObject.name} ${e.involvedObject.uid} ${e.type} ${e.reason}`,
  );
  // StopCause: why the pod stops and the SIGKILL drainguard goes by (here: no deletion, the grace period).
  assert.equal(reasons.sort(), [`op-0 ${uid} Normal DrainStarted`, `op-0 ${uid} Normal Drained`, `op-0 ${uid} Normal StopCause`]);
});

test("an explicit DRAINGUARD_GRACE_PERIOD shorter than the Pod's is kept; a longer one gives way to the Pod's, with a warning", async () => {
  const { ns, uid } = await pod(12);
  {
    const start = (grace: string) =>
      drainguard(['run', '--grace-period', grace, '--', NODE, fixture('operator.ts')], {
        KUBECONFIG: cluster.adminKubeconfig,
        DRAINGUARD_POD_NAME: 'op-0',
        DRAINGUARD_POD_NAMESPACE: ns,
        DRAINGUARD_POD_UID: uid,
      });
    const shorter = start('10s');
    await shorter.line('ready');
    // Its API is opened once the operator started, and the Pod read then.
    assert.equal((await shorter.log('grace period read from the Pod; --grace-period is shorter and stays')).podGracePeriodMs, 12_000);
    shorter.kill('SIGTERM');
    assert.equal((await shorter.exit()).code, 0);
    assert.equal(shorter.logs().find((l) => l.msg === 'drain started')!.timeoutMs, 10_000 - 5_000 - 2_000);
    assert.equal(shorter.logs().find((l) => l.msg === 'termination requested')!.gracePeriodFrom, '--grace-period');
    assert.not.ok(
      shorter.logs().some((l) => l.msg === 'grace period read from the Pod'),
      'the shorter one is kept',
    );

    // The kubelet kills at the Pod's 12 s: drainguard must not plan for 20.
    const longer = start('20s');
    await longer.line('ready');
    const warned = await longer.log(
      "--grace-period is longer than the Pod's terminationGracePeriodSeconds, and the kubelet kills at the Pod's: going by the Pod's",
    );
    assert.equal([warned.gracePeriodMs, warned.configuredMs], [12_000, 20_000]);
    await longer.log('grace period read from the Pod');
    longer.kill('SIGTERM');
    assert.equal((await longer.exit()).code, 0);
    assert.equal(longer.logs().find((l) => l.msg === 'drain started')!.timeoutMs, 12_000 - 5_000 - 2_000);
    assert.equal(longer.logs().find((l) => l.msg === 'termination requested')!.gracePeriodFrom, 'pod');
  }
});

test.run();
