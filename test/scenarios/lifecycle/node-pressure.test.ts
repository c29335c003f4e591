// Soft node-pressure eviction on the real kubelet: evictionSoft memory.available
// 1000Gi (no node has that much free: the threshold holds from the kubelet's
// start), evictionSoftGracePeriod 90s (so that the pods run before the kubelet
// starts to evict, one pod per 10 s), evictionMaxPodGracePeriod 8: a pod whose
// spec says 30 s gets 8 s, with no deletion, which the cluster publishes nowhere.
// Two wrap-mode pods (Burstable: a node under memory pressure admits no
// BestEffort pod), each with a reconcile in flight that outlasts the wait:
// - DRAINGUARD_NODE_PRESSURE_GRACE=8s: drainguard goes by 8 s, the bound for a
//   stop that says nothing, stops the operator and exits before the SIGKILL;
// - the control, without it (the spec's 30 s): the kubelet SIGKILLs it mid-drain
//   at 8 s (exit 137), its operator never got its stop signal.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { TestCluster } from '../../support/cluster/index.ts';
import { useCluster } from '../../support/cluster/index.ts';
import { type RealNode, kubeletKills, startNode, wrapLogs, wrapPod, wrapStderr, wrapStdout } from '../../support/node/index.ts';
import { fixture } from '../../support/proc.ts';

/** evictionMaxPodGracePeriod; the Pod's spec says 30 s. */
const MAX_POD_GRACE_S = 8;
const SOFT_WAIT = '90s';

let c: TestCluster;
let node: RealNode;
let ns: string;

test.before(async () => {
  c = await useCluster();
  node = await startNode(c, {
    eviction: {
      soft: { 'memory.available': '1000Gi' },
      softGracePeriod: { 'memory.available': SOFT_WAIT },
      maxPodGracePeriodSeconds: MAX_POD_GRACE_S,
    },
  });
  ns = (await c.namespace('pressure')).name;
  await c.serviceAccount(ns, 'op');
  await c.grant(ns, 'op', 'op', [
    { apiGroups: [''], resources: ['pods'], verbs: ['get'] },
    { apiGroups: [''], resources: ['events'], verbs: ['create'] },
  ]);
});

const timeline = (pod: string) => `--- ${pod}\n${wrapStdout(node, pod).join('\n')}\n${wrapStderr(node, pod).join('\n')}`;
const podPath = (name: string) => `/api/v1/namespaces/${ns}/pods/${name}`;
const manager = (pod: any) => pod?.status?.containerStatuses?.find((x: { name: string }) => x.name === 'manager');

test("a soft node-pressure eviction (evictionMaxPodGracePeriod 8 on a 30 s spec): with DRAINGUARD_NODE_PRESSURE_GRACE drainguard goes by 8 s and exits before the kubelet's SIGKILL; without it (the control) it is killed mid-drain", async () => {
  const pods = { fitted: { DRAINGUARD_NODE_PRESSURE_GRACE: '8s' }, control: {} } as const;
  for (const [name, env] of Object.entries(pods)) {
    const pod = wrapPod(node, {
      name,
      namespace: ns,
      serviceAccountName: 'op',
      apiUrl: c.url,
      operator: fixture('operator.ts'),
      terminationGracePeriodSeconds: 30,
      // Longer than the kubelet's wait before it evicts: in flight whenever the eviction comes.
      env: { FIXTURE_WORK: '180000', ...env },
    }) as { spec: { containers: Record<string, unknown>[] } };
    pod.spec.containers[0]!.resources = { requests: { memory: '1Mi' } };
    await c.api.create(`/api/v1/namespaces/${ns}/pods`, pod);
  }
  const all = () => Object.keys(pods).map(timeline).join('\n');
  const statuses: Record<string, unknown> = {};
  await c.waitFor(
    () => Object.keys(pods).every((p) => wrapStdout(node, p).includes('work start 0')),
    80_000,
    `both reconciles started (before the kubelet's ${SOFT_WAIT} are over)`,
    () => `${node.tail()}\n${all()}`,
  );
  await c.waitFor(
    async () => {
      // A terminal phase and the container terminated, which the kubelet posts in separate updates: Failed (reason
      // Evicted) when it got there first, else Succeeded for a container that exited 0 (measured: both happen).
      for (const p of Object.keys(pods)) {
        const pod = await c.api.get(podPath(p));
        statuses[p] = pod?.status;
        if (!['Failed', 'Succeeded'].includes(pod?.status?.phase) || !manager(pod)?.state?.terminated) return false;
      }
      return true;
    },
    120_000,
    'both pods evicted (a terminal phase)',
    () => `${node.tail()}\n${all()}\n${JSON.stringify(statuses)}`,
  );
  const fitted = await c.api.get(podPath('fitted'));
  const condition = fitted.status.conditions.find((x: { type: string }) => x.type === 'DisruptionTarget');
  assert.equal(
    [condition?.reason, fitted.metadata.deletionTimestamp],
    ['TerminationByKubelet', undefined],
    'the kubelet evicts it, no deletion',
  );
  assert.match(condition.message, /The node was low on resource: memory/);

  const f = wrapLogs(node, 'fitted');
  const bound = f.find((l) => l.cause !== undefined);
  const [kill] = kubeletKills(node, ns, 'fitted', 'manager');
  assert.is(kill?.gracePeriodS, MAX_POD_GRACE_S, "the kubelet's grace: evictionMaxPodGracePeriod");
  assert.equal(
    [bound?.cause, bound?.graceMs],
    ['no-deletion', MAX_POD_GRACE_S * 1000],
    `the first reading: nothing said yet, the pressure budget as the bound:\n${timeline('fitted')}`,
  );
  assert.match(String(bound?.msg), 'going by DRAINGUARD_NODE_PRESSURE_GRACE');
  // The exit as containerd saw it: the Pod's status may say 137 ContainerStatusUnknown for a container
  // that exited 0, when the kubelet makes the evicted pod Failed before it has the container's exit.
  const killAtMs = kill!.at + MAX_POD_GRACE_S * 1000;
  const stoppedMs = kill!.stoppedAt! - kill!.at;
  assert.ok(kill!.stoppedAt! < killAtMs - 1000, `exited by itself ${stoppedMs} ms after the kubelet's stop:\n${timeline('fitted')}`);
  const status = manager(fitted).state.terminated;
  assert.ok(wrapStdout(node, 'fitted').includes('signal SIGTERM'), 'the operator got its stop signal from drainguard');
  const marginMs = killAtMs - Date.parse(String(f.at(-1)?.time));
  assert.ok(marginMs > 0, `drainguard's last line before the kubelet's SIGKILL: ${marginMs} ms`);
  const seen = f.filter((l) => l.cause !== undefined).map((l) => l.cause);

  const [controlKill] = kubeletKills(node, ns, 'control', 'manager');
  const controlStoppedMs = controlKill!.stoppedAt! - controlKill!.at;
  assert.ok(controlStoppedMs >= MAX_POD_GRACE_S * 1000, `the control stopped by the SIGKILL, ${controlStoppedMs} ms after the stop`);
  assert.not.ok(wrapStdout(node, 'control').includes('signal SIGTERM'), 'the operator never got its stop signal');
  assert.not.ok(
    wrapLogs(node, 'control').some((l) => l.msg === 'drain ended'),
    'killed while draining',
  );
  console.log(
    `soft node-pressure eviction, evictionMaxPodGracePeriod ${MAX_POD_GRACE_S} on a 30 s spec: fitted stopped ${stoppedMs} ms after ` +
      `the kubelet's stop (the Pod says ${fitted.status.phase}, exit ${status.exitCode} ${status.reason}), ` +
      `last line ${marginMs} ms before the kubelet's SIGKILL (its stop + ${MAX_POD_GRACE_S} s); causes read ${JSON.stringify(seen)}; ` +
      `control stopped ${controlStoppedMs} ms after its stop (SIGKILL at ${MAX_POD_GRACE_S} s)`,
  );
});

test.run();
