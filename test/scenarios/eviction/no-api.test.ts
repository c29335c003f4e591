// The EvictionRequest responder where the API is not served: the run's shared
// control plane (1.37, EvictionRequestAPI off, lifecycle.k8s.io/v1alpha1 not
// served), deploy/examples/wrap through the kubelet stand-in, its pod naming
// drainguard.dev/drain (which the API server drops without the gate).
// drainguard says so in one debug line and nothing else of evictions: no warning;
// the stop is the usual one, the drain at the SIGTERM.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { type KubeletCluster, kubeletCluster } from '../../support/kubelet/cluster.ts';
import { running } from './support.ts';

let c: KubeletCluster;
test.before(async () => {
  c = await kubeletCluster();
});

test('no lifecycle.k8s.io/v1alpha1: one debug line, no warning, the drain at the SIGTERM', async () => {
  const r = await running(c, true, false);
  try {
    const lines = r.dg.logs().filter((l) => /evict/i.test(`${l.msg} ${JSON.stringify(l)}`));
    assert.equal(
      lines.map((l) => [l.level, l.msg, l.reason]),
      [
        [
          'debug',
          'not responding to eviction requests',
          'the API server serves no lifecycle.k8s.io/v1alpha1 (the EvictionRequestAPI gate is off)',
        ],
      ],
      r.timeline(),
    );
    c.kubectl(['delete', 'pod', '-n', r.ns, r.pod, '--wait=false']);
    const started = await r.dg.log('drain started', 30_000);
    assert.is(started.source, 'signal');
    await r.kubelet.event((e) => e.pod === r.pod && e.what === 'deleted 200', 60_000, 'the pod stopped and deleted');
    // Nothing more of evictions after the stop either (the example's own warning on its ServiceAccount is not this file's).
    assert.equal(
      r.dg.logs().filter((l) => /evict/i.test(JSON.stringify(l)) && l.level !== 'debug'),
      [],
      r.timeline(),
    );
  } finally {
    await r.close();
  }
});

test.run();
