// readDeletion: what one GET of the Pod says of its deletion, with a client the
// test plays (no network): the deletionTimestamp and grace, no deletion, gone,
// and a second try only when the first failed otherwise and time is left; the
// probes' own grace of drainguard's container when nothing else says why.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { KubeClient } from '../../src/kube/client.ts';
import { KubeApiError, KubeUnreachableError } from '../../src/kube/errors.ts';
import { probeGraceOf, readDeletion } from '../../src/kube/pod.ts';

const POD = { name: 'op-0', namespace: 'ns' };
const UID = '6f1c2a3b-0000-4000-8000-000000000001';
/** drainguard's mounts in container `name` of pod UID: the kubelet's termination-log mount names it. */
const mountsOf = (name: string) =>
  `1532 1530 254:1 /var/lib/kubelet/pods/${UID}/containers/${name}/1c2d3e4f /dev/termination-log rw,relatime - ext4 /dev/vda1 rw\n`;

/** A client whose GETs answer in turn from `answers` (an Error is thrown); records each call's deadline. */
function played(...answers: (object | Error)[]) {
  const calls: { path: string; deadline?: number; retry?: unknown }[] = [];
  const client = {
    get: async (ref: { name: string; namespace?: string; resource: string }, options: { deadline?: number; retry?: unknown }) => {
      calls.push({ path: `${ref.resource}/${ref.namespace}/${ref.name}`, deadline: options.deadline, retry: options.retry });
      const a = answers.shift();
      if (a === undefined) throw new Error('no more answers');
      if (a instanceof Error) throw a;
      return a;
    },
  } as unknown as KubeClient;
  return { client, calls };
}

const notFound = () => new KubeApiError('GET pod/ns/op-0', 'https://api', 404, 'NotFound', 'pods "op-0" not found');

test('a Pod being deleted: its deletionTimestamp and grace, from one GET without retries', async () => {
  const { client, calls } = played({
    metadata: { name: 'op-0', deletionTimestamp: '2026-01-01T00:00:04Z', deletionGracePeriodSeconds: 4 },
  });
  const deadline = Date.now() + 1000;
  assert.equal(await readDeletion(client, POD, deadline), { state: 'deleting', at: Date.parse('2026-01-01T00:00:04Z'), graceMs: 4000 });
  assert.is(calls.length, 1);
  assert.equal([calls[0]!.path, calls[0]!.retry], ['pods/ns/op-0', false]);
  assert.ok(calls[0]!.deadline! < deadline && calls[0]!.deadline! >= deadline - 600, 'the first try gets half the time');
});

test('no deletionTimestamp: not being deleted; a 404: gone (a force delete), not tried again', async () => {
  assert.equal(await readDeletion(played({ metadata: { name: 'op-0' } }).client, POD, Date.now() + 1000), { state: 'not-deleting' });
  const gone = played(notFound(), { metadata: {} });
  assert.equal(await readDeletion(gone.client, POD, Date.now() + 1000), { state: 'gone' });
  assert.is(gone.calls.length, 1);
});

test('a first try that fails otherwise gets one more with the rest of the time; a second failure is thrown', async () => {
  const retried = played(new KubeUnreachableError('GET pod/ns/op-0', 'https://api', 'ECONNRESET'), {
    metadata: { deletionTimestamp: '2026-01-01T00:00:01Z' },
  });
  const deadline = Date.now() + 1000;
  assert.equal(await readDeletion(retried.client, POD, deadline), {
    state: 'deleting',
    at: Date.parse('2026-01-01T00:00:01Z'),
    graceMs: undefined,
  });
  assert.equal(
    retried.calls.map((c) => c.deadline === deadline),
    [false, true],
  );
  const failing = played(new Error('first'), new Error('second'));
  try {
    await readDeletion(failing.client, POD, Date.now() + 1000);
    assert.unreachable('thrown');
  } catch (err) {
    assert.is((err as Error).message, 'second');
  }
  const late = played(new Error('late'), { metadata: {} });
  try {
    await readDeletion(late.client, POD, Date.now() - 1);
    assert.unreachable('thrown');
  } catch (err) {
    assert.is((err as Error).message, 'late', 'no time left: no second try');
  }
});

test('the DisruptionTarget condition, when true, comes with the reading: with a deletion and without', async () => {
  const condition = {
    type: 'DisruptionTarget',
    status: 'True',
    reason: 'TerminationByKubelet',
    message: 'Pod was terminated in response to imminent node shutdown.',
  };
  const without = played({ metadata: { name: 'op-0' }, status: { conditions: [{ type: 'Ready', status: 'True' }, condition] } });
  assert.equal(await readDeletion(without.client, POD, Date.now() + 1000), {
    state: 'not-deleting',
    disruption: { reason: 'TerminationByKubelet', message: condition.message },
  });
  const evicted = played({
    metadata: { name: 'op-0', deletionTimestamp: '2026-01-01T00:00:04Z', deletionGracePeriodSeconds: 4 },
    status: { conditions: [{ ...condition, reason: 'EvictionByEvictionAPI', message: 'Eviction API: evicting' }] },
  });
  assert.equal((await readDeletion(evicted.client, POD, Date.now() + 1000)) as unknown, {
    state: 'deleting',
    at: Date.parse('2026-01-01T00:00:04Z'),
    graceMs: 4000,
    disruption: { reason: 'EvictionByEvictionAPI', message: 'Eviction API: evicting' },
  });
  const stale = played({ metadata: { name: 'op-0' }, status: { conditions: [{ ...condition, status: 'False' }] } });
  assert.equal(await readDeletion(stale.client, POD, Date.now() + 1000), { state: 'not-deleting' }, 'a false condition says nothing');
});

test("no deletion: the shortest probe grace of drainguard's container, by its mounts; a startup probe only before it started", async () => {
  const probe = (seconds?: number) => ({
    exec: { command: ['true'] },
    ...(seconds !== undefined && { terminationGracePeriodSeconds: seconds }),
  });
  const pod = (started: boolean) => ({
    metadata: { name: 'op-0', uid: UID },
    spec: {
      containers: [
        { name: 'manager', livenessProbe: probe(10), startupProbe: probe(4) },
        { name: 'other', livenessProbe: probe(1) },
      ],
    },
    status: { containerStatuses: [{ name: 'manager', started }] },
  });
  const read = (p: object, mounts: string) => readDeletion(played(p).client, POD, Date.now() + 1000, { mountinfo: mounts });
  assert.equal(await read(pod(true), mountsOf('manager')), {
    state: 'not-deleting',
    probeGrace: { probe: 'livenessProbe', container: 'manager', ms: 10_000 },
  });
  assert.equal(
    await read(pod(false), mountsOf('manager')),
    { state: 'not-deleting', probeGrace: { probe: 'startupProbe', container: 'manager', ms: 4000 } },
    'not started yet: the startup probe may still kill it',
  );
  assert.equal(
    await read(pod(true), mountsOf('other')),
    { state: 'not-deleting', probeGrace: { probe: 'livenessProbe', container: 'other', ms: 1000 } },
    "the other container's when drainguard runs in it",
  );
  assert.equal(await read(pod(true), ''), { state: 'not-deleting' }, "two containers and no mounts: none is known to be drainguard's");
  const plain = { metadata: { name: 'op-0', uid: UID }, spec: { containers: [{ name: 'manager', livenessProbe: probe() }] } };
  assert.equal(await read(plain, ''), { state: 'not-deleting' }, "a probe without its own grace: the Pod's applies");
  assert.equal(
    probeGraceOf({ metadata: { uid: UID }, spec: { containers: [{ name: 'manager', livenessProbe: probe(0) }] } }, ''),
    { probe: 'livenessProbe', container: 'manager', ms: 0 },
    'the only long-running container: its probe',
  );
});

test.run();
