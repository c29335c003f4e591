// Real faults of the control plane itself, on a private one (started in this
// file, so the run's shared control plane is never disturbed): the API server
// restarted in the middle of a drain, and the controller-manager down while the
// holder pod goes (no garbage collector: its Lease stays until it is back).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { allHeldBy, finalizer, nothingHeld, runHeld, withCluster } from '../../guard/cluster.ts';
import { privateCluster } from '../../support/cluster/index.ts';
import { drainguard, killHard } from '../../support/proc.ts';

const { cluster, controlPlane } = await privateCluster();

test('the API server restarted in the middle of a drain: the operator drains through it, the guard is released once it is back', async () => {
  await withCluster(
    async (c) => {
      const pod = await c.pod('op-0');
      // The operator cleans up through the API for as long as the drain lasts (a call every 100 ms).
      const p = await runHeld(c, pod, { FIXTURE_CLEANUP_CALLS: '100000', FIXTURE_CLEANUP_EVERY: '100' });
      await c.deletePod('op-0');
      p.kill('SIGTERM');
      await p.line('drain');
      await p.line('api 200');
      await controlPlane.stopApiServer();
      const during = p.stdout.length;
      await p.line(/^api (0|5\d\d)$/, 10_000);
      await controlPlane.startApiServer();
      // Calls succeed again after the restart; then the drain is cut short (a second SIGTERM).
      await cluster.waitFor(() => p.stdout.slice(during).includes('api 200'), 30_000, 'an API call through after the restart');
      p.kill('SIGTERM');
      assert.equal((await p.exit(20_000)).code, 0);
      const released = p.logs().find((l) => l.msg === 'guard released');
      assert.ok(released, p.stderr.join('\n'));
      assert.ok(await nothingHeld(c), JSON.stringify(await c.holders()));
      assert.equal(await c.lease(pod), undefined);
      // Without a kubelet the test confirms the Pod's end itself.
      await c.finishPod('op-0');
    },
    { cluster },
  );
});

test('the controller-manager down while the holder pod goes: its Lease is not collected and its finalizers stay until it is back; then nothing is stuck', async () => {
  await withCluster(
    async (c) => {
      const pod = await c.pod('op-0');
      const p = await runHeld(c, pod);
      await controlPlane.stopControllerManager();
      // The holder dies without releasing (SIGKILL) and its Pod is removed.
      await killHard(p);
      await c.finishPod('op-0');
      // The post-delete hook waits for the holder to go stale.
      const hook = drainguard(['release', '--pod-namespace', c.ns, '--guard', c.guard, '--wait', '60s'], { KUBECONFIG: c.adminKubeconfig });
      await hook.line(new RegExp(`kept ${finalizer(pod)} \\(live holder`), 15_000);
      // Control case: with no garbage collector, the Lease of the gone Pod stays (seen for 3 s; with the collector it goes in ~0.1 s).
      const until = Date.now() + 3000;
      while (Date.now() < until) {
        assert.ok(await c.lease(pod), 'the Lease stays while the controller-manager is down');
        await new Promise((r) => setTimeout(r, 200));
      }
      assert.ok(await allHeldBy(c, pod), 'the finalizers stay');
      await controlPlane.startControllerManager();
      await cluster.waitFor(
        async () => (await c.lease(pod)) === undefined,
        30_000,
        'the Lease collected once the controller-manager is back',
      );
      assert.equal((await hook.exit(30_000)).code, 0, hook.stdout.join('\n'));
      assert.ok(
        hook.stdout.some((l) => l.endsWith('(stale: Lease gone)')),
        hook.stdout.join('\n'),
      );
      assert.ok(await nothingHeld(c), JSON.stringify(await c.holders()));
    },
    { cluster },
  );
});

test.run();
