// A graceful node shutdown on the real kubelet: its shutdown manager on a
// private system bus with our logind (test/support/logind), shutdownGracePeriod
// 12 s and shutdownGracePeriodCriticalPods 4 s, so that a pod whose spec says
// 30 s gets 8 s, which the cluster publishes nowhere. Two wrap-mode pods on the
// node, each with a 20 s reconcile in flight, stopped by the one shutdown:
// - DRAINGUARD_NODE_SHUTDOWN_GRACE=8s: drainguard reads the Pod's DisruptionTarget
//   the Node's Ready condition ("node is shutting down": the Pod's DisruptionTarget comes
//   only once its containers have terminated), goes by 8 s, says so in a
//   line and a StopCause Event, stops the operator and exits before the SIGKILL;
// - the control, without it (drainguard as before: the spec's 30 s): the drain
//   still runs when the kubelet SIGKILLs it at 8 s (exit 137), nothing released.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { TestCluster } from '../../support/cluster/index.ts';
import { type RealNode, startNode, wrapLogs, wrapPod, wrapStderr, wrapStdout } from '../../support/node/index.ts';
import { useCluster } from '../../support/cluster/index.ts';
import { fixture } from '../../support/proc.ts';

const SHUTDOWN = { gracePeriod: '12s', criticalPods: '4s' };
/** What the kubelet gives a non-critical pod: shutdownGracePeriod less shutdownGracePeriodCriticalPods. */
const KUBELET_GRACE_MS = 8000;

let c: TestCluster;
let node: RealNode;
let ns: string;

test.before(async () => {
  c = await useCluster();
  node = await startNode(c, { shutdown: SHUTDOWN });
  ns = (await c.namespace('nodeshut')).name;
  await c.serviceAccount(ns, 'op');
  await c.grant(ns, 'op', 'op', [
    { apiGroups: [''], resources: ['pods'], verbs: ['get'] },
    { apiGroups: [''], resources: ['events'], verbs: ['create'] },
  ]);
  // The Node tells a shutdown at once (the Pod's DisruptionTarget comes only after the kill): `get` on nodes.
  const name = `${ns}-nodes`;
  await c.api.create('/apis/rbac.authorization.k8s.io/v1/clusterroles', {
    metadata: { name },
    rules: [{ apiGroups: [''], resources: ['nodes'], verbs: ['get'] }],
  });
  await c.api.create('/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', {
    metadata: { name },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
    subjects: [{ kind: 'ServiceAccount', name: 'op', namespace: ns }],
  });
});

const logs = (pod: string) => wrapLogs(node, pod);
const timeline = (pod: string) => `--- ${pod}\n${wrapStdout(node, pod).join('\n')}\n${wrapStderr(node, pod).join('\n')}`;
const podPath = (name: string) => `/api/v1/namespaces/${ns}/pods/${name}`;
const manager = (pod: any) => pod?.status?.containerStatuses?.find((x: { name: string }) => x.name === 'manager');

test("a graceful node shutdown: with DRAINGUARD_NODE_SHUTDOWN_GRACE drainguard goes by the kubelet's 8 s and exits before its SIGKILL; without it (the control) it is killed mid-drain", async () => {
  const pods = { fitted: { DRAINGUARD_NODE_SHUTDOWN_GRACE: '8s' }, control: {} } as const;
  for (const [name, env] of Object.entries(pods))
    await c.api.create(
      `/api/v1/namespaces/${ns}/pods`,
      wrapPod(node, {
        name,
        namespace: ns,
        serviceAccountName: 'op',
        apiUrl: c.url,
        operator: fixture('operator.ts'),
        terminationGracePeriodSeconds: 30,
        env: { FIXTURE_WORK: '20000', ...env },
      }),
    );
  const all = () => Object.keys(pods).map(timeline).join('\n');
  await c.waitFor(
    () => Object.keys(pods).every((p) => wrapStdout(node, p).includes('work start 0')),
    90_000,
    'both reconciles started',
    () => `${node.tail()}\n${all()}`,
  );
  await node.shutdown();
  // Both containers terminated, as the kubelet reports them.
  await c.waitFor(
    async () => {
      for (const p of Object.keys(pods)) if (!manager(await c.api.get(podPath(p)))?.state?.terminated) return false;
      return true;
    },
    60_000,
    'both containers terminated by the node shutdown',
    () => `${node.tail()}\n${all()}`,
  );
  const fitted = await c.api.get(podPath('fitted'));
  const control = await c.api.get(podPath('control'));
  const condition = fitted.status.conditions.find((x: { type: string }) => x.type === 'DisruptionTarget');
  assert.equal(
    [condition?.reason, fitted.metadata.deletionTimestamp],
    ['TerminationByKubelet', undefined],
    'the kubelet stops it, no deletion',
  );

  // The fitted one: the cause read, the 8 s gone by, exited by itself before the kubelet's SIGKILL.
  const f = logs('fitted');
  const signalled = Date.parse(String(f.find((l) => l.msg === 'termination requested')?.time));
  const cause = f.find((l) => l.cause === 'node-shutdown');
  assert.is(cause?.msg, 'the node is shutting down: going by DRAINGUARD_NODE_SHUTDOWN_GRACE', timeline('fitted'));
  assert.is(cause?.graceMs, KUBELET_GRACE_MS);
  const exitCode = manager(fitted).state.terminated.exitCode;
  assert.is.not(exitCode, 137, `drainguard exited by itself, not SIGKILLed by the kubelet:\n${timeline('fitted')}`);
  assert.ok(wrapStdout(node, 'fitted').includes('signal SIGTERM'), 'the operator got its stop signal from drainguard');
  const last = Date.parse(String(f.at(-1)?.time));
  const marginMs = signalled + KUBELET_GRACE_MS - last;
  assert.ok(marginMs > 0, `drainguard's last line before the kubelet's SIGKILL: ${marginMs} ms`);
  const events = await c.api.get(`/api/v1/namespaces/${ns}/events?fieldSelector=involvedObject.name%3Dfitted`);
  const stopCause = events.items.find((e: { reason: string }) => e.reason === 'StopCause');
  assert.match(stopCause?.message ?? '', /graceful node shutdown \(the Node: node is shutting down\).*8\.0s after the termination/);

  // The control: it knew the node was going down but not by when; the kubelet killed it mid-drain.
  const k = logs('control');
  assert.is(manager(control).state.terminated.exitCode, 137, `the control SIGKILLed by the kubelet:\n${timeline('control')}`);
  assert.not.ok(wrapStdout(node, 'control').includes('signal SIGTERM'), 'the operator never got its stop signal');
  assert.not.ok(
    k.some((l) => l.msg === 'drain ended'),
    'killed while draining',
  );
  const firstRead = f.find((l) => l.cause !== undefined);
  console.log(
    `node shutdown 12s/4s on a 30 s spec: fitted exit ${exitCode}, last line ${marginMs} ms before the kubelet's SIGKILL ` +
      `(signal + ${KUBELET_GRACE_MS} ms); first reading ${JSON.stringify(firstRead?.cause)} ` +
      `${Date.parse(String(firstRead?.time)) - signalled} ms after the signal; control exit 137`,
  );
});

test.run();
