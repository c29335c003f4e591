// The hold's other ways out, deploy/rendered/hold.yaml applied to the cluster
// back end with the kubelet stand-in (test/hold/support.ts): foreground deletion (released at once, warned about), the timeout, a
// Deployment deleted while its custom resources stay (released after the
// settle), and a rolling update of two replicas (no hold finalizer left of the
// old pods).

import { execFile } from 'node:child_process';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { type KubeletCluster, kubeletCluster } from '../support/kubelet/cluster.ts';
import { EXE } from '../support/proc.ts';
import { kubectl, operatorPods, operatorSet, pathOf, removeSet, uninstallArgs } from './support.ts';
const holderOf = (uid: string) => `drainguard.dev/holder-${uid}`;

let c: KubeletCluster;
test.before(async () => {
  c = await kubeletCluster();
});

/** The built drainguard as the admin, without blocking the event loop. */
function drainguard(args: readonly string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(EXE, args, { encoding: 'utf8', env: { ...process.env, KUBECONFIG: c.cluster.adminKubeconfig } }, (err, stdout, stderr) =>
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

const deploymentPath = (ns: string, name: string) => `/apis/apps/v1/namespaces/${ns}/deployments/${name}`;

test('foreground deletion cannot be held: warned about with the fix, an Event, released at once', async () => {
  const s = await operatorSet(c);
  try {
    const [{ drainguard: sidecar, pod }] = await operatorPods(c, s);
    await c.poll(deploymentPath(s.ns, s.name), (b) => b.metadata?.finalizers?.includes(holderOf(pod.metadata.uid)), 20_000, 'the hold set');
    const deleted = await kubectl(c, ['delete', 'deployment', s.name, '-n', s.ns, '--cascade=foreground']);
    assert.is(deleted.code, 0, deleted.stderr);
    const line = sidecar.logs().find((l) => String(l.msg).startsWith('hold released (foreground)'));
    assert.ok(line, 'released before kubectl returned (it waits for the Deployment to be gone)');
    assert.is(line.level, 'warn');
    assert.match(String(line.msg), 'PrunePropagationPolicy=background');
    assert.match(String(line.msg), '--cascade=background');
    const events = (await c.api.must('GET', `/api/v1/namespaces/${s.ns}/events`)).items;
    const event = events.find((e: any) => e.reason === 'HoldReleased');
    assert.ok(event, JSON.stringify(events.map((e: any) => e.reason)));
    assert.is(event.type, 'Warning');
    assert.match(event.message, '(reason foreground)');
    await c.poll(`/api/v1/namespaces/${s.ns}/pods/${pod.metadata.name}`, (_b, st) => st === 404, 30_000, 'the pod gone');
    assert.is((await c.api.call('GET', deploymentPath(s.ns, s.name))).status, 404);
  } finally {
    await removeSet(c, s);
  }
});

test('the timeout: the hold lets go after DRAINGUARD_HOLD_TIMEOUT, naming what is still finalizing', async () => {
  const s = await operatorSet(c, { env: { DRAINGUARD_HOLD_SETTLE: '1s', DRAINGUARD_HOLD_TIMEOUT: '8s' }, finalizeAfterMs: 600_000 });
  const GROUP = s.group;
  const HOLD = s.kinds;
  try {
    const [{ drainguard: sidecar, operator: manager, pod }] = await operatorPods(c, s);
    await c.poll(deploymentPath(s.ns, s.name), (b) => b.metadata?.finalizers?.includes(holderOf(pod.metadata.uid)), 20_000, 'the hold set');
    assert.is((await kubectl(c, ...uninstallArgs(s, '--wait=false'))).code, 0);
    const seen = await sidecar.log(
      'the Deployment is being deleted: holding the operator until the listed custom resources are finalized',
      20_000,
    );
    // drainguard status shows the hold and what it waits for.
    const status = await drainguard(['status', '--hold', HOLD, '--pod-namespace', s.ns, '-o', 'json']);
    assert.is(status.code, 0, status.stderr);
    const report = JSON.parse(status.stdout);
    const held = report.objects.find((o: any) => o.object === `deployment/${s.ns}/${s.name}`);
    assert.ok(held?.deleting && held.holders.some((h: any) => h.uid === pod.metadata.uid && h.live), status.stdout);
    assert.equal(report.hold.waitingFor.map((f: any) => f.object).sort(), [
      `apiservers.${GROUP}/default`,
      `installations.${GROUP}/default`,
    ]);
    const text = await drainguard(['status', '--hold', HOLD, '--pod-namespace', s.ns]);
    assert.match(text.stdout, `a held Deployment being deleted waits for\n  installations.${GROUP}/default  ${GROUP}/cleanup`);
    await manager.line('drained', 30_000);
    const line = await sidecar.log(/^hold released/);
    assert.is(line.reason, 'timeout');
    assert.ok(Date.parse(String(line.time)) - Date.parse(String(seen.time)) >= 8000, 'not before the timeout');
    assert.match(
      String(line.msg),
      `still finalizing: installations.${GROUP}/default (${GROUP}/cleanup), apiservers.${GROUP}/default (${GROUP}/cleanup)`,
    );
    const event = (await c.api.must('GET', `/api/v1/namespaces/${s.ns}/events`)).items.find((e: any) => e.reason === 'HoldReleased');
    assert.ok(event?.message.includes('(reason timeout)'));
    await c.poll(deploymentPath(s.ns, s.name), (_b, st) => st === 404, 30_000, 'the Deployment gone');
  } finally {
    await removeSet(c, s);
  }
});

test('a custom resource that is not being deleted holds nothing: kubectl delete deployment completes after the settle', async () => {
  const s = await operatorSet(c, { env: { DRAINGUARD_HOLD_SETTLE: '2s' } });
  try {
    const [{ drainguard: sidecar, pod }] = await operatorPods(c, s);
    await c.poll(deploymentPath(s.ns, s.name), (b) => b.metadata?.finalizers?.includes(holderOf(pod.metadata.uid)), 20_000, 'the hold set');
    const started = Date.now();
    const deleted = await kubectl(c, ['delete', 'deployment', s.name, '-n', s.ns]);
    assert.is(deleted.code, 0, deleted.stderr);
    assert.ok(Date.now() - started >= 2000, 'kubectl waited for the settle');
    const line = sidecar.logs().find((l) => String(l.msg).startsWith('hold released'));
    assert.is(line?.reason, 'finalized');
    for (const o of s.customResources) {
      const cr = await c.api.must('GET', pathOf(o));
      assert.not.ok(cr.metadata.deletionTimestamp, `${o.kind}/default not deleted by the hold`);
      assert.equal(cr.metadata.finalizers, [`${s.group}/cleanup`]);
    }
  } finally {
    await removeSet(c, s);
  }
});

test('a rolling update of two replicas leaves no hold finalizer of the old pods behind', async () => {
  const s = await operatorSet(c, { replicas: 2 });
  try {
    const old = await operatorPods(c, s, 2);
    const oldUids = old.map((p) => p.pod.metadata.uid as string);
    await c.poll(
      deploymentPath(s.ns, s.name),
      (b) => oldUids.every((u) => b.metadata?.finalizers?.includes(holderOf(u))),
      20_000,
      'both pods hold the Deployment',
    );
    const patched = await kubectl(c, [
      '-n',
      s.ns,
      'patch',
      'deployment',
      s.name,
      '--type=merge',
      '-p',
      JSON.stringify({ spec: { template: { metadata: { annotations: { rollout: '2' } } } } }),
    ]);
    assert.is(patched.code, 0, patched.stderr);
    // The rollout is over when two new pods run and the old ones are gone.
    const pods = await c.poll(
      `/api/v1/namespaces/${s.ns}/pods?labelSelector=app.kubernetes.io%2Fname%3D${s.name}`,
      (b) =>
        b.items.length === 2 &&
        b.items.every(
          (p: any) =>
            !oldUids.includes(p.metadata.uid) && p.status?.conditions?.some((x: any) => x.type === 'Ready' && x.status === 'True'),
        ),
      90_000,
      'two new pods Ready, the old ones gone',
    );
    const newUids = pods.items.map((p: any) => p.metadata.uid as string).sort();
    const d = await c.poll(
      deploymentPath(s.ns, s.name),
      (b) => newUids.every((u: string) => b.metadata.finalizers?.includes(holderOf(u))),
      20_000,
      'the new pods hold the Deployment',
    );
    assert.equal([...d.metadata.finalizers].sort(), newUids.map(holderOf).sort(), "only the live pods' finalizers");
    for (const p of old)
      assert.ok(
        p.drainguard.logs().some((l) => l.msg === 'guard released'),
        'each old pod released its finalizers in its release phase',
      );
  } finally {
    await removeSet(c, s);
  }
});

test.run();
