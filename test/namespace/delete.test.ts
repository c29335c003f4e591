// `kubectl delete namespace`. With ordered namespace deletion (KEP-5080, on
// by default from Kubernetes 1.33) the operator's pod is deleted first, and
// its custom resources only once it is gone. With DRAINGUARD_HOLD listing
// their kind, drainguard deletes them at the pod's SIGTERM while the operator
// still runs, waits until it has removed their finalizers, then drains and
// stops: the namespace goes. The control, the same with DRAINGUARD_HOLD empty:
// the operator stops first, the custom resources are deleted after it with
// nobody to finalize them, and the namespace stays Terminating.
//
// On 1.30–1.32 (the gate off by default) the namespace controller deletes
// everything at once, the operator's Role and RoleBinding with the custom
// resources, while the operator runs: the guard on its RBAC (as every install
// has it, here too) keeps the operator able to finalize them, and the step
// keeps it running until it has. Its cleanup takes 2 s (OP_FINALIZE_AFTER_MS),
// so that in the control the SIGTERM comes first on either release.
//
// The built executable in wrap mode, test/fixtures/namespace-operator.ts as the
// operator; there is no kubelet here: the test plays its part (SIGTERM once the
// namespace controller deleted the pod, then the final grace-0 delete once the
// container exited).
import { execFileSync } from 'node:child_process';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { type TestCluster, resourcePath, useCluster } from '../support/cluster/index.ts';
import { NODE, drainguard, fixture } from '../support/proc.ts';
import { widgetNamespace } from './support.ts';

const OPERATOR = fixture('namespace-operator.ts');

async function scenario(
  withStep: boolean,
  stuck = false,
): Promise<{ c: TestCluster; ns: string; group: string; gone: boolean; log: { msg: string; [k: string]: unknown }[]; stdout: string[] }> {
  const c = await useCluster();
  const { ns, group, widgets } = await widgetNamespace(c, 'nsdel');
  const made = await c.create({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'op-0', namespace: ns },
    spec: {
      nodeName: await c.node(),
      serviceAccountName: 'op',
      terminationGracePeriodSeconds: 10,
      containers: [{ name: 'manager', image: 'example.com/operator' }],
    },
  });
  const pod = { name: 'op-0', uid: made.metadata.uid as string };
  // One that something else finalizes, which never comes.
  if (stuck)
    await c.api.create(widgets, {
      apiVersion: `${group}/v1`,
      kind: 'Widget',
      metadata: { name: 'w3', namespace: ns, finalizers: ['example.com/never'] },
    });

  const token = await c.token(ns, 'op', { pod });
  const p = drainguard(['run', '--', NODE, OPERATOR], {
    KUBECONFIG: c.kubeconfigFor(token),
    DRAINGUARD_POD_NAME: pod.name,
    DRAINGUARD_POD_NAMESPACE: ns,
    DRAINGUARD_POD_UID: pod.uid,
    DRAINGUARD_HOLD: withStep ? `widgets.${group}` : '',
    // The operator's Role and RoleBinding, as an install guards them.
    DRAINGUARD_GUARD: `role/${ns}/op,rolebinding/${ns}/op`,
    DRAINGUARD_STOP_TIMEOUT: '2s',
    DRAINGUARD_LEADER_LEASE: 'off',
    OP_API: c.url,
    OP_TOKEN: token,
    OP_CA: c.caFile,
    OP_NAMESPACE: ns,
    OP_GROUP: group,
    OP_FINALIZE_AFTER_MS: '2000',
  });
  try {
    await p.line('ready');
    execFileSync('kubectl', ['--kubeconfig', c.adminKubeconfig, 'delete', 'namespace', ns, '--wait=false'], { stdio: 'pipe' });
    // The kubelet's part: the namespace controller deletes the pod first (5 s after the namespace), SIGTERM follows.
    await c.waitFor(
      async () => (await c.api.get(resourcePath('v1', 'pods', ns, 'op-0')))?.metadata.deletionTimestamp,
      30_000,
      'the pod deleted by the namespace controller',
    );
    if (c.orderedNamespaceDeletion)
      assert.is(
        (await c.api.get(`${widgets}/w1`))?.metadata.deletionTimestamp,
        undefined,
        'the widgets are not deleted while the pod remains',
      );
    p.kill('SIGTERM');
    assert.is((await p.exit(20_000)).code, 0, p.stderr.join('\n'));
    await c.api.delete(resourcePath('v1', 'pods', ns, 'op-0'), { gracePeriodSeconds: 0 });
    if (withStep && stuck) {
      await c.api.request('PATCH', `${widgets}/w3`, { metadata: { finalizers: null } }, 'application/merge-patch+json');
      return { c, ns, group, gone: false, log: p.logs(), stdout: p.stdout };
    }
    if (withStep) {
      await c
        .waitFor(async () => (await c.api.get(`/api/v1/namespaces/${ns}`)) === undefined, 60_000, 'the namespace gone')
        .catch(async (err) => {
          const left = (await c.api.get(`/api/v1/namespaces/${ns}`))?.status?.conditions?.filter((x: any) => x.status === 'True');
          throw new Error(`${err.message}\nits conditions: ${JSON.stringify(left)}\ndrainguard: ${p.stderr.join('\n')}`);
        });
      return { c, ns, group, gone: true, log: p.logs(), stdout: p.stdout };
    }
    // Now the namespace controller deletes the widgets; nobody is left to remove their finalizer.
    await c.waitFor(
      async () => (await c.api.list(widgets)).every((w) => w.metadata.deletionTimestamp),
      60_000,
      'the widgets deleted by the namespace controller',
    );
    const kept = await c.api.list(widgets);
    const gone = (await c.api.get(`/api/v1/namespaces/${ns}`)) === undefined;
    // Let the namespace go (the control's clean-up).
    for (const w of kept)
      await c.api.request('PATCH', `${widgets}/${w.metadata.name}`, { metadata: { finalizers: null } }, 'application/merge-patch+json');
    assert.equal(
      kept.map((w) => [w.metadata.name, w.metadata.finalizers]),
      [
        ['w1', [`${group}/cleanup`]],
        ['w2', [`${group}/cleanup`]],
      ],
    );
    return { c, ns, group, gone, log: p.logs(), stdout: p.stdout };
  } finally {
    p.killAll();
  }
}

test('kubectl delete namespace, DRAINGUARD_HOLD listing the kind: the custom resources are finalized while the operator runs, then it drains; the namespace is gone', async () => {
  const r = await scenario(true);
  assert.ok(r.gone);
  assert.equal(r.stdout.filter((l) => l.startsWith('finalized ')).sort(), ['finalized w1 200', 'finalized w2 200']);
  assert.ok(
    r.stdout.indexOf('finalized w2 200') < r.stdout.indexOf('drained') ||
      r.stdout.indexOf('finalized w1 200') < r.stdout.indexOf('drained'),
    r.stdout.join('\n'),
  );
  const msgs = r.log.map((l) => l.msg);
  const done = msgs.indexOf('namespace being deleted: its custom resources are finalized and gone');
  assert.ok(done >= 0 && done < msgs.indexOf('drain started'), msgs.join(' | '));
  assert.equal(r.log[done]!.objects, [`widgets.${r.group}/${r.ns}/w1`, `widgets.${r.group}/${r.ns}/w2`]);
});

test('what cannot be finalized by the deadline is logged by name, and the drain and the stop go on inside the grace period', async () => {
  const r = await scenario(true, true);
  const left = r.log.find((l) => l.msg.startsWith('namespace being deleted: custom resources not finalized by the deadline'));
  assert.ok(left, r.log.map((l) => l.msg).join(' | '));
  assert.equal(left.left, [`widgets.${r.group}/${r.ns}/w3 (finalizers: example.com/never)`]);
  assert.equal(r.stdout.filter((l) => l.startsWith('finalized ')).sort(), ['finalized w1 200', 'finalized w2 200']);
  const at = (msg: string) => Date.parse(r.log.find((l) => l.msg === msg)!.time as string);
  // Grace 10 s (the Pod's), stop timeout 2 s: drain deadline 6 s after SIGTERM; the step gives up 2 s before it.
  assert.ok(at('drain started') - at('termination requested') < 6000, 'the drain starts before its deadline');
  assert.ok(
    r.log.some((l) => l.msg === 'drain ended' && l.outcome === 'drained'),
    'the operator drained',
  );
  assert.ok(at('operator exited') - at('termination requested') < 10_000, 'stopped inside the grace period');
});

test('control: DRAINGUARD_HOLD empty: the operator stops before it has finalized the custom resources, which keep their finalizer; the namespace stays Terminating', async () => {
  const r = await scenario(false);
  assert.not.ok(r.gone, 'the namespace is still there');
  assert.equal(
    r.stdout.filter((l) => l.startsWith('finalized ')),
    [],
    'the operator finalized nothing',
  );
  assert.not.ok(r.log.some((l) => l.msg.startsWith('namespace being deleted')));
});

test.run();
