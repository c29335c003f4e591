// The leader release's times on a clock the test moves, with an API the test
// answers: the Lease is written at the clock's moment with the deadline it was
// given; a failure is told as the deadline's only once the clock has passed
// it; the wait for the operator's exit ends at the deadline.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { KubeClient } from '../../src/kube/client.ts';
import { KubeUnreachableError } from '../../src/kube/errors.ts';
import { microTime } from '../../src/kube/objects.ts';
import { leaderRelease } from '../../src/leader/open.ts';
import { type LeaderLease, type LeaderReleaseOptions, releaseLeaderLease } from '../../src/leader/release.ts';
import type { Logger } from '../../src/log/logger.ts';
import { FakeClock } from '../support/fake-clock.ts';
import { tempDir } from '../support/proc.ts';
import { within } from '../support/wait.ts';

const T0 = Date.UTC(2026, 0, 1);
const NS = 'ops';

const lease: LeaderLease = {
  apiVersion: 'coordination.k8s.io/v1',
  kind: 'Lease',
  metadata: { name: 'op-lock', namespace: NS, resourceVersion: '7' },
  spec: { holderIdentity: 'op-0_6b0f5c52', leaseDurationSeconds: 15, leaseTransitions: 2 },
};

function capture(): { logger: Logger; warnings: string[] } {
  const warnings: string[] = [];
  const logger: Logger = { debug() {}, info() {}, warn: (msg) => warnings.push(msg), error() {}, with: () => logger };
  return { logger, warnings };
}

/** An API with the one Lease; `list` may take time on the clock and fail. */
function api(clock: FakeClock, list: { takesMs?: number; fails?: boolean } = {}) {
  const puts: { body: LeaderLease; deadline?: number }[] = [];
  const client = {
    list: async () => {
      if (list.takesMs) await clock.advance(list.takesMs);
      if (list.fails) throw new KubeUnreachableError('GET leases', 'https://fake', 'connect ECONNREFUSED');
      return { items: [lease] };
    },
    request: async (_method: string, _path: string, options: { body: LeaderLease; deadline?: number }) => {
      puts.push({ body: options.body, deadline: options.deadline });
      return options.body;
    },
  } as unknown as KubeClient;
  return { client, puts };
}

const options = (clock: FakeClock, client: KubeClient, logger: Logger): LeaderReleaseOptions => ({
  pod: { name: 'op-0', namespace: NS },
  lease: 'auto',
  client: async () => client,
  logger,
  clock,
});

test("the Lease is written at the clock's moment, with the release deadline on the call", async () => {
  const clock = new FakeClock(T0 + 123);
  const { client, puts } = api(clock);
  const { logger } = capture();
  assert.equal(await releaseLeaderLease(options(clock, client, logger), T0 + 5000), { outcome: 'released', leases: ['op-lock'] });
  assert.equal(puts.length, 1);
  assert.is(puts[0]!.deadline, T0 + 5000);
  assert.equal(puts[0]!.body.spec, {
    holderIdentity: '',
    leaseDurationSeconds: 1,
    acquireTime: microTime(T0 + 123),
    renewTime: microTime(T0 + 123),
    leaseTransitions: 2,
  });
});

test("a failure before the deadline is a failure; the same one after the clock passed the deadline is the deadline's", async () => {
  for (const [takesMs, outcome, warning] of [
    [499, 'failed', 'leader Lease not released (the successor waits out its lease duration)'],
    [500, 'deadline', 'leader Lease not released by the release deadline (the successor waits out its lease duration)'],
  ] as const) {
    const clock = new FakeClock(T0);
    const { client, puts } = api(clock, { takesMs, fails: true });
    const { logger, warnings } = capture();
    assert.equal(await releaseLeaderLease(options(clock, client, logger), T0 + 500), { outcome }, `failed after ${takesMs} ms`);
    assert.equal(warnings, [warning]);
    assert.equal(puts, []);
  }
});

test("the wait for the operator's exit ends at the release deadline on the clock, not before", async () => {
  const clock = new FakeClock(T0);
  let asked: AbortSignal | undefined;
  const release = leaderRelease({
    setting: 'auto',
    pod: { name: 'op-0', namespace: NS },
    // No API configured: the release goes on to 'no-api' once the wait is over.
    env: { HOME: tempDir() },
    logger: capture().logger,
    clock,
    operator: (signal) => new Promise<void>((resolve) => ((asked = signal), signal.addEventListener('abort', () => resolve()))),
  })!;
  let outcome: string | undefined;
  const pending = release(T0 + 2000).then((r) => (outcome = r.outcome));
  assert.ok(asked, 'the operator is waited for');
  assert.is(clock.nextAt, T0 + 2000, 'until the deadline, on the clock');
  await clock.advance(1999);
  assert.is(outcome, undefined);
  assert.is(asked!.aborted, false);
  await clock.advance(1);
  await within(2000, 'the release', pending);
  assert.is(asked!.aborted, true);
  assert.is(outcome, 'no-api');
  assert.is(clock.nextAt, undefined);
});

test.run();
