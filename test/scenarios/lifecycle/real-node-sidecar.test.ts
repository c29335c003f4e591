// drainguard as a native sidecar on a real node (deploy/components/native-sidecar):
// the release image's `install` and `sidecar` as init containers (the second
// with restartPolicy Always), the operator fixture in the main container with
// `drainguard prestop` as its preStop hook. On deletion the real kubelet runs
// the hook (the operator drains its reconcile through the sidecar), then sends
// the operator its SIGTERM, then the drainguard sidecar (the order of a native
// sidecar's stop: test/support/node/real-node.test.ts).

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { TestCluster } from '../../support/cluster/index.ts';
import {
  DRAINGUARD_IMAGE,
  type RealNode,
  TOOLS_IMAGE,
  fieldRef,
  installedParts,
  nodeWithNamespace,
  outLines,
} from '../../support/node/index.ts';
import { freePort } from '../../support/free-port.ts';
import { fixture } from '../../support/proc.ts';

let c: TestCluster;
let node: RealNode;
let ns: string;

test.before(async () => {
  ({ c, node, ns } = await nodeWithNamespace('real-sc'));
  await c.serviceAccount(ns, 'op');
  await c.grant(ns, 'op', 'op', [{ apiGroups: [''], resources: ['pods'], verbs: ['get'] }]);
});

test('deletion: the preStop hook drains the operator through the sidecar, then the kubelet stops the operator; both exit by themselves', async () => {
  const parts = installedParts(node);
  const port = await freePort();
  await c.api.create(`/api/v1/namespaces/${ns}/pods`, {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'sidecar', namespace: ns },
    spec: {
      nodeName: node.name,
      hostNetwork: true,
      serviceAccountName: 'op',
      terminationGracePeriodSeconds: 30,
      volumes: parts.volumes,
      initContainers: [
        parts.install,
        {
          name: 'drainguard',
          image: DRAINGUARD_IMAGE,
          restartPolicy: 'Always',
          command: ['/drainguard/drainguard', 'sidecar'],
          env: [
            fieldRef('DRAINGUARD_POD_NAME', 'metadata.name'),
            fieldRef('DRAINGUARD_POD_NAMESPACE', 'metadata.namespace'),
            fieldRef('DRAINGUARD_POD_UID', 'metadata.uid'),
            { name: 'DRAINGUARD_LEADER_LEASE', value: 'off' },
            // hostNetwork: a port of its own on the host's loopback.
            { name: 'DRAINGUARD_HTTP_ADDR', value: `127.0.0.1:${port}` },
            { name: 'KUBERNETES_SERVICE_HOST', value: '127.0.0.1' },
            { name: 'KUBERNETES_SERVICE_PORT', value: new URL(c.url).port },
          ],
          startupProbe: { httpGet: { host: '127.0.0.1', path: '/healthz', port }, periodSeconds: 1, failureThreshold: 30 },
          volumeMounts: [{ name: 'drainguard-socket', mountPath: '/run/drainguard' }],
        },
      ],
      containers: [
        {
          name: 'manager',
          image: TOOLS_IMAGE,
          command: ['/busybox', 'sh', '-c', 'exec "$NODE" "$OPERATOR" >>/out/sidecar.out 2>&1'],
          env: [
            { name: 'DRAINGUARD_SOCKET', value: '/run/drainguard/drain.sock' },
            { name: 'NODE', value: process.execPath },
            { name: 'OPERATOR', value: fixture('operator.ts') },
            { name: 'FIXTURE_WORK', value: '3000' },
          ],
          lifecycle: { preStop: { exec: { command: ['/drainguard/drainguard', 'prestop'] } } },
          volumeMounts: parts.operatorMounts,
        },
      ],
    },
  });
  const out = () => outLines(node, 'sidecar.out');
  await c.waitFor(
    () => out().includes('work start 0'),
    60_000,
    "the operator's reconcile started",
    () => node.tail(),
  );
  const ended: Record<string, string> = {}; // container: 'EXITCODE SEEN_AT_MS'
  const stop = c.api.watch(`/api/v1/namespaces/${ns}/pods?fieldSelector=metadata.name%3Dsidecar`, (e) => {
    for (const s of [...(e.object?.status?.containerStatuses ?? []), ...(e.object?.status?.initContainerStatuses ?? [])]) {
      if (s.state?.terminated && !ended[s.name]) ended[s.name] = `${s.state.terminated.exitCode} ${Date.now()}`;
    }
  });
  try {
    await c.api.delete(`/api/v1/namespaces/${ns}/pods/sidecar`);
    await c.waitFor(async () => (await c.api.get(`/api/v1/namespaces/${ns}/pods/sidecar`)) === undefined, 60_000, 'the pod gone');
  } finally {
    stop();
  }
  const lines = out();
  const [drain, done, term] = [
    lines.findIndex((l) => l.startsWith('drain remainingMs=')),
    lines.indexOf('work done 0'),
    lines.indexOf('signal SIGTERM'),
  ];
  assert.ok(
    drain !== -1 && drain < done && done < term,
    `drain (the preStop hook), the reconcile done, then the kubelet's SIGTERM:\n${lines.join('\n')}`,
  );
  assert.not.ok(
    lines.some((l) => l.startsWith('work interrupted')),
    'no reconcile interrupted',
  );
  const [manager, sidecar] = [ended.manager?.split(' '), ended.drainguard?.split(' ')];
  assert.ok(manager && sidecar, `both containers' ends seen: ${JSON.stringify(ended)}`);
  assert.is(manager![0], '0', 'the operator exited by itself');
  assert.is(sidecar![0], '0', 'drainguard exited by itself');
  console.log(`native sidecar: ${JSON.stringify(ended)}`);
});

test.run();
