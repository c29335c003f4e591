// keda-idle.test.ts with drainguard.idleMetrics set (following KEDA's metrics
// port): the same rolling update and node drain under the same load. drainguard
// scrapes controller_runtime_active_workers and passes the SIGTERM on only once
// it sums to 0: no reconcile cut short.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { kedaNode } from '../support/shipped/keda-test.ts';
import type { KedaRun } from '../support/shipped/keda-uninstall.ts';
import { assertHandedOver, idleKeda, story } from '../support/shipped/keda-idle.ts';
import { removeKedaCharts } from '../support/shipped/keda.ts';

let run: KedaRun;

test.before(async () => {
  run = await kedaNode();
});

test.after(() => removeKedaCharts());

test('with idleMetrics: each stop waits for the workers, none cut short', async () => {
  const r = await idleKeda(run, true);
  assertHandedOver(r);
  for (const s of r.stops) {
    assert.is(s.drainEnded!.outcome, 'idle', `${s.what}: the drain ended on an idle scrape\n${story(r)}`);
    assert.is(s.drainEnded!.failedScrapes, 0, story(r));
    // The first scrape, right after the SIGTERM, saw workers busy: reconciles were in flight when it came.
    assert.ok((s.idle!.scrapes as number) > 1, `${s.what}: a reconcile in flight at the stop\n${story(r)}`);
  }
  assert.equal(r.interrupted, [], `no reconcile cut short (context canceled) in KEDA's log\n${story(r)}`);
});

test.run();
