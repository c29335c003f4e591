// The hold's release decision, and the Hold's timers on a clock the test moves:
// nothing waits on real time.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { decide } from '../../src/hold/decide.ts';
import { Hold, type HoldOptions } from '../../src/hold/hold.ts';
import type { KubeClient } from '../../src/kube/client.ts';
import { assertEqualJitter, gaps } from '../support/backoff.ts';
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

interface FakeState {
  deployment: any;
  finalizing: any[];
  failGets?: number;
  failWatches?: number;
}

/**
 * A client that answers the hold's reads from `state`; the watch never ends until aborted.
 * `failGets` and `failWatches`: so many of those calls fail first (the API down).
 */
function fakeClient(state: FakeState, calls: string[]): KubeClient {
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

/** The moments, after `T0`, at which `calls` got `what`: the client records calls, the clock their times. */
function timed(clock: FakeClock, calls: string[]) {
  const at: { what: string; t: number }[] = [];
  const push = calls.push.bind(calls);
  calls.push = (...items: string[]) => {
    for (const what of items) at.push({ what, t: clock.now() - T0 });
    return push(...items);
  };
  return (what: string) => at.filter((c) => c.what === what).map((c) => c.t);
}

/**
 * The hold of pod op-1 (widgets.example.com, timeout 60 s, settle 5 s, `more` on top) against
 * `fakeClient(state)`, started on a fake clock at T0: what its client, guard and `onReleased` were told is kept.
 */
async function startHold(state: FakeState, more: Partial<HoldOptions> = {}) {
  const clock = new FakeClock(T0);
  const calls: string[] = [];
  const times = timed(clock, calls);
  const held: string[] = [];
  const released: string[] = [];
  const reasons: string[] = [];
  const guard = {
    finalizer: 'drainguard.dev/holder-a',
    hold: (t: { name: string }) => void held.push(t.name),
    letGo: async (t: { name: string }) => (released.push(t.name), 'removed' as const),
  };
  const hold = new Hold({
    client: fakeClient(state, calls),
    guard,
    pod: { name: 'op-1', namespace: 'ns', uid: 'a' },
    kinds: [{ plural: 'widgets', group: 'example.com' }],
    timeoutMs: 60_000,
    settleMs: 5_000,
    clock,
    onReleased: (r) => reasons.push(r),
    ...more,
  });
  hold.start();
  await settle();
  return { clock, calls, times, held, released, reasons, hold };
}

test('the Hold on a fake clock: held through the settle, released finalized once the list is empty', async () => {
  const widget = { metadata: { name: 'w', deletionTimestamp: 'x', finalizers: ['example.com/cleanup', 'drainguard.dev/holder-a'] } };
  const state = {
    deployment: { metadata: { name: 'op', uid: 'd-uid', deletionTimestamp: 'x', finalizers: ['drainguard.dev/holder-a'] } },
    finalizing: [widget],
  };
  const { clock, calls, held, released, reasons, hold } = await startHold(state, { pollMs: 1000 });
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
  const widget = { metadata: { name: 'w', deletionTimestamp: 'x', finalizers: ['example.com/cleanup'] } };
  const { clock, released, reasons, hold } = await startHold({
    deployment: { metadata: { name: 'op', uid: 'd-uid', deletionTimestamp: 'x', finalizers: ['drainguard.dev/holder-a'] } },
    finalizing: [widget],
  });
  await clock.advance(59_999);
  assert.equal(released, []);
  await clock.advance(1);
  assert.equal(reasons, ['timeout']);
  await hold.stop();
});

// Three calls of one kind fail (the API down), then the fourth goes through: the tries KEEP_TRYING's backoff apart.
for (const { what, fail, call } of [
  {
    what: 'its search for the Deployment retries by KEEP_TRYING while the API is down, then holds it',
    fail: { failGets: 3 },
    call: 'get pods/op-1',
  },
  {
    what: "a watch that fails is listed and watched again after KEEP_TRYING's backoff",
    fail: { failWatches: 3 },
    call: 'watch deployments',
  },
]) {
  test(`the Hold on a fake clock: ${what}`, async () => {
    const { clock, times, held, hold } = await startHold({
      deployment: { metadata: { name: 'op', uid: 'd-uid' } },
      finalizing: [],
      ...fail,
    });
    await clock.step(3);
    const tries = times(call);
    assert.is(tries.length, 4, `${call}: three failures, then the one that goes through`);
    assertEqualJitter(gaps(tries), 500, 10_000, call);
    assert.equal(held, ['op'], 'the Deployment held');
    await hold.stop();
  });
}

test.run();
