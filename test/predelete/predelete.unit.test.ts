// predelete's timeout on a clock the test moves, with an API the test answers:
// a read every poll, the last pause cut to the deadline, the timeout at it with
// what is left, how long an object took to go, and each read's own deadline.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { KubeClient } from '../../src/kube/client.ts';
import { KubeApiError } from '../../src/kube/errors.ts';
import type { ResourceRef } from '../../src/kube/objects.ts';
import { PredeleteError, predelete } from '../../src/predelete/predelete.ts';
import { FakeClock } from '../support/fake-clock.ts';
import { within } from '../support/wait.ts';

const T0 = Date.UTC(2026, 0, 1);
const WIDGETS: ResourceRef = { group: 'example.com', version: 'v1', resource: 'widgets', kind: 'Widget', namespaced: true };
const STAGES = [[{ text: 'widgets.example.com/w', resource: WIDGETS, name: 'w' }]];

/** One widget held by a finalizer until the read `goneAtRead` (never without); each read noted with when it came and its deadline. */
function api(clock: FakeClock, goneAtRead?: number) {
  const reads: { at: number; deadline?: number }[] = [];
  const client = {
    delete: async () => ({ metadata: { name: 'w', uid: 'u1' } }),
    get: async (_ref: unknown, call: { deadline?: number }) => {
      reads.push({ at: clock.now() - T0, deadline: call.deadline === undefined ? undefined : call.deadline - T0 });
      if (reads.length === goneAtRead) throw new KubeApiError('GET widget/w', 'https://fake', 404, 'NotFound', 'widgets "w" not found');
      return { metadata: { name: 'w', uid: 'u1', finalizers: ['example.com/cleanup'], deletionTimestamp: new Date(T0).toISOString() } };
    },
  } as unknown as KubeClient;
  return { client, reads };
}

function run(clock: FakeClock, client: KubeClient, timeoutMs: number) {
  const said: string[] = [];
  let failure: unknown;
  let done = false;
  const pending = predelete({
    client,
    stages: STAGES,
    namespace: 'ops',
    propagation: 'Background',
    timeoutMs,
    pollMs: 300,
    clock,
    say: (line) => said.push(line),
  }).then(
    () => (done = true),
    (err: unknown) => (failure = err),
  );
  return { pending, said, failure: () => failure, ended: () => done || failure !== undefined };
}

test('held until the timeout: a read every poll, the last pause cut to the deadline, then what is left and its finalizers', async () => {
  const clock = new FakeClock(T0);
  const { client, reads } = api(clock);
  const r = run(clock, client, 1000);
  await clock.advance(999);
  assert.is(r.ended(), false);
  await clock.advance(1);
  await within(2000, 'the timeout', r.pending);
  assert.equal(
    reads.map((x) => x.at),
    [0, 300, 600, 900, 1000, 1000],
    'the polls, then the read of what is left',
  );
  const err = r.failure() as PredeleteError;
  assert.instance(err, PredeleteError);
  assert.is(err.code, 'DG_PREDELETE_TIMEOUT');
  assert.is(err.message, 'timed out with 1 left:\n  widget.example.com/w (namespace ops): finalizers example.com/cleanup');
  assert.equal(err.remaining, [{ name: 'widget.example.com/w (namespace ops)', finalizers: ['example.com/cleanup'], deleting: true }]);
  assert.is(clock.nextAt, undefined);
});

test("each read's deadline is the timeout's, or 5 s from the read when that is later; the read of what is left has none", async () => {
  const clock = new FakeClock(T0);
  const { client, reads } = api(clock);
  const r = run(clock, client, 1000);
  await clock.advance(1000);
  await within(2000, 'the timeout', r.pending);
  assert.equal(
    reads.map((x) => x.deadline),
    [5000, 5300, 5600, 5900, 6000, undefined],
  );
});

test('gone at the third read: how long it took on the clock, and all gone', async () => {
  const clock = new FakeClock(T0);
  const { client } = api(clock, 3);
  const r = run(clock, client, 60_000);
  await clock.advance(600);
  await within(2000, 'the end', r.pending);
  assert.is(r.failure(), undefined);
  assert.equal(r.said, [
    'widget.example.com/w (namespace ops) deleted',
    'waiting for widget.example.com/w (namespace ops): held by finalizers example.com/cleanup',
    'widget.example.com/w (namespace ops) gone after 0.6s',
    'all gone',
  ]);
});

test.run();
