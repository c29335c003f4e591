// Faults of the Kubernetes API around the guard: the real API server
// (test/support/cluster) behind the fault proxy (test/support/faultproxy),
// which injects what a real server cannot be made to do: errors and hangs
// while setting and releasing, conflicts on every first write, the API
// unreachable. The guarded object replaced, the Lease deleted or stolen and
// the token rotated and revoked are the real thing. Whatever happens: the
// operator is never held up, the kill never waits past the deadline, and once
// the pod is gone nothing stays stuck on the objects.

import { mkdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parseGuardList } from '../../../src/config/guard-list.ts';
import { Guard } from '../../../src/guard/guard.ts';
import { KubeClient } from '../../../src/kube/client.ts';
import { loadApiAccess } from '../../../src/kube/config.ts';
import { createLogger } from '../../../src/log/logger.ts';
import { type Install, type Pod, RBAC_V1, finalizer, nothingHeld, runHeld, waitHeld, withCluster } from '../../guard/cluster.ts';
import { resourcePath } from '../../support/cluster/index.ts';
import type { ProxiedRequest } from '../../support/faultproxy/index.ts';
import { drainguard, tempDir } from '../../support/proc.ts';
import { within } from '../../support/wait.ts';

const guardedWrite = (r: ProxiedRequest) => r.verb === 'patch' && r.resource !== 'leases' && r.resource !== 'pods';
const waitFor = <T>(c: Install, check: () => Promise<T | undefined | false>, ms: number, what: string) =>
  c.cluster.waitFor(check, ms, what);
const leaseGone = (c: Install, pod: Pod) =>
  waitFor(c, async () => (await c.lease(pod)) === undefined, 15_000, 'the Lease collected with the Pod');

/** The post-delete hook once the pod is gone: `drainguard release` as the cluster admin. */
async function sweep(c: Install): Promise<string[]> {
  const r = drainguard(['release', '--pod-namespace', c.ns, '--guard', c.guard], { KUBECONFIG: c.adminKubeconfig });
  assert.equal((await r.exit()).code, 0, r.stderr.join('\n'));
  return r.stdout;
}

test('500s on every kind of call while the guard is set: the operator is not held up, the guard is set once they stop', async () => {
  await withCluster(
    async (c) => {
      const pod = await c.pod('op-0');
      const faults = [
        c.proxy!.rule({
          match: (r) => r.resource === 'pods' && r.verb === 'get',
          times: 2,
          status: 500,
          message: 'etcdserver: request timed out',
        }),
        c.proxy!.rule({ match: (r) => r.resource === 'leases' && r.verb === 'create', times: 2, status: 500 }),
        c.proxy!.rule({ match: guardedWrite, times: 5, status: 503 }),
      ];
      const p = await c.run(pod, { DRAINGUARD_LEASE_DURATION: '3s' });
      await p.line('ready');
      await waitHeld(c, [pod], 'the guard set after the 500s', 20_000);
      assert.equal(
        faults.map((f) => f.hits),
        [2, 2, 5],
      );
      assert.ok(await c.lease(pod), 'the Lease is held');
      p.kill('SIGTERM');
      assert.equal((await p.exit()).code, 0);
      assert.ok(await nothingHeld(c), JSON.stringify(await c.holders()));
      assert.equal(await c.lease(pod), undefined);
    },
    { proxy: true },
  );
});

test('dropped connections and slow answers while the guard is set: set in the end, the operator never waits', async () => {
  await withCluster(
    async (c) => {
      const pod = await c.pod('op-0');
      c.proxy!.rule({ match: (r) => r.resource === 'leases' && r.verb === 'create', times: 2, drop: true });
      c.proxy!.rule({ match: guardedWrite, times: 5, delayMs: 1500 });
      const p = await c.run(pod, { DRAINGUARD_LEASE_DURATION: '3s' });
      await p.line('ready', 5000);
      await waitHeld(c, [pod], 'the guard set', 20_000);
      p.kill('SIGTERM');
      assert.equal((await p.exit()).code, 0);
      assert.ok(await nothingHeld(c), JSON.stringify(await c.holders()));
    },
    { proxy: true },
  );
});

test('SIGTERM while the first guard writes hang: no kill held past the grace period; what lands late is swept once the pod is gone', async () => {
  await withCluster(
    async (c) => {
      const pod = await c.pod('op-0', 5);
      const slow = c.proxy!.rule({ match: guardedWrite, times: 5, delayMs: 2500 });
      const p = await c.run(pod, { DRAINGUARD_GRACE_PERIOD: '5s', DRAINGUARD_STOP_TIMEOUT: '1s' });
      await p.line('ready');
      await waitFor(c, async () => slow.hits >= 1, 5000, 'a guard write under way');
      const t0 = Date.now();
      await c.deletePod('op-0');
      p.kill('SIGTERM');
      assert.equal((await p.exit(10_000)).code, 0);
      const took = Date.now() - t0;
      assert.ok(took < 5000, `drainguard exited ${took} ms after SIGTERM, past the 5 s grace period`);
      // The kubelet confirms the end; the Pod goes, its Lease with it; late writes then hold a stale finalizer at most.
      await c.finishPod('op-0'); // the kubelet's last step, played here (no kubelet yet)
      await leaseGone(c, pod);
      await waitFor(c, async () => c.proxy!.requests.filter(guardedWrite).every((r) => r.done), 10_000, 'the slow writes answered');
      const late = Object.values(await c.holders()).flat().length;
      await sweep(c);
      assert.ok(await nothingHeld(c), JSON.stringify(await c.holders()));
      console.log(`  exited ${took} ms after SIGTERM; ${late} late finalizer(s) swept by release`);
    },
    { proxy: true },
  );
});

test('500s and hangs at release: the kill is not held past the grace period, and nothing is stuck once the pod is gone', async () => {
  await withCluster(
    async (c) => {
      const pod = await c.pod('op-0', 5);
      const p = await runHeld(c, pod, { DRAINGUARD_GRACE_PERIOD: '5s', DRAINGUARD_STOP_TIMEOUT: '1s' });
      const errors = c.proxy!.rule({ match: (r) => r.verb === 'patch' && r.resource === 'clusterroles', status: 500 });
      const hangs = c.proxy!.rule({ match: (r) => r.verb === 'patch' && r.resource === 'roles', delayMs: 30_000 });
      c.proxy!.rule({ match: (r) => r.verb === 'delete' && r.resource === 'leases', status: 503 });
      const t0 = Date.now();
      await c.deletePod('op-0');
      p.kill('SIGTERM');
      assert.equal((await p.exit(10_000)).code, 0);
      const took = Date.now() - t0;
      assert.ok(took < 5000, `exited ${took} ms after SIGTERM`);
      assert.ok(errors.hits > 0 && hangs.hits > 0, `${errors.hits} answered 500, ${hangs.hits} hung\n${p.stderr.join('\n')}`);
      assert.ok(
        p.logs().some((l) => /^guard release cut short by the deadline|^guard released in part/.test(l.msg)),
        p.stderr.join('\n'),
      );
      const left = Object.entries(await c.holders())
        .filter(([, h]) => h.length > 0)
        .map(([o]) => o);
      assert.ok(left.includes(`clusterrole/${c.name}`), `the failing object keeps the finalizer: ${left}`);
      errors.remove();
      hangs.remove();
      await c.finishPod('op-0'); // the kubelet's last step, played here (no kubelet yet)
      await leaseGone(c, pod);
      await sweep(c);
      assert.ok(await nothingHeld(c), JSON.stringify(await c.holders()));
      console.log(`  exited ${took} ms after SIGTERM; left ${left.join(', ')} for the sweep`);
    },
    { proxy: true },
  );
});

test('409 on the first attempt of every write, at setting and at release: set and released all the same', async () => {
  await withCluster(
    async (c) => {
      const pod = await c.pod('op-0');
      const seen = new Set<string>();
      const firstAttempt = (r: ProxiedRequest) =>
        (r.verb === 'patch' || r.verb === 'update') && !seen.has(`${r.verb} ${r.path}`) && seen.add(`${r.verb} ${r.path}`) !== undefined;
      const conflicts = c.proxy!.rule({
        match: firstAttempt,
        status: 409,
        message:
          'Operation cannot be fulfilled: the object has been modified; please apply your changes to the latest version and try again',
      });
      const p = await c.run(pod, { DRAINGUARD_LEASE_DURATION: '3s' });
      await p.line('ready');
      await waitHeld(c, [pod], 'the guard set', 15_000);
      const atSetting = conflicts.hits;
      seen.clear();
      p.kill('SIGTERM');
      assert.equal((await p.exit()).code, 0);
      assert.ok(await nothingHeld(c), JSON.stringify(await c.holders()));
      assert.equal(await c.lease(pod), undefined);
      assert.ok(
        atSetting >= 5 && conflicts.hits - atSetting >= 5,
        `409s: ${atSetting} at setting, ${conflicts.hits - atSetting} at release`,
      );
      console.log(`  409s: ${atSetting} while setting, ${conflicts.hits - atSetting} while releasing`);
    },
    { proxy: true },
  );
});

test('a guarded object deleted and re-created while held (new uid): the new one is guarded, and released at the end', async () => {
  await withCluster(
    async (c) => {
      const pod = await c.pod('op-0');
      const p = await runHeld(c, pod, { DRAINGUARD_LEASE_DURATION: '3s' });
      const path = c.objects[0]!.path;
      const api = c.cluster.api;
      const old = await api.get(path);
      // Deleted while held: it stays, terminating. Someone forces it out, and the chart re-creates it.
      await api.delete(path);
      assert.ok((await api.get(path)).metadata.deletionTimestamp);
      await api.patch(path, { metadata: { finalizers: null } });
      assert.equal(await api.get(path), undefined);
      const fresh = await api.create(resourcePath(RBAC_V1, 'clusterroles'), {
        apiVersion: RBAC_V1,
        kind: 'ClusterRole',
        metadata: { name: c.name },
        rules: old.rules,
      });
      assert.not.equal(fresh.metadata.uid, old.metadata.uid);
      await waitFor(c, async () => (await api.get(path))?.metadata.finalizers?.includes(finalizer(pod)), 10_000, 'the new object guarded');
      assert.equal((await api.get(path)).metadata.uid, fresh.metadata.uid);
      p.kill('SIGTERM');
      assert.equal((await p.exit()).code, 0);
      assert.ok(await nothingHeld(c), JSON.stringify(await c.holders()));
      assert.ok(await api.get(path), 'the new object is not deleted by the release');
    },
    { proxy: true },
  );
});

test("the Lease deleted, then stolen and left to expire: the holder takes it back and puts back what another's sweep removed", async () => {
  await withCluster(
    async (c) => {
      const a = await c.pod('op-a');
      const b = await c.pod('op-b');
      const pa = await c.run(a, { DRAINGUARD_LEASE_DURATION: '3s' });
      const pb = await c.run(b, { DRAINGUARD_LEASE_DURATION: '3s' });
      await Promise.all([pa.line('ready'), pb.line('ready')]);
      await waitHeld(c, [a, b], 'both guards set');

      const leasePath = resourcePath('coordination.k8s.io/v1', 'leases', c.ns, `drainguard-${a.uid}`);
      await c.cluster.api.delete(leasePath);
      await pa.log('holder Lease was deleted: creating it again', 10_000);
      await waitFor(c, async () => (await c.lease(a))?.spec.holderIdentity === 'op-a', 5000, 'the Lease back');

      // Stolen: another identity, renewed long ago. b sees a's finalizers as stale and sweeps them; a puts them back.
      const stolenAt = new Date(Date.now() - 3_600_000).toISOString().replace('Z', '000Z');
      const stolen = await c.cluster.api.request(
        'PATCH',
        leasePath,
        { spec: { holderIdentity: 'thief', renewTime: stolenAt } },
        'application/merge-patch+json',
      );
      assert.equal(stolen.status, 200);
      await waitFor(
        c,
        async () => {
          const l = await c.lease(a);
          return l?.spec.holderIdentity === 'op-a' && l.spec.renewTime !== stolenAt;
        },
        5000,
        'the Lease taken back',
      );
      await waitHeld(c, [a, b], 'both guards set again');
      const swept = pb.logs().some((l) => l.msg === 'stale holder finalizers removed');
      // The API shows the finalizers back before a's log line about it has come through the pipe.
      if (swept) await pa.log('finalizer was removed by someone else: added again', 5000);

      pa.kill('SIGTERM');
      pb.kill('SIGTERM');
      assert.equal((await pa.exit()).code, 0);
      assert.equal((await pb.exit()).code, 0);
      assert.ok(await nothingHeld(c), JSON.stringify(await c.holders()));
      console.log(`  stolen Lease: swept by the other holder ${swept ? 'yes, and put back' : 'no (taken back first)'}`);
    },
    { proxy: true },
  );
});

test('the service account token rotated mid-run and the old one revoked: the guard holds on with the new one', async () => {
  await withCluster(
    async (c) => {
      const pod = await c.pod('op-0');
      // Tokens bound to pods of their own: deleting the pod revokes the token at once.
      const [t1, t2] = [await c.pod('token-1'), await c.pod('token-2')];
      const dir = join(tempDir(), 'serviceaccount');
      // The kubelet's layout: token -> ..data/token, ..data -> a timestamped directory swapped atomically.
      const project = (version: string, token: string) => {
        mkdirSync(join(dir, version), { recursive: true });
        writeFileSync(join(dir, version, 'token'), token);
        symlinkSync(version, join(dir, '..data_tmp'));
        renameSync(join(dir, '..data_tmp'), join(dir, '..data'));
      };
      project('..2026_01', await c.cluster.token(c.ns, 'op', { pod: t1 }));
      symlinkSync('..data/token', join(dir, 'token'));
      writeFileSync(join(dir, 'ca.crt'), c.cluster.ca);
      writeFileSync(join(dir, 'namespace'), c.ns);
      const access = await loadApiAccess(
        { KUBERNETES_SERVICE_HOST: '127.0.0.1', KUBERNETES_SERVICE_PORT: new URL(c.proxy!.url).port },
        { serviceAccountDir: dir, home: tempDir() },
      );
      const logs: string[] = [];
      const logger = createLogger({ level: 'debug', format: 'json', stream: { write: (l: string) => logs.push(l) } });
      const guard = new Guard({
        client: new KubeClient({ access, logger }),
        targets: parseGuardList(c.guard, 'DRAINGUARD_GUARD'),
        pod: { name: pod.name, namespace: c.ns, uid: pod.uid },
        leaseDurationMs: 1500,
        logger,
      });
      guard.start();
      await waitHeld(c, [pod], 'the guard set with the first token');

      project('..2026_02', await c.cluster.token(c.ns, 'op', { pod: t2 }));
      rmSync(join(dir, '..2026_01'), { recursive: true });
      await c.finishPod('token-1');
      const revoked = c.proxy!.requests.length;
      await waitFor(
        c,
        async () =>
          c.proxy!.requests.slice(revoked).filter((r) => r.resource === 'leases' && r.verb === 'patch' && r.status === 200).length >= 2,
        10_000,
        'two renewals with the new token',
      );
      await within(10_000, 'the release', guard.release(Date.now() + 10_000));
      assert.equal(
        c.proxy!.requests.filter((r) => r.status === 401),
        [],
        'no request was refused',
      );
      assert.ok(await nothingHeld(c), JSON.stringify(await c.holders()));
      assert.equal(await c.lease(pod), undefined);
    },
    { proxy: true },
  );
});

test('the API unreachable for the whole run: the operator runs and stops as ever, and nothing is written', async () => {
  await withCluster(
    async (c) => {
      const pod = await c.pod('op-0', 4);
      await c.proxy!.down();
      const p = await c.run(pod, { DRAINGUARD_GRACE_PERIOD: '4s', DRAINGUARD_STOP_TIMEOUT: '1s' });
      await p.line('ready');
      await p.log('guard not set: Kubernetes API call failed, the operator runs on and drainguard keeps trying');
      const t0 = Date.now();
      p.kill('SIGTERM');
      await p.line('drained');
      assert.equal((await p.exit(10_000)).code, 0);
      assert.ok(Date.now() - t0 < 4000, `exited ${Date.now() - t0} ms after SIGTERM`);
      await c.proxy!.up();
      assert.ok(await nothingHeld(c));
      assert.equal(await c.lease(pod), undefined);
    },
    { proxy: true },
  );
});

test.run();
