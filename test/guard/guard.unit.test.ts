// The guard's timing rules on a clock the test moves, against an API the test
// plays in memory: the renewal every third of the Lease's duration, the backoff
// while the API is down (and its cap at the renewal), and the release by its
// deadline, the last wave (drainguard's own ServiceAccount) keeping its part
// of the time. Nothing waits on real time.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parseGuardList } from '../../src/config/guard-list.ts';
import { Guard } from '../../src/guard/guard.ts';
import type { KubeClient } from '../../src/kube/client.ts';
import { KubeApiError } from '../../src/kube/errors.ts';
import type { KubeObject, ObjectRef } from '../../src/kube/objects.ts';
import { assertEqualJitter, gaps } from '../support/backoff.ts';
import { FakeClock, settle } from '../support/fake-clock.ts';
import { recorder } from '../support/log-recorder.ts';

const POD = { name: 'op-1', namespace: 'op', uid: 'pod-uid' };

interface Call {
  readonly at: number;
  readonly what: string;
}

/**
 * An API in memory: objects by resource and name, merge patches of finalizers
 * and Lease specs, the strategic merge patch that removes finalizers by value.
 * `down` refuses every call; `hang(what)` keeps a call unanswered until its
 * signal aborts.
 */
class PlayedApi {
  readonly calls: Call[] = [];
  readonly objects = new Map<string, KubeObject>();
  down = false;
  readonly hanging = new Set<string>();
  readonly #clock: FakeClock;

  constructor(clock: FakeClock) {
    this.#clock = clock;
    this.put('pods', POD.name, {
      metadata: { name: POD.name, namespace: POD.namespace, uid: POD.uid },
      spec: { serviceAccountName: 'op' },
    });
  }

  put(resource: string, name: string, object: Partial<KubeObject> & { metadata: KubeObject['metadata'] }): void {
    this.objects.set(`${resource}/${name}`, object as KubeObject);
  }

  async #answer<T>(what: string, options: { signal?: AbortSignal } | undefined, work: () => T): Promise<T> {
    this.calls.push({ at: this.#clock.now(), what });
    if (this.down) throw new Error('connect ECONNREFUSED');
    if (this.hanging.has(what)) {
      await new Promise<void>((resolve) =>
        options?.signal?.aborted ? resolve() : options?.signal?.addEventListener('abort', () => resolve(), { once: true }),
      );
      throw new Error(`${what}: aborted`);
    }
    return work();
  }

  #get(key: string): KubeObject {
    const o = this.objects.get(key);
    if (!o) throw new KubeApiError(`get ${key}`, 'https://played', 404, 'NotFound', `${key} not found`);
    return o;
  }

  client(): KubeClient {
    const client = {
      server: 'https://played',
      get: (ref: ObjectRef, options?: { signal?: AbortSignal }) =>
        this.#answer(`get ${ref.resource}/${ref.name}`, options, () => this.#get(`${ref.resource}/${ref.name}`)),
      create: (r: { resource: string }, _ns: string, body: KubeObject, options?: { signal?: AbortSignal }) =>
        this.#answer(`create ${r.resource}/${body.metadata.name}`, options, () => {
          if (this.objects.has(`${r.resource}/${body.metadata.name}`))
            throw new KubeApiError(`create ${r.resource}`, 'https://played', 409, 'AlreadyExists', 'exists');
          this.objects.set(`${r.resource}/${body.metadata.name}`, body);
          return body;
        }),
      patch: (ref: ObjectRef, patch: { metadata?: Record<string, unknown> }, _type: string, options?: { signal?: AbortSignal }) =>
        this.#answer(`patch ${ref.resource}/${ref.name}`, options, () => {
          const o = this.#get(`${ref.resource}/${ref.name}`);
          const drop = patch.metadata?.['$deleteFromPrimitiveList/finalizers'] as string[] | undefined;
          const finalizers = drop
            ? (o.metadata.finalizers ?? []).filter((f) => !drop.includes(f))
            : ((patch.metadata?.finalizers as string[] | undefined) ?? o.metadata.finalizers);
          const next = { ...o, metadata: { ...o.metadata, finalizers } };
          this.objects.set(`${ref.resource}/${ref.name}`, next);
          return next;
        }),
      delete: (ref: ObjectRef, options?: { signal?: AbortSignal }) =>
        this.#answer(`delete ${ref.resource}/${ref.name}`, options, () => {
          this.#get(`${ref.resource}/${ref.name}`);
          this.objects.delete(`${ref.resource}/${ref.name}`);
          return {};
        }),
      list: (r: { resource: string }, _ns: string, options?: { signal?: AbortSignal }) =>
        this.#answer(`list ${r.resource}`, options, () => ({
          items: [...this.objects].filter(([k]) => k.startsWith(`${r.resource}/`)).map(([, o]) => o),
        })),
    };
    return client as unknown as KubeClient;
  }

  /** The times (relative to `t0`) of the calls that start with `what`, from the `from`th call on. */
  timesOf(what: string, t0: number, from = 0): number[] {
    return this.calls
      .slice(from)
      .filter((c) => c.what.startsWith(what))
      .map((c) => c.at - t0);
  }
}

/**
 * A guard of `guard` over the played API (the pod, its ServiceAccount op, the ClusterRole manager),
 * started on a fake clock; `down`: the API refuses every call from the start.
 */
async function started(guard: string, leaseDurationMs: number, { down = false } = {}) {
  const clock = new FakeClock();
  const api = new PlayedApi(clock);
  api.put('clusterroles', 'manager', { metadata: { name: 'manager' }, rules: [] } as never);
  api.put('serviceaccounts', 'op', { metadata: { name: 'op', namespace: 'op' } });
  api.down = down;
  const log = recorder();
  const g = new Guard({
    client: api.client(),
    targets: parseGuardList(guard, 'DRAINGUARD_GUARD'),
    pod: POD,
    leaseDurationMs,
    logger: log,
    clock,
  });
  const t0 = clock.now();
  g.start();
  await settle();
  return { clock, api, log, guard: g, t0 };
}

test('the Lease is renewed every third of its duration, on the clock', async () => {
  const s = await started('clusterrole/manager', 15_000);
  assert.equal(s.api.timesOf('create leases', s.t0), [0], 'created at the start');
  assert.ok(s.guard.status().set, 'set at once: Lease held, finalizer added');
  await s.clock.advance(4_999);
  assert.equal(s.api.timesOf('patch leases', s.t0), [], 'not renewed before a third of 15 s');
  await s.clock.advance(1);
  await s.clock.advance(5_000);
  assert.equal(s.api.timesOf('patch leases', s.t0), [5_000, 10_000]);
  await s.guard.release(s.clock.now() + 10_000);
});

test('while the API is down the guard retries by KEEP_TRYING (0.5 s doubling, with jitter), never further apart than the renewal', async () => {
  const s = await started('clusterrole/manager', 60_000, { down: true });
  await s.clock.step(7);
  const waits = gaps(s.api.timesOf('get pods', s.t0));
  assert.is(waits.length, 7);
  assertEqualJitter(waits, 500, 10_000, 'the retries');
  assert.equal(
    s.log.lines.filter((l) => l.msg.startsWith('guard not set')).map((l) => l.fields?.failures),
    [1],
    'the first failure is told, then every tenth only',
  );
  await s.guard.release(s.clock.now() + 1000);

  const capped = await started('clusterrole/manager', 3_000, { down: true });
  await capped.clock.step(5);
  const t = capped.api.timesOf('get pods', capped.t0);
  assert.ok(
    t.slice(1).every((x, i) => x - t[i]! <= 1_000),
    `never more than the renewal (1 s) apart: ${t.join(', ')}`,
  );
  await capped.guard.release(capped.clock.now() + 1000);
});

test('the API back after failures: the guard is set at the next try and says so, then renews on its cadence', async () => {
  const s = await started('clusterrole/manager', 15_000, { down: true });
  await s.clock.step(2);
  assert.not.ok(s.guard.status().set);
  s.api.down = false;
  await s.clock.step(1);
  const back = s.clock.now();
  assert.ok(s.guard.status().set, 'set again');
  assert.equal(s.log.lines.find((l) => l.msg === 'Kubernetes API reachable again: guard set')?.fields, { afterFailures: 3 });
  await s.clock.advance(5_000);
  assert.equal(s.api.timesOf('patch leases', back), [5_000], 'the next renewal a third of 15 s later');
  await s.guard.release(s.clock.now() + 10_000);
});

test('the release never outlasts its deadline, and the last wave (its own ServiceAccount, being deleted) keeps the last second to itself', async () => {
  const s = await started('clusterrole/manager,serviceaccount/op/op', 15_000);
  for (const key of ['clusterroles/manager', 'serviceaccounts/op'])
    assert.ok(s.api.objects.get(key)?.metadata.finalizers?.includes('drainguard.dev/holder-pod-uid'), `${key} held`);
  // The uninstall deletes drainguard's own ServiceAccount: its finalizer is what keeps it.
  const account = s.api.objects.get('serviceaccounts/op')!;
  s.api.objects.set('serviceaccounts/op', { ...account, metadata: { ...account.metadata, deletionTimestamp: '2026-01-01T00:00:00Z' } });
  // The removal from the ClusterRole never answers; everything else does, at once.
  s.api.hanging.add('patch clusterroles/manager');
  await s.clock.advance(1_000);
  const start = s.clock.now();
  const before = s.api.calls.length;
  const deadline = start + 10_000;
  let released = false;
  void s.guard.release(deadline).then(() => (released = true));
  await settle();
  await s.clock.advance(8_999);
  assert.equal(
    s.api.timesOf('patch serviceaccounts/op', start, before),
    [],
    'the ServiceAccount waits for the ClusterRole while more than a second is left',
  );
  await s.clock.advance(1);
  assert.equal(s.api.timesOf('patch serviceaccounts/op', start, before), [9_000], 'then goes, a second before the deadline');
  assert.not.ok(released);
  await s.clock.advance(1_000);
  assert.ok(released, 'over at the deadline');
  const cut = s.log.lines.find((l) => l.msg.startsWith('guard release cut short by the deadline'));
  assert.equal(cut?.fields?.afterMs, 10_000);
});

test("the release's warm-up reads wait a second at most, a quarter of what is left when less: reads that never answer delay no wave longer", async () => {
  const s = await started('clusterrole/manager,serviceaccount/op/op', 15_000);
  const account = s.api.objects.get('serviceaccounts/op')!;
  s.api.objects.set('serviceaccounts/op', { ...account, metadata: { ...account.metadata, deletionTimestamp: '2026-01-01T00:00:00Z' } });
  await s.clock.advance(1_000);
  for (const what of ['get clusterroles/manager', 'get serviceaccounts/op', 'patch clusterroles/manager']) s.api.hanging.add(what);
  const start = s.clock.now();
  const before = s.api.calls.length;
  const released = s.guard.release(start + 10_000);
  await settle();
  await s.clock.advance(10_000);
  await released;
  assert.equal(s.api.timesOf('patch clusterroles/manager', start, before), [1_000], "the first wave after the warm-up's second");
  // At 9 s the last wave's own warm-up gets a quarter of the 1 s left.
  assert.equal(s.api.timesOf('patch serviceaccounts/op', start, before), [9_250], "the last wave after its warm-up's quarter");
});

test.run();
