// `drainguard release` on a control plane of this file's own: `--all-objects --all`
// removes every holder finalizer in the cluster, which on the run's shared
// control plane would take the guard of other files' tests running beside it.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { privateCluster } from '../support/cluster/index.ts';
import { drainguard, killHard } from '../support/proc.ts';
import { microTime } from '../../src/kube/objects.ts';
import { type Pod, allHeldBy, finalizer, nothingHeld, runHeld, withCluster } from './cluster.ts';

const { cluster } = await privateCluster();

test('drainguard release removes stale holders (expired Lease) and keeps live ones; --all needs --yes', async () => {
  await withCluster(
    async (c) => {
      const a = await c.pod('op-a');
      const b = await c.pod('op-b');
      const pa = await runHeld(c, a, { DRAINGUARD_LEASE_DURATION: '1s' });
      // b is a live holder that renews its Lease (written here, so no sweep of b's own races the release).
      await c.cluster.create({
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: {
          name: `drainguard-${b.uid}`,
          namespace: c.ns,
          labels: { 'app.kubernetes.io/managed-by': 'drainguard' },
          ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: b.name, uid: b.uid }],
        },
        spec: { holderIdentity: b.name, leaseDurationSeconds: 60, renewTime: new Date().toISOString().replace('Z', '000Z') },
      });
      for (const o of c.objects) {
        const obj = await c.cluster.api.get(o.path);
        await c.cluster.api.patch(o.path, { metadata: { finalizers: [...(obj.metadata.finalizers ?? []), finalizer(b)] } });
      }
      await killHard(pa);
      // a's Pod still exists, so its Lease stays: it goes stale when it expires, 1 s after its last renewal.
      const renewed = Date.parse((await c.lease(a)).spec.renewTime);
      await new Promise((r) => setTimeout(r, Math.max(0, renewed + 1100 - Date.now())));
      const refused = drainguard(['release', '--pod-namespace', c.ns, '--guard', c.guard, '--all'], { KUBECONFIG: c.adminKubeconfig });
      assert.equal((await refused.exit()).code, 2);
      assert.match(refused.stderr.join('\n'), /add --yes to confirm/);
      const r = drainguard(['release', '--pod-namespace', c.ns, '--guard', c.guard], { KUBECONFIG: c.adminKubeconfig });
      assert.equal((await r.exit()).code, 0, r.stderr.join('\n'));
      assert.equal(
        r.stdout.filter((l) => l.includes(`removed ${finalizer(a)} (stale: Lease expired)`)).length,
        c.objects.length + 1,
        r.stdout.join('\n'),
      );
      // a's release anchor too, which nothing else would ever free (being deleted from the start, it goes with it).
      const anchor = `lease/${c.ns}/drainguard-${a.uid}-anchor`;
      assert.ok(r.stdout.includes(`${anchor}: removed ${finalizer(a)} (stale: Lease expired)`), r.stdout.join('\n'));
      assert.ok(r.stdout.includes(`${anchor}: deleted (it was being deleted)`), r.stdout.join('\n'));
      assert.equal(await c.anchor(a), undefined);
      assert.equal(r.stdout.filter((l) => l.includes(`kept ${finalizer(b)}`)).length, c.objects.length);
      assert.ok(await allHeldBy(c, b));
      const all = drainguard(['release', '--all-objects', '--all', '--yes'], { KUBECONFIG: c.adminKubeconfig });
      assert.equal((await all.exit()).code, 0);
      assert.ok(await nothingHeld(c), JSON.stringify(await c.holders()));
    },
    { cluster },
  );
});

test("--delete: nothing while a holder lives; once none is left, drainguard's own RBAC is deleted", async () => {
  await withCluster(
    async (c) => {
      const a = await c.pod('op-a');
      const pa = await runHeld(c, a);
      const early = c.postDelete('0s');
      assert.equal((await early.exit()).code, 1, early.stdout.join('\n'));
      assert.ok(early.stdout.includes(`not deleted: ${c.ownList.split(',').join(', ')} (live holders remain)`), early.stdout.join('\n'));
      assert.equal((await c.remaining()).length, c.objects.length, 'nothing deleted');
      // The holder dies without releasing; its pod goes and the garbage collector takes its Lease.
      await killHard(pa);
      await c.finishPod('op-a');
      await cluster.waitFor(async () => (await c.lease(a)) === undefined, 15_000, "a's Lease collected");
      const hook = c.postDelete('20s');
      assert.equal((await hook.exit(30_000)).code, 0, hook.stdout.join('\n'));
      // Swept first, then deleted: a stale finalizer would have kept them, terminating.
      for (const o of c.ownList.split(',')) {
        assert.ok(hook.stdout.includes(`${o}: removed ${finalizer(a)} (stale: Lease gone)`), hook.stdout.join('\n'));
        assert.ok(hook.stdout.includes(`${o}: deleted`), hook.stdout.join('\n'));
      }
      assert.equal(
        (await c.remaining()).sort(),
        c.objects
          .slice(0, 3)
          .map((o) => o.guard)
          .sort(),
        "only the operator's objects, never uninstalled here, are left",
      );
      assert.ok(await nothingHeld(c));
    },
    { cluster },
  );
});

test("a Lease named after a holder in another namespace counts for nothing: it keeps no dead holder's finalizer, and makes no live holder look stale", async () => {
  await withCluster(
    async (c) => {
      const a = await c.pod('op-a');
      // A long Lease: a's own sweep (at start, then every 100 s) leaves the dead holder's finalizer to the release.
      const pa = await runHeld(c, a, { DRAINGUARD_LEASE_DURATION: '300s' });
      // d: a holder whose pod is gone without releasing; its finalizer stays, its Lease went with the Pod.
      const d = await c.pod('op-d');
      await c.finishPod('op-d');
      for (const o of c.objects) {
        const obj = await c.cluster.api.get(o.path);
        await c.cluster.api.patch(o.path, { metadata: { finalizers: [...(obj.metadata.finalizers ?? []), finalizer(d)] } });
      }
      // Leases of their names in a namespace listed after theirs: a's long expired, d's renewed for an hour.
      // No ownerReference: the garbage collector deletes a Lease whose owner Pod is not in its namespace.
      const { name: elsewhere } = await cluster.namespace('zz');
      const foreign = (pod: Pod, renewTime: string, leaseDurationSeconds: number) => ({
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: { name: `drainguard-${pod.uid}`, namespace: elsewhere, labels: { 'app.kubernetes.io/managed-by': 'drainguard' } },
        spec: { holderIdentity: pod.name, leaseDurationSeconds, renewTime },
      });
      await c.cluster.create(foreign(a, microTime(Date.now() - 3_600_000), 60));
      await c.cluster.create(foreign(d, microTime(Date.now()), 3600));
      // As the post-delete hook runs it: an admin, who may list Leases across the cluster.
      const r = drainguard(['release', '--pod-namespace', c.ns, '--guard', c.guard], { KUBECONFIG: c.adminKubeconfig });
      assert.equal((await r.exit()).code, 0, r.stdout.join('\n'));
      for (const o of c.objects) {
        assert.ok(r.stdout.includes(`${o.guard}: kept ${finalizer(a)} (live holder ${c.ns}/drainguard-${a.uid})`), r.stdout.join('\n'));
        assert.ok(r.stdout.includes(`${o.guard}: removed ${finalizer(d)} (stale: Lease gone)`), r.stdout.join('\n'));
      }
      assert.ok(r.stdout.at(-1)!.endsWith(`; holders judged by the Leases of namespace ${c.ns}`), r.stdout.at(-1));
      assert.ok(await allHeldBy(c, a), JSON.stringify(await c.holders()));
      pa.kill('SIGTERM');
      assert.equal((await pa.exit()).code, 0);
    },
    { cluster },
  );
});

test.run();
