// A liveness probe's kill on the real kubelet: the probe's own
// terminationGracePeriodSeconds (10 s) is shorter than the Pod's (30 s), and the
// kubelet kills the container with the probe's, with no deletion: nothing in the
// API says when. Two wrap-mode pods, each with a 20 s reconcile in flight when
// the test makes the probe fail (and heals it once the container is killed, before
// the restarted one is probed):
// - drainguard reads its container's livenessProbe from the Pod at the signal,
//   goes by 10 s (the shortest grace a stop without a deletion can have), says
//   so as a bound in a line and a StopCause Event, stops the operator and exits
//   before the kubelet's SIGKILL;
// - the control, with no `get` on pods (drainguard as before the probe's grace
//   was read: the spec's 30 s): still draining when the kubelet SIGKILLs it at
//   10 s (exit 137); its operator never got its stop signal.
// restartPolicy Always, as a Deployment's pods have it: with Never the kubelet
// kills the whole pod with the Pod's grace, not the probe's (measured: the
// control drained for 18.9 s and exited 0).

import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { TestCluster } from '../../support/cluster/index.ts';
import { type RealNode, kubeletKills, nodeWithNamespace, wrapLogs, wrapPod, wrapStderr, wrapStdout } from '../../support/node/index.ts';
import { fixture } from '../../support/proc.ts';

/** The liveness probe's own grace; the Pod's is 30 s. */
const PROBE_GRACE_S = 10;

let c: TestCluster;
let node: RealNode;
let ns: string;

test.before(async () => {
  ({ c, node, ns } = await nodeWithNamespace('liveness'));
  await c.serviceAccount(ns, 'op');
  await c.grant(ns, 'op', 'op', [
    { apiGroups: [''], resources: ['pods'], verbs: ['get'] },
    { apiGroups: [''], resources: ['events'], verbs: ['create'] },
  ]);
  await c.serviceAccount(ns, 'blind');
});

const timeline = (pod: string) => `--- ${pod}\n${wrapStdout(node, pod).join('\n')}\n${wrapStderr(node, pod).join('\n')}`;
const podPath = (name: string) => `/api/v1/namespaces/${ns}/pods/${name}`;
const manager = (pod: any) => pod?.status?.containerStatuses?.find((x: { name: string }) => x.name === 'manager');
/** The file whose presence fails the pod's liveness probe (in the host's out directory, /out in the pod). */
const failFile = (pod: string) => `${pod}.unhealthy`;

/**
 * The lines of the container's first run: the restarted one appends to the same file, and
 * begins with the line the first began with.
 */
function firstRun<T>(lines: T[]): T[] {
  const key = (l: T) => (typeof l === 'string' ? l : (l as { msg: string }).msg);
  const again = lines.findIndex((l, i) => i > 0 && key(l) === key(lines[0]!));
  return again < 0 ? lines : lines.slice(0, again);
}

/** A wrap-mode pod whose liveness probe fails once failFile(name) exists, with its own terminationGracePeriodSeconds. */
function probedPod(name: string, serviceAccountName: string): object {
  const pod = wrapPod(node, {
    name,
    namespace: ns,
    serviceAccountName,
    apiUrl: c.url,
    operator: fixture('operator.ts'),
    terminationGracePeriodSeconds: 30,
    env: { FIXTURE_WORK: '20000' },
  }) as { spec: { containers: Record<string, unknown>[] } };
  pod.spec.containers[0]!.livenessProbe = {
    exec: { command: ['/busybox', 'sh', '-c', `test ! -e /out/${failFile(name)}`] },
    // The restarted container's first probe comes after the test has healed it.
    initialDelaySeconds: 3,
    periodSeconds: 1,
    failureThreshold: 1,
    timeoutSeconds: 5,
    terminationGracePeriodSeconds: PROBE_GRACE_S,
  };
  return pod;
}

test("a liveness kill with the probe's 10 s grace on a 30 s spec: drainguard goes by the probe's grace and exits before the kubelet's SIGKILL; without the Pod read (the control) it is killed mid-drain", async () => {
  const pods = { fitted: 'op', control: 'blind' } as const;
  for (const [name, sa] of Object.entries(pods)) await c.api.create(`/api/v1/namespaces/${ns}/pods`, probedPod(name, sa));
  const all = () => Object.keys(pods).map(timeline).join('\n');
  await c.waitFor(
    () => Object.keys(pods).every((p) => wrapStdout(node, p).includes('work start 0')),
    90_000,
    'both reconciles started',
    () => `${node.tail()}\n${all()}`,
  );
  for (const p of Object.keys(pods)) writeFileSync(join(node.outDir, failFile(p)), '');
  const killed: Record<string, any> = {};
  await c.waitFor(
    async () => {
      for (const p of Object.keys(pods)) {
        if (killed[p]) continue;
        const last = manager(await c.api.get(podPath(p)))?.lastState?.terminated;
        if (last) {
          killed[p] = last;
          rmSync(join(node.outDir, failFile(p)));
        }
      }
      return Object.keys(killed).length === Object.keys(pods).length;
    },
    60_000,
    'both containers killed by the liveness probe (and restarted)',
    () => `${node.tail()}\n${all()}`,
  );
  const fitted = await c.api.get(podPath('fitted'));
  assert.is(fitted.metadata.deletionTimestamp, undefined, 'no deletion: the kubelet kills the container itself');
  const events = await c.api.get(`/api/v1/namespaces/${ns}/events?fieldSelector=involvedObject.name%3Dfitted`);
  const unhealthy = events.items.find((e: { reason: string }) => e.reason === 'Unhealthy');
  assert.match(unhealthy?.message ?? '', /Liveness probe failed/, "the kubelet's own Event: the probe's kill");

  // The fitted one: the probe's grace read at the signal, the drain fitted to it, exited by itself before the SIGKILL.
  const f = firstRun(wrapLogs(node, 'fitted'));
  const bound = f.find((l) => l.cause === 'no-deletion');
  assert.equal(
    [bound?.graceMs, bound?.probe],
    [PROBE_GRACE_S * 1000, 'livenessProbe'],
    `the probe's grace read from the Pod:\n${timeline('fitted')}`,
  );
  assert.match(String(bound?.msg), "going by the livenessProbe's terminationGracePeriodSeconds (container manager)");
  const exitCode = killed.fitted.exitCode;
  assert.is(exitCode, 0, `drainguard exited by itself, not SIGKILLed by the kubelet:\n${timeline('fitted')}`);
  assert.ok(firstRun(wrapStdout(node, 'fitted')).includes('signal SIGTERM'), 'the operator got its stop signal from drainguard');
  // The kubelet's SIGKILL: its stop began at `at` (its log), with the probe's grace, not the Pod's.
  const [kill] = kubeletKills(node, ns, 'fitted', 'manager');
  assert.is(kill?.gracePeriodS, PROBE_GRACE_S, "the kubelet stopped the container with the probe's grace");
  const last = Date.parse(String(f.at(-1)?.time));
  const marginMs = kill!.at + PROBE_GRACE_S * 1000 - last;
  assert.ok(marginMs > 0, `drainguard's last line before the kubelet's SIGKILL: ${marginMs} ms`);
  const stopCause = events.items.find((e: { reason: string }) => e.reason === 'StopCause');
  assert.match(
    stopCause?.message ?? '',
    /termination without a deletion.*10\.0s after the termination.*livenessProbe.*\(the best bound drainguard can prove\)$/,
  );
  assert.is(stopCause?.type, 'Warning', 'a bound, not what the kubelet said');

  // The control: it went by the spec's 30 s; the kubelet killed it at the probe's 10 s.
  const k = firstRun(wrapLogs(node, 'control'));
  assert.is(killed.control.exitCode, 137, `the control SIGKILLed by the kubelet:\n${timeline('control')}`);
  assert.not.ok(firstRun(wrapStdout(node, 'control')).includes('signal SIGTERM'), 'the operator never got its stop signal');
  assert.not.ok(
    k.some((l) => l.msg === 'drain ended'),
    'killed while draining',
  );
  console.log(
    `liveness kill, probe grace ${PROBE_GRACE_S} s on a 30 s spec: fitted exit ${exitCode}, last line ${marginMs} ms before the ` +
      `kubelet's SIGKILL (its stop + ${PROBE_GRACE_S * 1000} ms), the bound read ${Date.parse(String(bound?.time)) - kill!.at} ms ` +
      `after the kubelet's stop; control exit 137 (the kubelet's grace ${kubeletKills(node, ns, 'control', 'manager')[0]?.gracePeriodS} s)`,
  );
});

test.run();
