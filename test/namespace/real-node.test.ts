// `kubectl delete namespace` with the real namespace controller and the real
// kubelet (test/support/node): ordered namespace deletion (on by default since
// Kubernetes 1.33) deletes the operator's pod first, the kubelet sends
// drainguard its SIGTERM, and with DRAINGUARD_HOLD listing the kind drainguard
// deletes the custom resources while the operator still runs, waits until the
// operator removed their finalizers, then drains and stops: the namespace goes.
// The control, DRAINGUARD_HOLD empty: the operator stops first, the custom
// resources are deleted after it with nobody to finalize them, and the
// namespace stays Terminating. On 1.30–1.32 (everything deleted at once) the
// guard on the operator's Role and RoleBinding (as every install has it, here
// too) keeps it able to finalize them, and the step keeps it running until it
// has; its cleanup takes 2 s, so that in the control the SIGTERM comes first on
// either release. test/namespace/delete.test.ts is the same with the test
// playing the kubelet.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { type TestCluster, useCluster } from '../support/cluster/index.ts';
import { type RealNode, startNode, wrapLogs, wrapPod, wrapStderr, wrapStdout } from '../support/node/index.ts';
import { fixture } from '../support/proc.ts';
import { widgetNamespace } from './support.ts';

let c: TestCluster;
let node: RealNode;

test.before(async () => {
  c = await useCluster();
  node = await startNode(c);
});

const SA_CA = '/var/run/secrets/kubernetes.io/serviceaccount/ca.crt';

async function scenario(hold: boolean): Promise<{ ns: string; group: string; gone: boolean; pod: string; widgets: string }> {
  const { ns, group, widgets } = await widgetNamespace(c, 'nsreal');
  // Its output file on the host is named after it: one per scenario.
  const pod = hold ? 'op-hold' : 'op-control';
  await c.api.create(
    `/api/v1/namespaces/${ns}/pods`,
    wrapPod(node, {
      name: pod,
      namespace: ns,
      serviceAccountName: 'op',
      apiUrl: c.url,
      operator: fixture('namespace-operator.ts'),
      terminationGracePeriodSeconds: 10,
      env: {
        DRAINGUARD_HOLD: hold ? `widgets.${group}` : '',
        // The operator's Role and RoleBinding, as an install guards them.
        DRAINGUARD_GUARD: `role/${ns}/op,rolebinding/${ns}/op`,
        DRAINGUARD_STOP_TIMEOUT: '2s',
        OP_API: c.url,
        OP_TOKEN: await c.token(ns, 'op'),
        OP_CA: SA_CA,
        OP_NAMESPACE: ns,
        OP_GROUP: group,
        OP_FINALIZE_AFTER_MS: '2000',
      },
    }),
  );
  const out = () => wrapStdout(node, pod);
  await c.waitFor(
    () => out().includes('ready'),
    60_000,
    'the operator ready',
    () => `${node.tail()}\n${wrapStderr(node, pod).join('\n')}`,
  );
  const t0 = Date.now();
  await c.api.delete(`/api/v1/namespaces/${ns}`);
  // The namespace controller deletes the pod first; the kubelet stops it and deletes it for good.
  await c.waitFor(async () => (await c.api.get(`/api/v1/namespaces/${ns}/pods/${pod}`)) === undefined, 60_000, 'the pod stopped and gone');
  const podGone = Date.now() - t0;
  if (hold) {
    await c.waitFor(async () => (await c.api.get(`/api/v1/namespaces/${ns}`)) === undefined, 60_000, 'the namespace gone');
    console.log(`DRAINGUARD_HOLD: the pod gone ${podGone} ms, the namespace ${Date.now() - t0} ms after its delete`);
    return { ns, group, gone: true, pod, widgets };
  }
  await c.waitFor(
    async () => (await c.api.list(widgets)).every((w) => w.metadata.deletionTimestamp),
    60_000,
    'the widgets deleted by the namespace controller',
  );
  console.log(`control: the pod gone ${podGone} ms, the widgets deleted by ${Date.now() - t0} ms after the namespace's delete`);
  const gone = (await c.api.get(`/api/v1/namespaces/${ns}`)) === undefined;
  return { ns, group, gone, pod, widgets };
}

test("kubectl delete namespace, DRAINGUARD_HOLD listing the kind: the pod is deleted first, the kubelet's SIGTERM has drainguard finalize the custom resources while the operator runs; the namespace is gone", async () => {
  const r = await scenario(true);
  const out = wrapStdout(node, r.pod);
  assert.equal(out.filter((l) => l.startsWith('finalized ')).sort(), ['finalized w1 200', 'finalized w2 200'], out.join('\n'));
  const msgs = wrapLogs(node, r.pod).map((l) => l.msg);
  const done = msgs.indexOf('namespace being deleted: its custom resources are finalized and gone');
  assert.ok(done >= 0 && done < msgs.indexOf('drain started'), msgs.join(' | '));
  assert.ok(out.includes('signal SIGTERM'), 'the operator stopped by drainguard');
});

test('control: DRAINGUARD_HOLD empty: the operator stops before it has finalized the custom resources, which keep their finalizer; the namespace stays Terminating', async () => {
  const r = await scenario(false);
  assert.not.ok(r.gone, 'the namespace is still there');
  assert.equal(
    wrapStdout(node, r.pod).filter((l) => l.startsWith('finalized ')),
    [],
    'the operator finalized nothing',
  );
  const kept = await c.api.list(r.widgets);
  assert.equal(
    kept.map((w) => [w.metadata.name, w.metadata.finalizers]),
    [
      ['w1', [`${r.group}/cleanup`]],
      ['w2', [`${r.group}/cleanup`]],
    ],
  );
  // Let the namespace go.
  for (const w of kept) await c.api.patch(`${r.widgets}/${w.metadata.name}`, { metadata: { finalizers: null } });
});

test.run();
