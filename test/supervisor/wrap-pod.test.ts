// Wrap mode inside a pod (DRAINGUARD_POD_* set, an API reachable): the Pod's own
// grace period sets the drain timeout, and the drain is told in Events on the pod.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startApiServer, writeKubeconfig } from '../support/apiserver/index.ts';
import { NODE, drainguard, fixture, tempDir } from '../support/proc.ts';

test("the Pod's terminationGracePeriodSeconds sets the drain timeout; DrainStarted and Drained Events on the pod", async () => {
  const api = await startApiServer();
  try {
    const pod = api.create({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'op-0', namespace: 'default' }, spec: { nodeName: 'n', terminationGracePeriodSeconds: 12 } });
    const p = drainguard(['run', '--', NODE, fixture('operator.ts')], {
      KUBECONFIG: writeKubeconfig(tempDir(), api, api.adminToken),
      DRAINGUARD_POD_NAME: 'op-0',
      DRAINGUARD_POD_NAMESPACE: 'default',
      DRAINGUARD_POD_UID: pod.metadata.uid!,
      FIXTURE_WORK: '200',
    });
    await p.line('ready');
    assert.equal((await p.log('grace period read from the Pod')).gracePeriodMs, 12_000);
    p.kill('SIGTERM');
    assert.equal((await p.exit()).code, 0);
    assert.equal(p.logs().find((l) => l.msg === 'drain started')!.timeoutMs, 12_000 - 5_000 - 2_000, 'grace - stop timeout - 2s');
    const reasons = api.list('v1', 'events', 'default').map((e: any) => `${e.involvedObject.name} ${e.type} ${e.reason}`);
    assert.equal(reasons.sort(), ['op-0 Normal DrainStarted', 'op-0 Normal Drained']);
  } finally {
    await api.close();
  }
});

test("an explicit DRAINGUARD_GRACE_PERIOD shorter than the Pod's is kept; a longer one gives way to the Pod's, with a warning", async () => {
  const api = await startApiServer();
  try {
    const pod = api.create({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'op-0', namespace: 'default' }, spec: { nodeName: 'n', terminationGracePeriodSeconds: 12 } });
    const start = (grace: string) =>
      drainguard(['run', '--grace-period', grace, '--', NODE, fixture('operator.ts')], {
        KUBECONFIG: writeKubeconfig(tempDir(), api, api.adminToken),
        DRAINGUARD_POD_NAME: 'op-0',
        DRAINGUARD_POD_NAMESPACE: 'default',
        DRAINGUARD_POD_UID: pod.metadata.uid!,
      });
    const shorter = start('10s');
    await shorter.line('ready');
    await api.waitFor(() => api.requestsMatching((r) => r.resource === 'pods' && r.verb === 'get').length >= 1 || undefined, 10_000, 'the Pod read');
    shorter.kill('SIGTERM');
    assert.equal((await shorter.exit()).code, 0);
    assert.equal(shorter.logs().find((l) => l.msg === 'drain started')!.timeoutMs, 10_000 - 5_000 - 2_000);
    assert.equal(shorter.logs().find((l) => l.msg === 'termination requested')!.gracePeriodFrom, '--grace-period');
    assert.not.ok(shorter.logs().some((l) => l.msg === 'grace period read from the Pod'));

    // The kubelet kills at the Pod's 12 s: drainguard must not plan for 20.
    const longer = start('20s');
    await longer.line('ready');
    const warned = await longer.log("--grace-period is longer than the Pod's terminationGracePeriodSeconds, and the kubelet kills at the Pod's: going by the Pod's");
    assert.equal([warned.gracePeriodMs, warned.configuredMs], [12_000, 20_000]);
    await longer.log('grace period read from the Pod');
    longer.kill('SIGTERM');
    assert.equal((await longer.exit()).code, 0);
    assert.equal(longer.logs().find((l) => l.msg === 'drain started')!.timeoutMs, 12_000 - 5_000 - 2_000);
    assert.equal(longer.logs().find((l) => l.msg === 'termination requested')!.gracePeriodFrom, 'pod');
  } finally {
    await api.close();
  }
});

test.run();
