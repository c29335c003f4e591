// The guard, end to end: the built executable in wrap mode as an operator's pod,
// against the real control plane (test/support/cluster): kube-apiserver with
// RBAC, and the controller-manager's garbage collector. The fault proxy stands
// in only where a real server cannot be made to fail (each case says so).
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { resourcePath } from '../support/cluster/index.ts';
import type { ProxiedRequest } from '../support/faultproxy/index.ts';
import { type Proc, drainguard, killHard, tempDir } from '../support/proc.ts';
import { type Install, RBAC_V1, allHeldBy, finalizer, nothingHeld, runHeld, waitHeld, withCluster } from './cluster.ts';

const guardWrite = (r: ProxiedRequest) => r.verb === 'patch' && r.resource !== 'leases';

/** What drainguard warned of or logged as an error, but the start-up advice on a guarded ServiceAccount's tokens. */
const complaints = (p: Proc): string[] =>
  p
    .logs()
    .filter((x) => (x.level === 'warn' || x.level === 'error') && !x.msg.startsWith('a guarded ServiceAccount keeps its object'))
    .map((x) => x.msg);

/** The release anchor of `pod`, as a release names it. */
const anchorOf = (c: Install, pod: { uid: string }) => `lease/${c.ns}/drainguard-${pod.uid}-anchor`;

/** drainguard's own four and the ServiceAccount: each what lets drainguard release another, when all are deleted. */
const ownCycle = (c: Install) =>
  [
    `clusterrole/${c.own}`,
    `clusterrolebinding/${c.own}`,
    `role/${c.ns}/${c.own}`,
    `rolebinding/${c.ns}/${c.own}`,
    `serviceaccount/${c.ns}/op`,
  ].sort();

/** Removals of drainguard's finalizer (strategic merge patches by its ServiceAccount). */
const removal = (c: Install) => (r: ProxiedRequest) =>
  r.user === `system:serviceaccount:${c.ns}:op` && r.verb === 'patch' && r.contentType === 'application/strategic-merge-patch+json';

/**
 * Each removal reaches the API server a second after the one before, as on a busy machine one
 * may: far past the authorizer's lag, so a removal that a role or binding gone with an earlier one
 * authorised is refused, whatever the order within a wave.
 */
function stagger(c: Install, stepMs = 1000): void {
  for (let k = 0; k < c.objects.length; k++) c.proxy!.rule({ match: removal(c), times: 1, delayMs: k * stepMs });
}

test("uninstall, drainguard's own RBAC kept: every removal authorised however late it comes, the ServiceAccount's last and alone; the post-delete hook deletes the rest", async () => {
  await withCluster(
    async (c) => {
      const pod = await c.pod('op-0');
      const p = await runHeld(c, pod, { FIXTURE_CLEANUP_CALLS: '5' });
      const l = await c.lease(pod);
      assert.equal(l.metadata.labels, { 'app.kubernetes.io/managed-by': 'drainguard' });
      assert.equal(l.metadata.ownerReferences, [{ apiVersion: 'v1', kind: 'Pod', name: 'op-0', uid: pod.uid }]);

      // helm uninstall: the Deployment's pod is deleted, then the chart's objects, kind by kind; drainguard's own RBAC is kept.
      await c.deletePod('op-0');
      await c.uninstall();
      assert.equal((await c.remaining()).length, 7, "all held: three terminating, drainguard's own four kept");
      stagger(c);
      p.kill('SIGTERM');
      await p.line('drained');
      assert.equal(
        p.stdout.filter((l) => l.startsWith('api ')),
        Array(5).fill('api 200'),
        "the operator's cleanup calls all succeed",
      );
      assert.equal((await p.exit(40_000)).code, 0);
      const released = p.logs().find((x) => x.msg === 'guard released');
      assert.ok(released, `released whole, nothing refused:\n${p.stderr.join('\n')}`);
      assert.equal(
        [...(released.deleted as string[])].sort(),
        [`clusterrole/${c.name}`, `clusterrolebinding/${c.name}`, `serviceaccount/${c.ns}/op`, anchorOf(c, pod)].sort(),
      );
      assert.equal([released.waves, released.lease], [2, 'left to the garbage collector']);
      assert.equal(complaints(p), []);
      // The ServiceAccount's removal was sent once every other one had been answered.
      const removals = c.proxy!.requests.filter(removal(c));
      assert.is(removals.length, 8, 'the seven and the release anchor');
      const last = removals.find((r) => r.resource === 'serviceaccounts')!;
      for (const r of removals.filter((x) => x !== last))
        assert.ok(
          r.done && r.at + r.durationMs! <= last.at,
          `${r.resource}/${r.name} answered before the ServiceAccount's removal was sent`,
        );
      assert.ok(
        removals.every((r) => r.status === 200),
        removals.map((r) => `${r.resource} ${r.status}`).join(', '),
      );
      assert.equal((await c.remaining()).sort(), c.ownList.split(',').sort(), "drainguard's own RBAC is left, unheld");
      assert.ok(await nothingHeld(c));
      // The kubelet confirms (played here); the Pod goes, and the garbage collector takes the Lease with it.
      await c.finishPod('op-0');
      await c.cluster.waitFor(async () => (await c.lease(pod)) === undefined, 15_000, 'the Lease collected');
      // The post-delete hook: no holder left, so drainguard's own RBAC goes.
      const hook = c.postDelete();
      assert.equal((await hook.exit(30_000)).code, 0, hook.stdout.join('\n'));
      for (const o of c.ownList.split(',')) assert.ok(hook.stdout.includes(`${o}: deleted`), hook.stdout.join('\n'));
      assert.equal(await c.remaining(), []);
    },
    { proxy: true },
  );
});

test("kubectl delete -f of everything, drainguard's own RBAC included: pinned to the release anchor, nothing left, no hook needed", async () => {
  await withCluster(
    async (c) => {
      const pod = await c.pod('op-0');
      const p = await runHeld(c, pod);
      // Made, then deleted at once: read it once it is being deleted (between the two, it is not yet).
      const anchor = await c.cluster.waitFor(
        async () => {
          const a = await c.anchor(pod);
          return a?.metadata.deletionTimestamp ? a : undefined;
        },
        10_000,
        'the release anchor made and being deleted',
      );
      // Kept by this pod's finalizer, owning the guarded objects of its namespace and of the cluster.
      assert.equal(anchor.metadata.finalizers, [finalizer(pod)]);
      assert.equal(anchor.metadata.ownerReferences.length, 7);
      assert.ok(anchor.metadata.ownerReferences.every((r: any) => r.blockOwnerDeletion === true));
      await c.deletePod('op-0');
      await c.uninstall({ own: true });
      stagger(c);
      p.kill('SIGTERM');
      assert.equal((await p.exit(40_000)).code, 0);
      const pinned = p.logs().find((l) => l.msg.startsWith('no safe order: pinned'));
      assert.ok(pinned, p.stderr.join('\n'));
      assert.equal([...(pinned.pinned as string[])].sort(), ownCycle(c), JSON.stringify(pinned));
      assert.equal(pinned.notPinned, []);
      assert.equal(complaints(p), []);
      // Every removal authorised, however late it came: the anchor's last and alone, once every other was answered.
      const removals = c.proxy!.requests.filter(removal(c));
      assert.ok(
        removals.every((r) => r.status === 200),
        removals.map((r) => `${r.resource}/${r.name} ${r.status}`).join(', '),
      );
      const last = removals.at(-1)!;
      assert.equal([last.resource, last.name], ['leases', `drainguard-${pod.uid}-anchor`]);
      for (const r of removals.slice(0, -1))
        assert.ok(r.done && r.at + r.durationMs! <= last.at, `${r.resource}/${r.name} before the anchor`);
      // Nobody else acts: the garbage collector, which outlives the pod, deletes what the anchor kept.
      await c.cluster.waitFor(async () => (await c.remaining()).length === 0, 20_000, 'every object gone');
      assert.equal(await c.anchor(pod), undefined);
    },
    { proxy: true },
  );
});

test("control: the same delete with drainguard's RBAC of before the anchor (no delete on its own objects): a finalizer stays, and only a person frees it", async () => {
  await withCluster(
    async (c) => {
      for (const kind of ['clusterroles', 'roles']) {
        const path = resourcePath(RBAC_V1, kind, kind === 'roles' ? c.ns : undefined, c.own);
        const role = await c.cluster.api.get(path);
        await c.cluster.api.patch(path, { rules: role.rules.filter((r: any) => r.verbs.join() !== 'delete') });
      }
      const pod = await c.pod('op-0');
      const p = await runHeld(c, pod);
      await c.deletePod('op-0');
      await c.uninstall({ own: true });
      stagger(c);
      p.kill('SIGTERM');
      assert.equal((await p.exit(40_000)).code, 0);
      const pinned = p.logs().find((l) => l.msg.startsWith('no safe order: pinned'))!;
      assert.equal([...(pinned.notPinned as string[])].sort(), ownCycle(c));
      const racing = p.logs().filter((l) => l.msg.startsWith('released together'));
      assert.equal(
        racing.map((l) => [...(l.objects as string[])].sort()),
        [ownCycle(c)],
      );
      const partial = p.logs().find((l) => l.msg.startsWith('guard released in part'));
      assert.ok(partial, p.stderr.join('\n'));
      const failed = partial.failed as string[];
      assert.ok(
        failed.every((f) => / (403 Forbidden|401 Unauthorized): /.test(f)),
        failed.join('\n'),
      );
      // The pod goes and the garbage collector takes its Lease: what stays now stays for good.
      await c.finishPod('op-0');
      await c.cluster.waitFor(async () => (await c.lease(pod)) === undefined, 15_000, 'the Lease collected');
      assert.ok(
        Object.values(await c.holders()).some((h) => h.includes(finalizer(pod))),
        JSON.stringify(await c.holders()),
      );
      // A person (or a post-delete hook, which kubectl has not) sweeps it.
      const hook = c.postDelete();
      assert.equal((await hook.exit(40_000)).code, 0, hook.stdout.join('\n'));
      await c.cluster.waitFor(async () => (await c.remaining()).length === 0, 20_000, 'every object gone');
    },
    { proxy: true },
  );
});

test("rolling update: old and new pod hold the same objects; the old one leaving keeps the new one's guard", async () => {
  await withCluster(async (c) => {
    const a = await c.pod('op-a');
    const b = await c.pod('op-b');
    const pa = await runHeld(c, a);
    const pb = await c.run(b);
    await pb.line('ready');
    await waitHeld(c, [a, b], 'guard of a and b');
    assert.not.ok(
      pb.logs().some((l) => l.msg === 'stale holder finalizers removed'),
      "a live holder's finalizer is not swept",
    );
    await c.deletePod('op-a');
    pa.kill('SIGTERM');
    assert.equal((await pa.exit()).code, 0);
    assert.ok(await allHeldBy(c, b), JSON.stringify(await c.holders()));
    assert.equal((await c.remaining()).length, 7, 'nothing deleted');
    assert.equal(await c.lease(a), undefined);
    assert.ok(await c.lease(b));
    pb.kill('SIGTERM');
    assert.equal((await pb.exit()).code, 0);
    assert.ok(await nothingHeld(c), JSON.stringify(await c.holders()));
  });
});

test('a holder killed with SIGKILL: its finalizer is swept by the next drainguard once its Lease is gone', async () => {
  await withCluster(async (c) => {
    const a = await c.pod('op-a');
    const pa = await runHeld(c, a);
    await killHard(pa);
    // The pod is gone (force delete); the real garbage collector takes its Lease.
    await c.finishPod('op-a');
    await c.cluster.waitFor(async () => (await c.lease(a)) === undefined, 15_000, "a's Lease collected");
    assert.ok(await allHeldBy(c, a), 'the finalizer stays until someone sweeps it');
    const b = await c.pod('op-b');
    const pb = await c.run(b);
    await waitHeld(c, [b], 'only b holds');
    assert.equal((await pb.log('stale holder finalizers removed')).holders, [`${a.uid} (gone)`]);
    pb.kill('SIGTERM');
    await pb.exit();
  });
});

test('the API down at start does not keep the operator from starting; the guard is set once it is back', async () => {
  // Stand-in: the fault proxy's port closed is "the API unreachable" (the shared API server stays up).
  await withCluster(
    async (c) => {
      const pod = await c.pod('op-0');
      await c.proxy!.down();
      const p = await c.run(pod, { DRAINGUARD_HTTP_ADDR: '127.0.0.1:0' });
      await p.line('ready');
      await p.log('guard not set: Kubernetes API call failed, the operator runs on and drainguard keeps trying');
      const readyz = `http://${(await p.log('http listener started')).address}/readyz`;
      const notReady = await fetch(readyz);
      assert.equal([notReady.status, (await notReady.text()).trim()], [503, 'guard not set yet']);
      await c.proxy!.up();
      await waitHeld(c, [pod], 'guard set after the API came back', 15_000);
      await p.log('Kubernetes API reachable again: guard set', 5000);
      assert.equal((await fetch(readyz)).status, 200);
      p.kill('SIGTERM');
      assert.equal((await p.exit()).code, 0);
    },
    { proxy: true },
  );
});

test('the API down at release: the kill is not held past the deadline', async () => {
  // Stand-in: every call hangs at the fault proxy (worse than refused connections).
  await withCluster(
    async (c) => {
      const pod = await c.pod('op-0', 4);
      const p = await runHeld(c, pod, { DRAINGUARD_GRACE_PERIOD: '4s', DRAINGUARD_STOP_TIMEOUT: '1s' });
      c.proxy!.rule({ hang: true });
      const t0 = Date.now();
      p.kill('SIGTERM');
      const exit = await p.exit(10_000);
      const took = Date.now() - t0;
      assert.equal(exit.code, 0);
      assert.ok(took < 4000, `exited ${took} ms after SIGTERM, within the 4 s grace period`);
      // Cut off by the deadline, or every call timed out at it: either way the rest is left for the sweep.
      assert.ok(
        p.logs().some((l) => l.msg.startsWith('guard release cut short by the deadline') || l.msg.startsWith('guard released in part')),
        p.stderr.join('\n'),
      );
    },
    { proxy: true },
  );
});

test('409 storms: conflicting writers at start and at release are outlasted', async () => {
  // Stand-in: the 409s come from the fault proxy; the writes that get through are the real server's.
  await withCluster(
    async (c) => {
      const pod = await c.pod('op-0');
      const storm = c.proxy!.rule({ match: guardWrite, times: 12, status: 409 });
      const p = await c.run(pod);
      await p.line('ready');
      await waitHeld(c, [pod], 'guard set through the storm', 15_000);
      assert.equal(storm.hits, 12);
      c.proxy!.rule({ match: guardWrite, times: 6, status: 409 });
      p.kill('SIGTERM');
      assert.equal((await p.exit()).code, 0);
      assert.ok(await nothingHeld(c), JSON.stringify(await c.holders()));
    },
    { proxy: true },
  );
});

test('a guard without any Kubernetes API configured is a configuration error: exit 2, the operator never started', async () => {
  await withCluster(async (c) => {
    const pod = await c.pod('op-0');
    const p = await c.run(pod, { KUBECONFIG: '', HOME: c.cluster.dir }, ['sh', '-c', 'echo started']);
    assert.equal((await p.exit()).code, 2);
    assert.match(
      p.stderr.join('\n'),
      /DRAINGUARD_GUARD is set, so drainguard needs the Kubernetes API: no Kubernetes API configured: set KUBECONFIG/,
    );
    assert.not.ok(p.stdout.includes('started'));
  });
});

test('a kubeconfig without a current context is a configuration error before the operator starts; one the client cannot use is logged after', async () => {
  await withCluster(async (c) => {
    const pod = await c.pod('op-0');
    const kubeconfig = await c.kubeconfig(pod);
    const noContext = join(tempDir(), 'no-context');
    writeFileSync(noContext, readFileSync(kubeconfig, 'utf8').replace(/^current-context:.*$/m, ''));
    const p = await c.run(pod, { KUBECONFIG: noContext }, ['sh', '-c', 'echo started']);
    assert.equal((await p.exit()).code, 2);
    assert.match(
      p.stderr.join('\n'),
      /DRAINGUARD_GUARD is set, so drainguard needs the Kubernetes API: KUBECONFIG=.*no-context: no current context with a cluster/,
    );
    assert.not.ok(p.stdout.includes('started'));

    // Past the cheap check (a current context, naming no cluster): the operator runs, the guard is not set.
    const noCluster = join(tempDir(), 'no-cluster');
    writeFileSync(noCluster, readFileSync(kubeconfig, 'utf8').replace(/^current-context:.*$/m, 'current-context: elsewhere'));
    const q = await c.run(pod, { KUBECONFIG: noCluster }, ['sh', '-c', 'echo started; exec sleep 30']);
    await q.line('started');
    await q.log('the guard cannot be set: its Kubernetes API configuration cannot be read');
    q.kill('SIGTERM');
    assert.equal((await q.exit()).code, 143);
  });
});

test('the Kubernetes client is loaded after the operator started', async () => {
  await withCluster(async (c) => {
    const p = await c.run(await c.pod('op-0'), {}, ['sh', '-c', 'echo started; exec sleep 30']);
    await p.log('guard starting');
    const msgs = p.logs().map((l) => l.msg);
    assert.ok(msgs.indexOf('operator started') < msgs.indexOf('guard starting'), msgs.join(', '));
    p.kill('SIGTERM');
    await p.exit();
  });
});

test('a guarded object that does not exist: a clear message, no crash, guarded once created', async () => {
  await withCluster(async (c) => {
    const pod = await c.pod('op-0');
    const missing = `${c.name}-not-there`;
    // drainguard may read and patch only what its role names: the chart names this one too.
    const rolePath = resourcePath(RBAC_V1, 'clusterroles', undefined, c.own);
    const role = await c.cluster.api.get(rolePath);
    role.rules.find((r: any) => r.resources?.includes('clusterroles')).resourceNames.push(missing);
    await c.cluster.api.patch(rolePath, { rules: role.rules });
    const p = await c.run(pod, { DRAINGUARD_GUARD: `${c.guard},clusterrole/${missing}`, DRAINGUARD_LEASE_DURATION: '3s' });
    await p.line('ready');
    const line = await p.log(
      `guarded object clusterrole/${missing} does not exist: nothing to hold; drainguard guards it once it is created`,
    );
    assert.equal(line.level, 'warn');
    await waitHeld(c, [pod], 'the others guarded');
    await c.cluster.create({ apiVersion: RBAC_V1, kind: 'ClusterRole', metadata: { name: missing }, rules: [] });
    const missingPath = resourcePath(RBAC_V1, 'clusterroles', undefined, missing);
    await c.cluster.waitFor(
      async () => ((await c.cluster.api.get(missingPath))?.metadata.finalizers ?? []).includes(finalizer(pod)),
      10_000,
      'guarded once created',
    );
    p.kill('SIGTERM');
    assert.equal((await p.exit()).code, 0);
  });
});

test('only finalizers and the Lease are written: no escalation is ever needed', async () => {
  // The fault proxy injects nothing here: it records what drainguard sent to the real server.
  await withCluster(
    async (c) => {
      const [crPath, crbPath] = [c.objects[0]!.path, c.objects[1]!.path];
      const before = { [crPath]: await c.cluster.api.get(crPath), [crbPath]: await c.cluster.api.get(crbPath) };
      const pod = await c.pod('op-0');
      const p = await c.run(pod, { DRAINGUARD_LEASE_DURATION: '3s' });
      await waitHeld(c, [pod], 'guard set');
      // Someone removes our finalizer: it is put back with the same kind of write.
      await c.cluster.api.patch(crPath, { metadata: { finalizers: [] } });
      await waitHeld(c, [pod], 'finalizer added again');
      p.kill('SIGTERM');
      assert.equal((await p.exit()).code, 0);
      const requests = c.proxy!.requests;
      const writes = requests.filter(
        (r) =>
          r.user === `system:serviceaccount:${c.ns}:op` &&
          ['patch', 'update', 'create', 'delete'].includes(r.verb) &&
          r.resource !== 'configmaps',
      );
      assert.ok(writes.length >= 11);
      for (const w of writes) {
        assert.ok(w.status > 0 && w.status < 300, `${w.verb} ${w.path} answered ${w.status}`);
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
      for (const [path, obj] of Object.entries(before)) {
        const after = await c.cluster.api.get(path);
        for (const field of ['rules', 'subjects', 'roleRef']) assert.equal(after[field], obj[field], `${path} ${field}`);
        assert.equal(after.metadata.annotations, obj.metadata.annotations);
        assert.equal(after.metadata.labels, obj.metadata.labels);
      }
      assert.ok(!requests.some((r) => r.status === 403), 'no write was refused');
    },
    { proxy: true },
  );
});

test("a release the API refuses: loud, and the post-delete hook sweeps it once the pod is gone, then deletes drainguard's own RBAC", async () => {
  // Stand-in: from the SIGTERM on, the fault proxy lets the first removal through and refuses that
  // ServiceAccount everything else (403), as an admission webhook or an RBAC change by hand might.
  await withCluster(
    async (c) => {
      const pod = await c.pod('op-0');
      const p = await runHeld(c, pod);
      const user = `system:serviceaccount:${c.ns}:op`;
      await c.deletePod('op-0');
      await c.uninstall();
      // Helm without --wait runs the post-delete hook right away, while the operator pod still drains.
      const hook = c.postDelete('20s');
      await hook.line(`clusterrole/${c.name}: kept ${finalizer(pod)} (live holder ${c.ns}/drainguard-${pod.uid})`);
      const first = c.proxy!.rule({ match: removal(c), times: 1 });
      c.proxy!.rule({ match: (r) => r.user === user, status: 403, message: 'forbidden: refused by the test' });
      p.kill('SIGTERM');
      assert.equal((await p.exit()).code, 0);
      assert.ok((await c.remaining()).length > 0);
      // Loud: an error line naming the objects and the command that frees them.
      const failed = p.logs().find((l) => l.msg.startsWith('guard released in part'))!;
      assert.equal(failed.level, 'error');
      const left = Object.entries(await c.holders()).filter(([, h]) => h.length > 0).length;
      assert.match(
        failed.fix as string,
        new RegExp(`^drainguard release --pod-namespace ${c.ns} --guard (clusterrole|clusterrolebinding|role|rolebinding|serviceaccount)/`),
      );
      assert.equal(
        (failed.fix as string).split(' ').pop()!.split(',').length,
        left,
        `${failed.fix} for ${JSON.stringify(await c.holders())}`,
      );
      assert.ok(failed.msg.includes(failed.fix as string));
      assert.equal(first.hits, 1);
      // The kubelet's last step (played here); the garbage collector then takes the Lease.
      await c.finishPod('op-0');
      assert.equal((await hook.exit(30_000)).code, 0, hook.stdout.join('\n'));
      assert.ok(hook.stdout.some((l) => l.endsWith('(stale: Lease gone)')));
      assert.ok(hook.stdout.includes(`clusterrole/${c.own}: deleted`), hook.stdout.join('\n'));
      assert.equal(await c.remaining(), []);
    },
    { proxy: true },
  );
});

test('drainguard status: objects, holders live and stale, deleting; -o json', async () => {
  await withCluster(async (c) => {
    const pod = await c.pod('op-0');
    const p = await c.run(pod);
    await waitHeld(c, [pod], 'guard set');
    const crPath = c.objects[0]!.path;
    await c.cluster.api.patch(crPath, { metadata: { finalizers: [finalizer(pod), 'drainguard.dev/holder-gone-pod'] } });
    await c.cluster.api.delete(crPath, { propagationPolicy: 'Background' });
    const s = drainguard(['status', '--pod-namespace', c.ns, '-o', 'json', '--guard', `${c.guard},clusterrole/${c.name}-nope`], {
      KUBECONFIG: c.adminKubeconfig,
    });
    assert.equal((await s.exit()).code, 0, s.stderr.join('\n'));
    const report = JSON.parse(s.stdout.join('\n'));
    const cr = report.objects.find((o: any) => o.object === `clusterrole/${c.name}`);
    assert.ok(cr.deleting);
    assert.equal(
      cr.holders.map((h: any) => [h.uid, h.live, h.staleBecause]),
      [
        [pod.uid, true, undefined],
        ['gone-pod', false, 'gone'],
      ],
    );
    assert.equal(report.objects.find((o: any) => o.object === `clusterrole/${c.name}-nope`).exists, false);
    // Only the guard's own namespace is read (holders count only there).
    assert.equal(report.leaseScope, c.ns);
    const mine = report.holders;
    assert.equal(
      mine.map((h: any) => [h.namespace, h.pod]),
      [[c.ns, 'op-0']],
    );
    assert.equal(mine[0].guards.length, 7);
    // With no guard list, status shows every object with a holder finalizer: other files' too, on the shared control plane.
    const text = drainguard(['status', '--pod-namespace', c.ns], { KUBECONFIG: c.adminKubeconfig });
    assert.equal((await text.exit()).code, 0);
    assert.match(
      text.stdout.join('\n'),
      new RegExp(`clusterrole/${c.name}\\s+deleting\\s+.* live \\(pod op-0\\), gone-pod stale \\(Lease gone\\)`),
    );
    p.kill('SIGTERM');
    await p.exit();
  });
});

test.run();
