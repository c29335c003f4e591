// checkGraces on small pods: the graces a stop can have against what drainguard
// needs in them. A correct setup (a budget within the Pod's grace, a probe
// without a grace of its own or with room to drain, drainguard's own preStop)
// gives no finding; each mismatch gives its code and a fix that names the value.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { drainBudget } from '../../src/check/budget.ts';
import { checkGraces, hookSeconds } from '../../src/check/grace.ts';
import { type Container, type PodSpec, placementOf } from '../../src/check/pod.ts';

/** A wrap-mode pod (or a native sidecar beside the operator) with `extra` on drainguard's container (the operator's in wrap mode). */
function pod(mode: 'wrap' | 'native-sidecar', extra: Record<string, unknown> = {}, graceS = 30): PodSpec {
  const env = (extra.env as Container['env']) ?? [];
  if (mode === 'wrap')
    return {
      terminationGracePeriodSeconds: graceS,
      containers: [{ name: 'manager', command: ['/drainguard/drainguard', 'run', '--', '/manager'], ...extra, env }],
    };
  return {
    terminationGracePeriodSeconds: graceS,
    initContainers: [{ name: 'drainguard', command: ['/drainguard/drainguard', 'sidecar'], restartPolicy: 'Always', env }],
    containers: [
      {
        name: 'manager',
        command: ['/manager'],
        lifecycle: { preStop: { exec: { command: ['/drainguard/drainguard', 'prestop'] } } },
        ...extra,
      } as Container,
    ],
  };
}

const findings = (p: PodSpec) => {
  const placement = placementOf(p)!;
  return checkGraces(placement, drainBudget(p, placement)).map((f) => ({
    code: f.code,
    severity: f.severity,
    fix: f.fix,
    message: f.message,
  }));
};
const codes = (p: PodSpec) => findings(p).map((f) => `${f.code} ${f.severity}`);
const probe = (seconds?: number) => ({ httpGet: { path: '/healthz', port: 8081 }, terminationGracePeriodSeconds: seconds });
const nodeShutdown = (value: string) => ({ env: [{ name: 'DRAINGUARD_NODE_SHUTDOWN_GRACE', value }] });

test('a correct setup gives no finding: a budget within the grace, probes with room or without a grace, no hook of its own', () => {
  assert.equal(codes(pod('wrap')), []);
  assert.equal(codes(pod('wrap', { ...nodeShutdown('8s'), livenessProbe: probe(10), startupProbe: probe() })), []);
  assert.equal(codes(pod('native-sidecar', nodeShutdown('30s'))), []);
  assert.equal(codes(pod('wrap', { lifecycle: { preStop: { exec: { command: ['/drainguard/drainguard', 'prestop'] } } } })), []);
  assert.equal(codes(pod('native-sidecar', { livenessProbe: probe(10) })), [], "the operator's probe, with room");
  // A probe grace at least the Pod's changes nothing: the kubelet gives the shorter of the two... only the probe's, so the Pod's bounds it.
  assert.equal(codes(pod('wrap', { livenessProbe: probe(5) }, 5)), []);
});

test("node-shutdown-grace-too-long, node-pressure-grace-too-long: a budget longer than the Pod's grace; -invalid when it does not parse", () => {
  const [f] = findings(pod('wrap', nodeShutdown('45s')));
  assert.equal([f?.code, f?.severity], ['node-shutdown-grace-too-long', 'warning']);
  assert.match(f!.message, "longer than the pod's terminationGracePeriodSeconds 30");
  assert.match(f!.fix, 'at most 30s');
  assert.equal(codes(pod('wrap', nodeShutdown('30s'))), [], 'equal is fine');
  assert.equal(codes(pod('wrap', nodeShutdown('soon'))), ['node-shutdown-grace-invalid error']);
  const pressure = (value: string) => ({ env: [{ name: 'DRAINGUARD_NODE_PRESSURE_GRACE', value }] });
  const [p] = findings(pod('native-sidecar', pressure('1m')));
  assert.equal([p?.code, p?.severity], ['node-pressure-grace-too-long', 'warning']);
  assert.match(
    p!.fix,
    'set DRAINGUARD_NODE_PRESSURE_GRACE in container drainguard to what the kubelet gives (its evictionMaxPodGracePeriod)',
  );
  assert.equal(codes(pod('wrap', pressure('8s'))), []);
  assert.equal(codes(pod('wrap', pressure('8 s'))), ['node-pressure-grace-invalid error']);
});

test('probe-grace-no-drain: a liveness or startup probe whose own grace leaves no time to drain, in either container', () => {
  const [f] = findings(pod('wrap', { livenessProbe: probe(3) }));
  assert.equal([f?.code, f?.severity], ['probe-grace-no-drain', 'warning']);
  // The default stop timeout (5 s), the margin (2 s) and a second of drain: 8 s.
  assert.match(f!.fix, "raise the livenessProbe's terminationGracePeriodSeconds of container manager to at least 8");
  assert.equal(codes(pod('wrap', { startupProbe: probe(7) })), ['probe-grace-no-drain warning']);
  assert.equal(codes(pod('wrap', { livenessProbe: probe(4), env: [{ name: 'DRAINGUARD_STOP_TIMEOUT', value: '500ms' }] })), []);
  const [s] = findings(pod('native-sidecar', { livenessProbe: probe(2) }));
  assert.match(s!.message, 'the livenessProbe of container manager sets terminationGracePeriodSeconds 2');
});

test('prestop-eats-grace: a hook of its own in the wrap container; an error when what it leaves is no drain', () => {
  const sleep = (seconds: number) => ({ lifecycle: { preStop: { sleep: { seconds } } } });
  const [e] = findings(pod('wrap', sleep(25)));
  assert.equal([e?.code, e?.severity], ['prestop-eats-grace', 'error']);
  assert.match(e!.message, 'it leaves 5 s, and drainguard needs 8 s');
  assert.match(e!.fix, 'raise terminationGracePeriodSeconds to at least 33');
  const [w] = findings(pod('wrap', sleep(5)));
  assert.equal([w?.code, w?.severity], ['prestop-eats-grace', 'warning']);
  assert.match(w!.fix, 'set DRAINGUARD_GRACE_PERIOD in container manager to the grace less the hook');
  assert.match(w!.fix, '(25s)');
  // Told: drainguard goes by what the hook leaves.
  assert.equal(codes(pod('wrap', { ...sleep(5), env: [{ name: 'DRAINGUARD_GRACE_PERIOD', value: '25s' }] })), []);
  assert.equal(codes(pod('wrap', { ...sleep(5), env: [{ name: 'DRAINGUARD_GRACE_PERIOD', value: '27s' }] })), [
    'prestop-eats-grace warning',
  ]);
  const http = { lifecycle: { preStop: { httpGet: { path: '/quiesce' } } } };
  assert.equal(codes(pod('wrap', http)), ['prestop-eats-grace warning'], 'a hook of unknown length');
  assert.equal(codes(pod('wrap', { ...http, env: [{ name: 'DRAINGUARD_GRACE_PERIOD', value: '20s' }] })), []);
});

test('hookSeconds: a sleep action, an exec of sleep N, through a shell; else unknown', () => {
  assert.is(hookSeconds({ sleep: { seconds: 5 } }), 5);
  assert.is(hookSeconds({ exec: { command: ['sleep', '7'] } }), 7);
  assert.is(hookSeconds({ exec: { command: ['/bin/sh', '-c', 'sleep 9'] } }), 9);
  assert.is(hookSeconds({ exec: { command: ['/bin/sh', '-c', 'sleep 9; kill 1'] } }), undefined);
  assert.is(hookSeconds({ httpGet: { path: '/x' } }), undefined);
});

test.run();
