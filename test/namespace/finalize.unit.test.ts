// The namespace's custom resources finalized before the drain, on a clock the
// test moves and with an API the test answers: a list every poll while their
// finalizers run, given up by the last poll that fits before the deadline, and
// an abort (a second signal) ends the wait at once.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { KubeClient } from '../../src/kube/client.ts';
import { KubeApiError } from '../../src/kube/errors.ts';
import type { KubeObject } from '../../src/kube/objects.ts';
import type { LogFields, Logger } from '../../src/log/logger.ts';
import { type NamespaceFinalizeOutcome, finalizeNamespaceContent } from '../../src/namespace/finalize.ts';
import { FakeClock } from '../support/fake-clock.ts';
import { within } from '../support/wait.ts';

const T0 = Date.UTC(2026, 0, 1);
const NS = 'ops';
const KINDS = [{ plural: 'widgets', group: 'example.com' }];

function capture(): { logger: Logger; lines: { msg: string; fields?: LogFields }[] } {
  const lines: { msg: string; fields?: LogFields }[] = [];
  const push = (msg: string, fields?: LogFields) => void lines.push({ msg, fields });
  const logger: Logger = { debug() {}, info: push, warn: push, error: push, with: () => logger };
  return { logger, lines };
}

/**
 * A namespace being deleted with one widget whose finalizer runs until `goneAtList` (the list that no longer finds it;
 * never without); `deleteRefused`: its DELETE answered 403, as when the Role granting it went with the namespace.
 */
function api(clock: FakeClock, goneAtList?: number, deleteRefused = false) {
  const listedAt: number[] = [];
  const widget: KubeObject = { metadata: { name: 'w', namespace: NS, finalizers: ['example.com/cleanup'] } };
  const client = {
    get: async () => ({ metadata: { name: NS, deletionTimestamp: new Date(T0).toISOString() } }),
    request: async (_method: string, path: string) =>
      path === '/apis/example.com'
        ? { preferredVersion: { version: 'v1' } }
        : { resources: [{ name: 'widgets', kind: 'Widget', namespaced: true }] },
    // As the client does: a call whose signal has aborted is cancelled.
    list: async (_ref: unknown, _ns: string, call: { signal?: AbortSignal }) => {
      if (call.signal?.aborted) throw new Error('cancelled');
      listedAt.push(clock.now() - T0);
      return { items: listedAt.length === goneAtList ? [] : [widget] };
    },
    delete: async () => {
      if (deleteRefused) throw new KubeApiError('DELETE widget/ops/w', 'https://api', 403, 'Forbidden', 'widgets "w" is forbidden');
      return {};
    },
  } as unknown as KubeClient;
  return { client, listedAt };
}

function run(clock: FakeClock, client: KubeClient, logger: Logger, deadline: number, signal?: AbortSignal) {
  let outcome: NamespaceFinalizeOutcome | undefined;
  const pending = finalizeNamespaceContent(
    { namespace: NS, kinds: KINDS, client: async () => client, logger, clock, pollMs: 250 },
    deadline,
    signal,
  ).then((o) => (outcome = o));
  return { pending, outcome: () => outcome };
}

test('finalizers that never finish: a list every 250 ms, given up at the last poll that fits before the deadline', async () => {
  const clock = new FakeClock(T0);
  const { client, listedAt } = api(clock);
  const { logger, lines } = capture();
  const r = run(clock, client, logger, T0 + 1000);
  await clock.advance(749);
  assert.is(r.outcome(), undefined);
  await clock.advance(1);
  assert.equal(await within(2000, 'the outcome', r.pending), {
    outcome: 'left',
    left: [`widgets.example.com/${NS}/w (finalizers: example.com/cleanup)`],
  });
  assert.equal(listedAt, [0, 250, 500, 750]);
  assert.is(lines.at(-1)!.msg, 'namespace being deleted: custom resources not finalized by the deadline; draining now, they are left');
  assert.is(clock.nextAt, undefined);
});

test('finalized at the third list: gone, and the time it took on the clock', async () => {
  const clock = new FakeClock(T0);
  const { client, listedAt } = api(clock, 3);
  const { logger, lines } = capture();
  const r = run(clock, client, logger, T0 + 10_000);
  await clock.advance(500);
  assert.equal(await within(2000, 'the outcome', r.pending), { outcome: 'finalized', objects: [`widgets.example.com/${NS}/w`] });
  assert.equal(listedAt, [0, 250, 500]);
  assert.equal(lines.at(-1), {
    msg: 'namespace being deleted: its custom resources are finalized and gone',
    fields: { namespace: NS, objects: [`widgets.example.com/${NS}/w`], afterMs: 500 },
  });
});

test('a refused delete: warned, naming the objects, and waited out: the namespace controller deletes them, the operator finalizes them', async () => {
  const clock = new FakeClock(T0);
  const { client, listedAt } = api(clock, 3, true);
  const { logger, lines } = capture();
  const r = run(clock, client, logger, T0 + 10_000);
  await clock.advance(500);
  assert.equal(await within(2000, 'the outcome', r.pending), { outcome: 'finalized', objects: [`widgets.example.com/${NS}/w`] });
  assert.equal(listedAt, [0, 250, 500]);
  const warned = lines.find((l) => l.msg.startsWith('namespace being deleted: deleting its custom resources was refused'));
  assert.ok(warned, lines.map((l) => l.msg).join('\n'));
  assert.equal(warned.fields?.objects, [`widgets.example.com/${NS}/w`]);
});

test('aborted between two polls: the outcome at once, no later list', async () => {
  const clock = new FakeClock(T0);
  const { client, listedAt } = api(clock);
  const abort = new AbortController();
  const r = run(clock, client, capture().logger, T0 + 10_000, abort.signal);
  await clock.advance(300);
  abort.abort();
  assert.equal(await within(2000, 'the outcome', r.pending), { outcome: 'aborted' });
  assert.equal(listedAt, [0, 250]);
  assert.is(clock.now(), T0 + 300);
  assert.is(clock.nextAt, undefined);
});

test.run();
