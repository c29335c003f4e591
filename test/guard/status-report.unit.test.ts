// `drainguard status` judges holders on the clock it is given, at the moment
// the report starts: a holder Lease of 60 s is live to its last moment and
// stale after it, with a clock the test moves and a fake API.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { LeaseObject } from '../../src/guard/holders.ts';
import { statusReport } from '../../src/guard/status-report.ts';
import type { KubeClient } from '../../src/kube/client.ts';
import { microTime } from '../../src/kube/objects.ts';
import { FakeClock } from '../support/fake-clock.ts';

const RENEWED = Date.UTC(2026, 0, 1, 12);
const NS = 'op';
const UID = '3f2a0000-0000-4000-8000-000000000001';

const lease: LeaseObject = {
  apiVersion: 'coordination.k8s.io/v1',
  kind: 'Lease',
  metadata: {
    name: `drainguard-${UID}`,
    namespace: NS,
    labels: { 'app.kubernetes.io/managed-by': 'drainguard' },
    ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: 'op-0', uid: UID }],
  },
  spec: { holderIdentity: 'op-0', leaseDurationSeconds: 60, renewTime: microTime(RENEWED) },
};

/** An API with the one Lease, whose list takes `listMs` on the clock. */
function api(clock: FakeClock, listMs = 0): KubeClient {
  return {
    server: 'https://fake',
    list: async () => {
      if (listMs > 0) await clock.advance(listMs);
      return { items: [lease] };
    },
  } as unknown as KubeClient;
}

const query = { targets: [], allObjects: false, namespace: NS };
const verdict = (report: Awaited<ReturnType<typeof statusReport>>) => report.holders.map((h) => [h.live, h.staleBecause]);

test("a 60 s holder Lease: live at its last moment on the report's clock, expired a millisecond later", async () => {
  const clock = new FakeClock(RENEWED + 60_000);
  assert.equal(verdict(await statusReport(api(clock), query, clock)), [[true, undefined]]);
  await clock.advance(1);
  assert.equal(verdict(await statusReport(api(clock), query, clock)), [[false, 'expired']]);
});

test('judged at the moment the report starts, not once the Leases are listed', async () => {
  const clock = new FakeClock(RENEWED + 60_000);
  assert.equal(verdict(await statusReport(api(clock, 5), query, clock)), [[true, undefined]]);
  assert.is(clock.now(), RENEWED + 60_005);
});

test.run();
