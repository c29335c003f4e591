// The hold's release decision, and the Hold's timers on a clock the test moves:
// nothing waits on real time.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { decide } from '../../src/hold/decide.ts';
import { Hold } from '../../src/hold/hold.ts';
import type { KubeClient } from '../../src/kube/client.ts';
import { FakeClock, settle } from '../support/fake-clock.ts';

const T0 = Date.UTC(2026, 0, 1);
const base = { settleMs: 5_000, timeoutMs: 300_000, now: T0 };

test('not deleting: idle, whatever is being finalized', () => {
  assert.equal(decide({ ...base, finalizing: [] }), { hold: 'idle' });
});

test('deleting: settling until SETTLE, then released once nothing is finalizing', () => {
  const s = { ...base, deletingFinalizers: ['drainguard.dev/holder-a'], deletingSeenAt: T0 };
  assert.equal(
    decide({ ...s, finalizing: [] }),
    { hold: 'settling', lookAt: T0 + 5_000 },
    'an empty list before the settle means nothing yet',
  );
  assert.equal(decide({ ...s, now: T0 + 5_000 }), { hold: 'waiting', until: T0 + 300_000 }, 'not listed yet');
  assert.equal(decide({ ...s, now: T0 + 5_000, finalizing: [{ object: 'x', finalizers: ['a/b'] }] }), {
    hold: 'waiting',
    until: T0 + 300_000,
  });
  assert.equal(decide({ ...s, now: T0 + 5_000, finalizing: [] }), { release: 'finalized' });
  assert.equal(decide({ ...s, now: T0 + 300_000, finalizing: [{ object: 'x', finalizers: ['a/b'] }] }), { release: 'timeout' });
  assert.equal(decide({ ...s, now: T0 + 300_000 }), { release: 'timeout' }, 'a list that keeps failing ends at the timeout');
});

test('foreground and orphan deletion: released at once, before the settle', () => {
  assert.equal(decide({ ...base, deletingFinalizers: ['foregroundDeletion', 'drainguard.dev/holder-a'], deletingSeenAt: T0 }), {
    release: 'foreground',
  });
  assert.equal(decide({ ...base, deletingFinalizers: ['orphan'], deletingSeenAt: T0 }), { release: 'orphan' });
});

/**
 * A client that answers the hold's reads from `state`; the watch never ends until aborted.
 * `failGets` and `failWatches`: so many of those calls fail first (the API down).
 */
function fakeClient(state: { deployment: any; finalizing: any[]; failGets?: number; failWatches?: number }, calls: string[]): KubeClient {
  const client = {
    server: 'https://fake',
    async get(ref: { resource: string; name: string }) {
      calls.push(`get ${ref.resource}/${ref.name}`);
      if (state.failGets) {
        state.failGets--;
        throw new Error('connect ECONNREFUSED');
      }
      if (ref.resource === 'pods')
        return {
          metadata: {
            name: 'op-1',
            ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'op-abc', uid: 'rs', controller: true }],
          },
        };
      return {
        metadata: {
          name: 'op-abc',
          ownerReferences: [{ apiVersion: 'apps/v1', kind: 'Deployment', name: 'op', uid: 'd-uid', controller: true }],
        },
      };
    },
    async list(r: { resource: string }) {
      calls.push(`list ${r.resource}`);
      if (r.resource === 'deployments') return { metadata: { resourceVersion: '1' }, items: [state.deployment] };
      return { items: state.finalizing };
    },
    async request(_m: string, path: string) {
      calls.push(`discovery ${path}`);
      if (path === '/apis/example.com') return { preferredVersion: { version: 'v1' } };
      return { resources: [{ name: 'widgets', kind: 'Widget', namespaced: false }] };
    },
    watch(_r: unknown, _ns: unknown, _q: unknown, _on: unknown, options: { signal: AbortSignal }) {
      calls.push('watch deployments');
      if (state.failWatches) {
        state.failWatches--;
        return Promise.reject(new Error('connect ECONNREFUSED'));
      }
      return new Promise<void>((resolve) => options.signal.addEventListener('abort', () => resolve()));
    },
  };
  return client as unknown as KubeClient;
}

test('the Hold on a fake clock: held through the settle, released finalized once the list is empty', async () => {
  const clock = new FakeClock(T0);
  const calls: string[] = [];
  const widget = { metadata: { name: 'w', deletionTimestamp: 'x', finalizers: ['example.com/cleanup', 'drainguard.dev/holder-a'] } };
  const state = {
    deployment: { metadata: { name: 'op', uid: 'd-uid', deletionTimestamp: 'x', finalizers: ['drainguard.dev/holder-a'] } },
    finalizing: [widget],
  };
  const held: string[] = [];
  const released: string[] = [];
  const guard = {
    finalizer: 'drainguard.dev/holder-a',
    hold: (t: { name: string }) => void held.push(t.name),
    letGo: async (t: { name: string }) => (released.push(t.name), 'removed' as const),
  };
  const reasons: string[] = [];
  const hold = new Hold({
    client: fakeClient(state, calls),
    guard,
    pod: { name: 'op-1', namespace: 'ns', uid: 'a' },
    kinds: [{ plural: 'widgets', group: 'example.com' }],
    timeoutMs: 60_000,
    settleMs: 5_000,
    clock,
    pollMs: 1000,
    onReleased: (r) => reasons.push(r),
  });
  hold.start();
  await settle();
  assert.equal(held, ['op']);
  assert.is(hold.report().state, 'deleting', 'the list showed it deleting');
  assert.not.ok(calls.includes('list widgets'), 'nothing listed before the settle');
  await clock.advance(4_999);
  assert.not.ok(calls.includes('list widgets'));
  await clock.advance(1);
  assert.ok(calls.includes('list widgets'), 'listed at the settle');
  assert.equal(
    hold.report().waitingFor,
    [{ object: 'widgets.example.com/w', finalizers: ['example.com/cleanup'] }],
    "drainguard's own finalizers do not count",
  );
  await clock.advance(3_000);
  assert.equal(released, [], 'still finalizing');
  state.finalizing = [];
  await clock.advance(1_000);
  assert.equal(released, ['op']);
  assert.equal(reasons, ['finalized']);
  assert.equal(hold.report().released.finalized, 1);
  await hold.stop();
});

test('the Hold on a fake clock: released by the timeout, counted from the deletion seen', async () => {
  const clock = new FakeClock(T0);
  const calls: string[] = [];
  const widget = { metadata: { name: 'w', deletionTimestamp: 'x', finalizers: ['example.com/cleanup'] } };
  const state = {
    deployment: { metadata: { name: 'op', uid: 'd-uid', deletionTimestamp: 'x', finalizers: ['drainguard.dev/holder-a'] } },
    finalizing: [widget],
  };
  const released: string[] = [];
  const guard = {
    finalizer: 'drainguard.dev/holder-a',
    hold: () => {},
    letGo: async (t: { name: string }) => (released.push(t.name), 'removed' as const),
  };
  const reasons: string[] = [];
  const hold = new Hold({
    client: fakeClient(state, calls),
    guard,
    pod: { name: 'op-1', namespace: 'ns', uid: 'a' },
    kinds: [{ plural: 'widgets', group: 'example.com' }],
    timeoutMs: 60_000,
    settleMs: 5_000,
    clock,
    onReleased: (r) => reasons.push(r),
  });
  hold.start();
  await settle();
  await clock.advance(59_999);
  assert.equal(released, []);
  await clock.advance(1);
  assert.equal(reasons, ['timeout']);
  await hold.stop();
});

/** The moments, after `t0`, at which `calls` got `what`: the client records calls, the clock their times. */
function timed(clock: FakeClock, calls: string[]) {
  const at: { what: string; t: number }[] = [];
  const push = calls.push.bind(calls);
  calls.push = (...items: string[]) => {
    for (const what of items) at.push({ what, t: clock.now() - T0 });
    return push(...items);
  };
  return (what: string) => at.filter((c) => c.what === what).map((c) => c.t);
}

/** The gaps between the moments: each must be within equal jitter of KEEP_TRYING's 0.5 s doubling. */
function assertBackoff(moments: number[], what: string): void {
  moments.slice(1).forEach((t, i) => {
    const gap = t - moments[i]!;
    const ceiling = Math.min(10_000, 500 * 2 ** i);
    assert.ok(gap >= ceiling / 2 && gap <= ceiling, `${what}: wait ${i + 1} was ${gap} ms, not within ${ceiling / 2}..${ceiling}`);
  });
}

test('the Hold on a fake clock: its search for the Deployment retries by KEEP_TRYING while the API is down, then holds it', async () => {
  const clock = new FakeClock(T0);
  const calls: string[] = [];
  const times = timed(clock, calls);
  const state = { deployment: { metadata: { name: 'op', uid: 'd-uid' } }, finalizing: [], failGets: 3 };
  const held: string[] = [];
  const guard = {
    finalizer: 'drainguard.dev/holder-a',
    hold: (t: { name: string }) => void held.push(t.name),
    letGo: async () => 'removed' as const,
  };
  const hold = new Hold({
    client: fakeClient(state, calls),
    guard,
    pod: { name: 'op-1', namespace: 'ns', uid: 'a' },
    kinds: [{ plural: 'widgets', group: 'example.com' }],
    timeoutMs: 60_000,
    settleMs: 5_000,
    clock,
  });
  hold.start();
  await settle();
  for (let i = 0; i < 3; i++) await clock.advance(clock.nextAt! - clock.now());
  const tries = times('get pods/op-1');
  assert.is(tries.length, 4, 'three failures, then the read that finds it');
  assertBackoff(tries, 'the search');
  assert.equal(held, ['op']);
  await hold.stop();
});

test("the Hold on a fake clock: a watch that fails is listed and watched again after KEEP_TRYING's backoff", async () => {
  const clock = new FakeClock(T0);
  const calls: string[] = [];
  const times = timed(clock, calls);
  const state = { deployment: { metadata: { name: 'op', uid: 'd-uid' } }, finalizing: [], failWatches: 3 };
  const guard = { finalizer: 'drainguard.dev/holder-a', hold: () => {}, letGo: async () => 'removed' as const };
  const hold = new Hold({
    client: fakeClient(state, calls),
    guard,
    pod: { name: 'op-1', namespace: 'ns', uid: 'a' },
    kinds: [{ plural: 'widgets', group: 'example.com' }],
    timeoutMs: 60_000,
    settleMs: 5_000,
    clock,
  });
  hold.start();
  await settle();
  for (let i = 0; i < 3; i++) await clock.advance(clock.nextAt! - clock.now());
  const watches = times('watch deployments');
  assert.is(watches.length, 4, 'three failed watches, then one that holds');
  assertBackoff(watches, 'the watch');
  await hold.stop();
});

test.run();
