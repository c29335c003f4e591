// Which holders are live, judged from the Leases a fake API answers with at a
// fixed moment: only the holder's own Lease, in the guard's namespace, owned by
// its Pod and renewed neither too long ago nor in the future, keeps its
// finalizer. Nothing waits on real time.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { CLOCK_SKEW_MS, type LeaseObject, listHolders } from '../../src/guard/holders.ts';
import { microTime } from '../../src/kube/objects.ts';
import { HolderLease } from '../../src/guard/lease.ts';
import type { KubeClient } from '../../src/kube/client.ts';
import { silentLogger } from '../../src/log/logger.ts';

const NOW = Date.UTC(2026, 0, 1, 12);
const NS = 'op';
const UID = '3f2a0000-0000-4000-8000-000000000001';
const owner = (uid = UID, kind = 'Pod', apiVersion = 'v1') => [{ apiVersion, kind, name: 'op-0', uid }];

function lease(
  options: {
    namespace?: string;
    owners?: LeaseObject['metadata']['ownerReferences'] | null;
    renewedAgoMs?: number;
    durationS?: number;
  } = {},
): LeaseObject {
  const { namespace = NS, owners = owner(), renewedAgoMs = 1_000, durationS = 60 } = options;
  return {
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: {
      name: `drainguard-${UID}`,
      namespace,
      labels: { 'app.kubernetes.io/managed-by': 'drainguard' },
      ...(owners && { ownerReferences: owners }),
    },
    spec: { holderIdentity: 'op-0', leaseDurationSeconds: durationS, renewTime: microTime(NOW - renewedAgoMs) },
  };
}

/** A client that lists `leases` as an API server with them stored would: a namespace's, or all of them. */
function fakeClient(leases: LeaseObject[], lists: string[] = []): KubeClient {
  return {
    server: 'https://fake',
    async list(_r: unknown, namespace: string | undefined) {
      lists.push(namespace ?? '(cluster)');
      return { items: leases.filter((l) => namespace === undefined || l.metadata.namespace === namespace) };
    },
  } as unknown as KubeClient;
}

const judge = async (leases: LeaseObject[]) => (await listHolders(fakeClient(leases), NS, () => NOW)).state(UID);
const verdict = (s: { live: boolean; staleBecause?: string }) => [s.live, s.staleBecause];

test('live: its own Lease, in the namespace, owned by its Pod, renewed a second ago', async () => {
  assert.equal(verdict(await judge([lease()])), [true, undefined]);
});

test('expired: renewed longer ago than its lease duration (the last moment still counts)', async () => {
  assert.equal(verdict(await judge([lease({ renewedAgoMs: 60_001 })])), [false, 'expired']);
  assert.equal(verdict(await judge([lease({ renewedAgoMs: 60_000 })])), [true, undefined]);
});

test('a Lease of that name in another namespace does not keep a dead holder live', async () => {
  assert.equal(verdict(await judge([lease({ namespace: 'elsewhere', durationS: 3600 })])), [false, 'gone']);
});

test('an expired Lease of that name in another namespace does not make a live holder look stale', async () => {
  // Listed after the holder's own, as a cluster-wide list of namespaces sorted by name would have it.
  assert.equal(verdict(await judge([lease(), lease({ namespace: 'zz-elsewhere', renewedAgoMs: 3_600_000 })])), [true, undefined]);
});

test('only the own namespace is listed: nothing of other namespaces is read, nor needs the right to be', async () => {
  const lists: string[] = [];
  const index = await listHolders(fakeClient([lease(), lease({ namespace: 'elsewhere' })], lists), NS, () => NOW);
  assert.equal(lists, [NS]);
  assert.equal([index.scope, index.leases.map((l) => l.metadata.namespace)], [NS, [NS]]);
});

test('a Lease that a client answers from another namespace all the same counts for nothing', async () => {
  const client = { server: 'https://fake', list: async () => ({ items: [lease({ namespace: 'elsewhere' })] }) } as unknown as KubeClient;
  assert.equal(verdict((await listHolders(client, NS, () => NOW)).state(UID)), [false, 'gone']);
});

test('without an ownerReference to its Pod: stale, however freshly renewed', async () => {
  assert.equal(verdict(await judge([lease({ owners: null })])), [false, 'not-owned']);
  assert.equal(verdict(await judge([lease({ owners: [] })])), [false, 'not-owned']);
});

test('owned by a Pod with another UID, or by something else with this UID: stale', async () => {
  assert.equal(verdict(await judge([lease({ owners: owner('91c00000-0000-4000-8000-000000000002') })])), [false, 'not-owned']);
  assert.equal(verdict(await judge([lease({ owners: owner(UID, 'ReplicaSet', 'apps/v1') })])), [false, 'not-owned']);
  assert.equal(verdict(await judge([lease({ owners: owner(UID, 'Pod', 'v2') })])), [false, 'not-owned']);
  assert.equal(
    verdict(await judge([lease({ owners: [...owner('other'), ...owner()] })])),
    [true, undefined],
    'one owner of several is enough',
  );
});

test('a renewTime in the future: within the clock-skew allowance live, beyond it stale', async () => {
  assert.equal(verdict(await judge([lease({ renewedAgoMs: -CLOCK_SKEW_MS })])), [true, undefined]);
  assert.equal(verdict(await judge([lease({ renewedAgoMs: -CLOCK_SKEW_MS - 1 })])), [false, 'future']);
  assert.equal(
    verdict(await judge([lease({ renewedAgoMs: -365 * 86_400_000, durationS: 15 })])),
    [false, 'future'],
    'a year ahead does not keep a dead holder for a year',
  );
});

test('an unreadable renewTime: stale', async () => {
  const l = lease();
  l.spec!.renewTime = 'yesterday';
  assert.equal(verdict(await judge([l])), [false, 'expired']);
});

test('MicroTime: always six fractional digits, as the API server parses it', () => {
  assert.equal(microTime(Date.UTC(2026, 0, 1, 0, 0, 0, 123)), '2026-01-01T00:00:00.123000Z');
  assert.equal(microTime(Date.UTC(2026, 0, 1)), '2026-01-01T00:00:00.000000Z');
  assert.match(microTime(NOW + 999), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
});

test('the holder Lease is written with six-digit times, and each renewal puts its label and owner back', async () => {
  const writes: { verb: string; body: any }[] = [];
  const client = {
    server: 'https://fake',
    create: async (_r: unknown, _ns: string, body: unknown) => writes.push({ verb: 'create', body }),
    patch: async (_ref: unknown, body: unknown) => writes.push({ verb: 'patch', body }),
  } as unknown as KubeClient;
  const pod = { name: 'op-0', namespace: NS, uid: UID };
  const holder = new HolderLease({
    client,
    pod,
    guards: ['clusterrole/op'],
    durationMs: 60_000,
    logger: silentLogger,
    clock: { now: () => NOW + 7 },
  });
  await holder.hold(new AbortController().signal);
  await holder.hold(new AbortController().signal);
  assert.equal(
    writes.map((w) => w.verb),
    ['create', 'patch'],
  );
  const [made, renewed] = writes.map((w) => w.body);
  assert.equal([made.spec.acquireTime, made.spec.renewTime, renewed.spec.renewTime], Array(3).fill('2026-01-01T12:00:00.007000Z'));
  assert.equal(renewed.metadata.ownerReferences, owner());
  assert.equal(renewed.metadata.labels, { 'app.kubernetes.io/managed-by': 'drainguard' });
});

test.run();
