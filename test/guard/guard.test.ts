// The guard, end to end: the built executable in wrap mode as an operator's pod,
// against the fake API server (kubernetes-facts.md).
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { type Proc, drainguard } from '../support/proc.ts';
import { writeKubeconfig } from '../support/apiserver/index.ts';
import { type Cluster, GUARD, NS, RBAC_V1, finalizer, lease, uninstall, withCluster } from './cluster.ts';

const allHeldBy = (c: Cluster, ...pods: { uid: string }[]) => {
  const want = pods.map(finalizer).sort();
  return Object.values(c.holders()).every((h) => JSON.stringify([...h].sort()) === JSON.stringify(want));
};
/** SIGKILL to drainguard, and to its operator, which it cannot take along. */
async function killHard(p: Proc): Promise<void> {
  const started = await p.log('operator started');
  p.kill('SIGKILL');
  await p.processExit();
  process.kill(started.pid as number, 'SIGKILL');
}


test('uninstall with background propagation: the operator keeps its API access until drained, then nothing is left', async () => {
  await withCluster(async (c) => {
    const pod = c.pod('op-0');
    const p = c.run(pod, { FIXTURE_CLEANUP_CALLS: '5' });
    await p.line('ready');
    await c.api.waitFor(() => allHeldBy(c, pod), 10_000, 'finalizers on all five objects');
    const l = lease(c, pod)!;
    assert.equal(l.metadata.labels, { 'app.kubernetes.io/managed-by': 'drainguard' });
    assert.equal(l.metadata.ownerReferences, [{ apiVersion: 'v1', kind: 'Pod', name: 'op-0', uid: pod.uid }]);

    // helm uninstall: the Deployment's pod is deleted, then every object of the chart, kind by kind.
    c.api.delete('v1', 'pods', NS, 'op-0');
    uninstall(c);
    assert.equal(c.remaining().length, 5, 'all held, terminating');
    p.kill('SIGTERM');
    await p.line('drained');
    assert.equal(p.stdout.filter((l) => l.startsWith('api ')), Array(5).fill('api 200'), "the operator's cleanup calls all succeed");
    assert.equal((await p.exit()).code, 0);
    await c.api.waitFor(() => c.remaining().length === 0 || undefined, 5000, 'every object gone').catch(() => assert.unreachable(`left: ${c.remaining()}`));
    assert.equal(lease(c, pod), undefined, 'Lease deleted');
    const released = p.logs().find((x) => x.msg === 'guard released')!;
    assert.equal((released.deleted as string[]).length, 5);
    // The kubelet confirms; the Pod goes and nothing was left behind.
    c.api.finishPodTermination(NS, 'op-0');
    assert.equal(c.api.get('v1', 'pods', NS, 'op-0'), undefined);
  });
});

test("rolling update: old and new pod hold the same objects; the old one leaving keeps the new one's guard", async () => {
  await withCluster(async (c) => {
    const a = c.pod('op-a');
    const b = c.pod('op-b');
    const pa = c.run(a);
    await pa.line('ready');
    await c.api.waitFor(() => allHeldBy(c, a), 10_000, 'guard of a');
    const pb = c.run(b);
    await pb.line('ready');
    await c.api.waitFor(() => allHeldBy(c, a, b), 10_000, 'guard of a and b');
    assert.not.ok(pb.logs().some((l) => l.msg === 'stale holder finalizers removed'), "a live holder's finalizer is not swept");
    c.api.delete('v1', 'pods', NS, 'op-a');
    pa.kill('SIGTERM');
    assert.equal((await pa.exit()).code, 0);
    assert.ok(allHeldBy(c, b), JSON.stringify(c.holders()));
    assert.equal(c.remaining().length, 5, 'nothing deleted');
    assert.equal(lease(c, a), undefined);
    assert.ok(lease(c, b));
    pb.kill('SIGTERM');
    assert.equal((await pb.exit()).code, 0);
    assert.ok(Object.values(c.holders()).every((h) => h.length === 0), 'no holder left');
  });
});

test('a holder killed with SIGKILL: its finalizer is swept by the next drainguard once its Lease is gone', async () => {
  await withCluster(async (c) => {
    const a = c.pod('op-a');
    const pa = c.run(a);
    await pa.line('ready');
    await c.api.waitFor(() => allHeldBy(c, a), 10_000, 'guard of a');
    await killHard(pa);
    // The pod is gone (force delete); the garbage collector takes its Lease.
    c.api.delete('v1', 'pods', NS, 'op-a', { gracePeriodSeconds: 0 });
    await c.api.waitFor(() => lease(c, a) === undefined, 5000, "a's Lease collected");
    assert.ok(allHeldBy(c, a), 'the finalizer stays until someone sweeps it');
    const b = c.pod('op-b');
    const pb = c.run(b);
    await c.api.waitFor(() => allHeldBy(c, b), 10_000, 'only b holds');
    assert.equal((await pb.log('stale holder finalizers removed')).holders, [`${a.uid} (gone)`]);
    pb.kill('SIGTERM');
    await pb.exit();
  });
});

test('drainguard release removes stale holders (expired Lease) and keeps live ones; --all needs --yes', async () => {
  await withCluster(async (c) => {
    const a = c.pod('op-a');
    const b = c.pod('op-b');
    const pa = c.run(a, { DRAINGUARD_LEASE_DURATION: '1s' });
    await pa.line('ready');
    await c.api.waitFor(() => allHeldBy(c, a), 10_000, 'a holds');
    // b is a live holder that renews its Lease (written here, so no sweep of b's own races the release).
    c.api.create({
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name: `drainguard-${b.uid}`, namespace: NS, labels: { 'app.kubernetes.io/managed-by': 'drainguard' }, ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: b.name, uid: b.uid }] },
      spec: { holderIdentity: b.name, leaseDurationSeconds: 60, renewTime: new Date().toISOString() },
    });
    for (const [v, r, ns, name] of [[RBAC_V1, 'clusterroles', undefined, 'op'], [RBAC_V1, 'clusterrolebindings', undefined, 'op'], [RBAC_V1, 'roles', NS, 'op-leases'], [RBAC_V1, 'rolebindings', NS, 'op-leases'], ['v1', 'serviceaccounts', NS, 'op']] as const) {
      c.api.setFinalizers(v, r, ns, name, [...(c.api.get(v, r, ns, name)!.metadata.finalizers ?? []), finalizer(b)]);
    }
    await killHard(pa);
    // a's Pod still exists, so its Lease stays: it goes stale when it expires, 1 s after its last renewal.
    const renewed = Date.parse(lease(c, a)!.spec.renewTime);
    await new Promise((r) => setTimeout(r, Math.max(0, renewed + 1100 - Date.now())));
    const admin = writeKubeconfig(c.dir, c.api, c.api.adminToken, 'admin-kubeconfig');
    const refused = drainguard(['release', '--guard', GUARD, '--all'], { KUBECONFIG: admin });
    assert.equal((await refused.exit()).code, 2);
    assert.match(refused.stderr.join('\n'), /add --yes to confirm/);
    const r = drainguard(['release', '--guard', GUARD], { KUBECONFIG: admin });
    assert.equal((await r.exit()).code, 0, r.stderr.join('\n'));
    assert.equal(r.stdout.filter((l) => l.includes(`removed ${finalizer(a)} (stale: Lease expired)`)).length, 5, r.stdout.join('\n'));
    assert.equal(r.stdout.filter((l) => l.includes(`kept ${finalizer(b)}`)).length, 5);
    assert.ok(allHeldBy(c, b));
    const all = drainguard(['release', '--all-objects', '--all', '--yes'], { KUBECONFIG: admin });
    assert.equal((await all.exit()).code, 0);
    assert.ok(Object.values(c.holders()).every((h) => h.length === 0), JSON.stringify(c.holders()));
  });
});

test('the API down at start does not keep the operator from starting; the guard is set once it is back', async () => {
  await withCluster(async (c) => {
    const pod = c.pod('op-0');
    await c.api.stopListening();
    const p = c.run(pod, { DRAINGUARD_HTTP_ADDR: '127.0.0.1:0' });
    await p.line('ready');
    await p.log('guard not set: Kubernetes API call failed, the operator runs on and drainguard keeps trying');
    const readyz = `http://${(await p.log('http listener started')).address}/readyz`;
    const notReady = await fetch(readyz);
    assert.equal([notReady.status, (await notReady.text()).trim()], [503, 'guard not set yet']);
    await c.api.listenAgain();
    await c.api.waitFor(() => allHeldBy(c, pod), 15_000, 'guard set after the API came back');
    await p.log('Kubernetes API reachable again: guard set', 5000);
    assert.equal((await fetch(readyz)).status, 200);
    p.kill('SIGTERM');
    assert.equal((await p.exit()).code, 0);
  });
});

test('the API down at release: the kill is not held past the deadline', async () => {
  await withCluster(async (c) => {
    const pod = c.pod('op-0', 4);
    const p = c.run(pod, { DRAINGUARD_GRACE_PERIOD: '4s', DRAINGUARD_STOP_TIMEOUT: '1s' });
    await p.line('ready');
    await c.api.waitFor(() => allHeldBy(c, pod), 10_000, 'guard set');
    // Every call hangs: worse than refused connections.
    c.api.fault({ delayMs: 60_000 });
    const t0 = Date.now();
    p.kill('SIGTERM');
    const exit = await p.exit(10_000);
    const took = Date.now() - t0;
    assert.equal(exit.code, 0);
    assert.ok(took < 4000, `exited ${took} ms after SIGTERM, within the 4 s grace period`);
    // Cut off by the deadline, or every call timed out at it: either way the rest is left for the sweep.
    assert.ok(p.logs().some((l) => l.msg.startsWith('guard release cut short by the deadline') || l.msg.startsWith('guard released in part')), p.stderr.join('\n'));
  });
});

test('409 storms: conflicting writers at start and at release are outlasted', async () => {
  await withCluster(async (c) => {
    const pod = c.pod('op-0');
    const storm = c.api.fault({ match: (r) => r.verb === 'patch' && r.resource !== 'leases', times: 12, status: 409 });
    const p = c.run(pod);
    await p.line('ready');
    await c.api.waitFor(() => allHeldBy(c, pod), 15_000, 'guard set through the storm');
    assert.equal(storm.hits, 12);
    c.api.fault({ match: (r) => r.verb === 'patch' && r.resource !== 'leases', times: 6, status: 409 });
    p.kill('SIGTERM');
    assert.equal((await p.exit()).code, 0);
    assert.ok(Object.values(c.holders()).every((h) => h.length === 0), JSON.stringify(c.holders()));
  });
});

test('a guard without any Kubernetes API configured is a configuration error: exit 2, the operator never started', async () => {
  await withCluster(async (c) => {
    const pod = c.pod('op-0');
    const p = c.run(pod, { KUBECONFIG: '', HOME: c.dir }, ['sh', '-c', 'echo started']);
    assert.equal((await p.exit()).code, 2);
    assert.match(p.stderr.join('\n'), /DRAINGUARD_GUARD is set, so drainguard needs the Kubernetes API: no Kubernetes API configured: set KUBECONFIG/);
    assert.not.ok(p.stdout.includes('started'));
  });
});

test('a kubeconfig without a current context is a configuration error before the operator starts; one the client cannot use is logged after', async () => {
  await withCluster(async (c) => {
    const pod = c.pod('op-0');
    const noContext = join(c.dir, 'no-context');
    writeFileSync(noContext, readFileSync(c.kubeconfig, 'utf8').replace(/^current-context:.*$/m, ''));
    const p = c.run(pod, { KUBECONFIG: noContext }, ['sh', '-c', 'echo started']);
    assert.equal((await p.exit()).code, 2);
    assert.match(p.stderr.join('\n'), /DRAINGUARD_GUARD is set, so drainguard needs the Kubernetes API: KUBECONFIG=.*no-context: no current context with a cluster/);
    assert.not.ok(p.stdout.includes('started'));

    // Past the cheap check (a current context, naming no cluster): the operator runs, the guard is not set.
    const noCluster = join(c.dir, 'no-cluster');
    writeFileSync(noCluster, readFileSync(c.kubeconfig, 'utf8').replace(/^current-context:.*$/m, 'current-context: elsewhere'));
    const q = c.run(pod, { KUBECONFIG: noCluster }, ['sh', '-c', 'echo started; exec sleep 30']);
    await q.line('started');
    await q.log('the guard cannot be set: its Kubernetes API configuration cannot be read');
    q.kill('SIGTERM');
    assert.equal((await q.exit()).code, 143);
  });
});

test('the Kubernetes client is loaded after the operator started', async () => {
  await withCluster(async (c) => {
    const p = c.run(c.pod('op-0'), {}, ['sh', '-c', 'echo started; exec sleep 30']);
    await p.log('guard starting');
    const msgs = p.logs().map((l) => l.msg);
    assert.ok(msgs.indexOf('operator started') < msgs.indexOf('guard starting'), msgs.join(', '));
    p.kill('SIGTERM');
    await p.exit();
  });
});

test('a guarded object that does not exist: a clear message, no crash, guarded once created', async () => {
  await withCluster(async (c) => {
    const pod = c.pod('op-0');
    // drainguard may read and patch only what its role names: the chart names this one too.
    const role = c.api.get(RBAC_V1, 'clusterroles', undefined, 'op')!;
    role.rules.find((r: any) => r.resources?.includes('clusterroles')).resourceNames.push('not-there');
    c.api.store.update(c.api.type(RBAC_V1, 'clusterroles'), undefined, 'op', role);
    const p = c.run(pod, { DRAINGUARD_GUARD: `${GUARD},clusterrole/not-there`, DRAINGUARD_LEASE_DURATION: '3s' });
    await p.line('ready');
    const line = await p.log('guarded object clusterrole/not-there does not exist: nothing to hold; drainguard guards it once it is created');
    assert.equal(line.level, 'warn');
    await c.api.waitFor(() => allHeldBy(c, pod), 10_000, 'the others guarded');
    c.api.create({ apiVersion: RBAC_V1, kind: 'ClusterRole', metadata: { name: 'not-there' }, rules: [] });
    await c.api.waitFor(() => (c.api.get(RBAC_V1, 'clusterroles', undefined, 'not-there')!.metadata.finalizers ?? []).includes(finalizer(pod)), 10_000, 'guarded once created');
    p.kill('SIGTERM');
    assert.equal((await p.exit()).code, 0);
  });
});

test('only finalizers and the Lease are written: no escalation is ever needed', async () => {
  await withCluster(async (c) => {
    const before = Object.fromEntries(
      ['clusterroles/op', 'clusterrolebindings/op'].map((k) => [k, c.api.get(RBAC_V1, k.split('/')[0]!, undefined, 'op')!]),
    );
    const pod = c.pod('op-0');
    const p = c.run(pod, { DRAINGUARD_LEASE_DURATION: '3s' });
    await c.api.waitFor(() => allHeldBy(c, pod), 10_000, 'guard set');
    // Someone removes our finalizer: it is put back with the same kind of write.
    c.api.setFinalizers(RBAC_V1, 'clusterroles', undefined, 'op', []);
    await c.api.waitFor(() => allHeldBy(c, pod), 10_000, 'finalizer added again');
    p.kill('SIGTERM');
    assert.equal((await p.exit()).code, 0);
    const writes = c.api.requests.filter((r) => r.user === 'system:serviceaccount:op:op' && ['patch', 'update', 'create', 'delete'].includes(r.verb) && r.resource !== 'configmaps');
    assert.ok(writes.length >= 11);
    for (const w of writes) {
      assert.ok(w.status < 300, `${w.verb} ${w.path} answered ${w.status}`);
      // The Lease, and Events on the pod about the drain, are drainguard's own objects.
      if (w.resource === 'leases' || (w.resource === 'events' && w.verb === 'create')) continue;
      assert.equal(w.verb, 'patch', `${w.verb} ${w.path}`);
      if (w.contentType === 'application/merge-patch+json') {
        assert.equal(Object.keys(w.body), ['metadata']);
        assert.equal(Object.keys(w.body.metadata).sort(), ['finalizers', 'resourceVersion']);
      } else {
        // Removal by value: the strategic merge patch directive on metadata.finalizers alone.
        assert.equal(w.contentType, 'application/strategic-merge-patch+json');
        assert.equal(w.body, { metadata: { '$deleteFromPrimitiveList/finalizers': [finalizer(pod)] } });
      }
    }
    for (const [k, obj] of Object.entries(before)) {
      const after = c.api.get(RBAC_V1, k.split('/')[0]!, undefined, 'op')!;
      for (const field of ['rules', 'subjects', 'roleRef']) assert.equal(after[field], obj[field], `${k} ${field}`);
      assert.equal(after.metadata.annotations, obj.metadata.annotations);
      assert.equal(after.metadata.labels, obj.metadata.labels);
    }
    assert.ok(!c.api.requests.some((r) => r.status === 403), 'no write was refused');
  });
});

test('a strict authorizer: what the pod could not release itself, the post-delete hook (release --wait) sweeps once the pod is gone', async () => {
  await withCluster(
    async (c) => {
      const pod = c.pod('op-0');
      const p = c.run(pod);
      await p.line('ready');
      await c.api.waitFor(() => allHeldBy(c, pod), 10_000, 'guard set');
      c.api.delete('v1', 'pods', NS, 'op-0');
      uninstall(c);
      // Helm runs the post-delete hook right away, while the operator pod still drains.
      const admin = writeKubeconfig(c.dir, c.api, c.api.adminToken, 'admin-kubeconfig');
      const hook = drainguard(['release', '--guard', GUARD, '--wait', '20s'], { KUBECONFIG: admin });
      await hook.line(`clusterrole/op: kept ${finalizer(pod)} (live holder ${NS}/drainguard-${pod.uid})`);
      p.kill('SIGTERM');
      assert.equal((await p.exit()).code, 0);
      // Removing the first of its own roles took drainguard's rights at once: the rest stays, held.
      assert.ok(c.remaining().length > 0);
      // Loud: an error line and a Warning Event on the pod, each naming the objects and the command that frees them.
      const failed = p.logs().find((l) => l.msg.startsWith('guard released in part'))!;
      assert.equal(failed.level, 'error');
      const left = Object.entries(c.holders()).filter(([, h]) => h.length > 0).length;
      assert.match(failed.fix as string, /^drainguard release --guard (clusterrole|clusterrolebinding|role|rolebinding|serviceaccount)\//);
      assert.equal((failed.fix as string).split(' ').pop()!.split(',').length, left, `${failed.fix} for ${JSON.stringify(c.holders())}`);
      assert.ok(failed.msg.includes(failed.fix as string));
      c.api.finishPodTermination(NS, 'op-0');
      assert.equal((await hook.exit()).code, 0, hook.stdout.join('\n'));
      assert.equal(c.remaining(), []);
      assert.ok(hook.stdout.some((l) => l.endsWith('(stale: Lease gone)')));
    },
    { authorizerLagMs: 0 },
  );
});

test('drainguard status: objects, holders live and stale, deleting; -o json', async () => {
  await withCluster(async (c) => {
    const pod = c.pod('op-0');
    const p = c.run(pod);
    await c.api.waitFor(() => allHeldBy(c, pod), 10_000, 'guard set');
    c.api.setFinalizers(RBAC_V1, 'clusterroles', undefined, 'op', [finalizer(pod), 'drainguard.dev/holder-gone-pod']);
    c.api.delete(RBAC_V1, 'clusterroles', undefined, 'op', { propagationPolicy: 'Background' });
    const admin = writeKubeconfig(c.dir, c.api, c.api.adminToken, 'admin-kubeconfig');
    const s = drainguard(['status', '-o', 'json', '--guard', `${GUARD},clusterrole/nope`], { KUBECONFIG: admin });
    assert.equal((await s.exit()).code, 0, s.stderr.join('\n'));
    const report = JSON.parse(s.stdout.join('\n'));
    const cr = report.objects.find((o: any) => o.object === 'clusterrole/op');
    assert.ok(cr.deleting);
    assert.equal(cr.holders.map((h: any) => [h.uid, h.live, h.staleBecause]), [[pod.uid, true, undefined], ['gone-pod', false, 'gone']]);
    assert.equal(report.objects.find((o: any) => o.object === 'clusterrole/nope').exists, false);
    assert.equal(report.holders[0].pod, 'op-0');
    assert.equal(report.holders[0].guards.length, 5);
    const text = drainguard(['status'], { KUBECONFIG: admin });
    assert.equal((await text.exit()).code, 0);
    assert.match(text.stdout.join('\n'), /clusterrole\/op\s+deleting\s+.* live \(pod op-0\), gone-pod stale \(Lease gone\)/);
    p.kill('SIGTERM');
    await p.exit();
  });
});

test.run();
