// The leader release (src/leader/), end to end: the built executable in wrap
// mode in front of an operator that elects a leader as client-go does with
// ReleaseOnCancel off (test/fixtures/leader-operator.ts), on the control plane
// of the run (test/support/cluster). Once the operator has exited, the Lease it
// holds is emptied as client-go's release does it; a Lease of another pod is
// never written; a refusal is one log line and holds up nothing.
import { randomBytes } from 'node:crypto';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { type Install, withCluster } from '../guard/cluster.ts';
import { type TestCluster, resourcePath, useCluster } from '../support/cluster/index.ts';
import { NODE, Proc, drainguard, fixture } from '../support/proc.ts';

const LEADER = fixture('leader-operator.ts');
const LEASES = 'coordination.k8s.io/v1';
const micro = (ms: number) => new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');

interface Setup {
  readonly cluster: TestCluster;
  readonly ns: string;
  /** A Pod of the namespace, bound to the Node; its name is the operator's hostname. */
  pod(name: string): Promise<{ name: string; uid: string }>;
  /** A token of `sa`, bound to `pod` when given. */
  token(sa: string, pod?: { name: string; uid: string }): Promise<string>;
  lease(name: string): Promise<any>;
}

/** A namespace with the ServiceAccounts `op` (rights on leases: `verbs`) and `elector` (kubebuilder's leader-election Role). */
async function setup(verbs: string[]): Promise<Setup> {
  const cluster = await useCluster();
  const { name: ns } = await cluster.namespace('leader');
  const node = await cluster.node();
  const role = async (sa: string, v: string[]) => {
    await cluster.serviceAccount(ns, sa);
    await cluster.grant(ns, sa, sa, [{ apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: v }]);
  };
  await role('op', verbs);
  await role('elector', ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete']);
  return {
    cluster,
    ns,
    async pod(name) {
      const made = await cluster.create({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name, namespace: ns },
        spec: { nodeName: node, serviceAccountName: 'op', containers: [{ name: 'manager', image: 'example.com/operator' }] },
      });
      return { name, uid: made.metadata.uid as string };
    },
    token: (sa, pod) => cluster.token(ns, sa, pod && { pod }),
    lease: (name) => cluster.api.get(resourcePath(LEASES, 'leases', ns, name)),
  };
}

/** The fixture's environment: it elects through `server` with `token`, as `hostname`. */
function electorEnv(cluster: TestCluster, ns: string, token: string, hostname: string, lease: string): NodeJS.ProcessEnv {
  return {
    LEADER_API: cluster.url,
    LEADER_TOKEN: token,
    LEADER_CA: cluster.caFile,
    LEADER_NAMESPACE: ns,
    LEADER_LEASE: lease,
    LEADER_HOSTNAME: hostname,
    LEADER_RETRY_MS: '200',
    LEADER_DURATION_MS: '15000',
  };
}

/** A Lease someone else holds, renewed just now. */
async function othersLease(c: Setup, name: string, holder: string): Promise<string> {
  const now = micro(Date.now());
  const made = await c.cluster.create({
    apiVersion: LEASES,
    kind: 'Lease',
    metadata: { name, namespace: c.ns },
    spec: { holderIdentity: holder, leaseDurationSeconds: 15, acquireTime: now, renewTime: now, leaseTransitions: 3 },
  });
  return made.metadata.resourceVersion as string;
}

async function stopped(p: Proc): Promise<void> {
  p.kill('SIGTERM');
  const exit = await p.exit(20_000);
  assert.equal(exit.code, 0, p.stderr.join('\n'));
}

test("the operator's Lease is emptied once it has exited, as client-go's release does; Leases of other pods are not written", async () => {
  const c = await setup(['get', 'list', 'update']);
  const pod = await c.pod('op-0');
  // Another pod's, and one whose holder only begins with this pod's name.
  const otherRv = await othersLease(c, 'other', 'op-1_6b0f5c52-0f43-4a40-9a9b-8f9f3a1c2d7e');
  const prefixRv = await othersLease(c, 'prefix', 'op-00_0c1d2e3f-4a5b-6c7d-8e9f-a0b1c2d3e4f5');
  const lease = `lease-${randomBytes(3).toString('hex')}`;
  const p = drainguard(['run', '--', NODE, LEADER], {
    KUBECONFIG: c.cluster.kubeconfigFor(await c.token('op', pod)),
    DRAINGUARD_POD_NAME: pod.name,
    DRAINGUARD_POD_NAMESPACE: c.ns,
    DRAINGUARD_LOG_LEVEL: 'debug',
    ...electorEnv(c.cluster, c.ns, await c.token('elector'), pod.name, lease),
  });
  try {
    const line = await p.line(/^leader /);
    const identity = line.split(' ')[1]!;
    const held = await c.lease(lease);
    assert.equal([held.spec.holderIdentity, held.spec.leaseDurationSeconds], [identity, 15]);
    await stopped(p);
    const after = await c.lease(lease);
    assert.is(after.spec.holderIdentity, '', 'nobody holds it');
    assert.is(after.spec.leaseDurationSeconds, 1);
    assert.is(after.spec.leaseTransitions, held.spec.leaseTransitions, 'the transitions are kept');
    for (const t of [after.spec.renewTime, after.spec.acquireTime]) assert.match(t, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    assert.ok(Date.parse(after.spec.renewTime) >= Date.parse(held.spec.renewTime), 'renewed at the release');
    const log = p.logs().filter((l) => l.msg.startsWith('leader Lease'));
    assert.equal(
      log.map((l) => [l.msg, l.lease, l.holder]),
      [['leader Lease released: the next leader can take it at once', `${c.ns}/${lease}`, identity]],
    );
    // The others were not written.
    assert.is((await c.lease('other')).metadata.resourceVersion, otherRv);
    assert.is((await c.lease('prefix')).metadata.resourceVersion, prefixRv);
  } finally {
    p.killAll();
  }
});

test('without drainguard, and with DRAINGUARD_LEADER_LEASE=off, the exited operator still holds its Lease for the whole lease duration', async () => {
  const c = await setup(['get', 'list', 'update']);
  const pod = await c.pod('op-0');
  for (const how of ['bare', 'off'] as const) {
    const lease = `lease-${how}`;
    const env = electorEnv(c.cluster, c.ns, await c.token('elector'), pod.name, lease);
    const p =
      how === 'bare'
        ? new Proc(NODE, [LEADER], env)
        : drainguard(['run', '--', NODE, LEADER], {
            KUBECONFIG: c.cluster.kubeconfigFor(await c.token('op', pod)),
            DRAINGUARD_POD_NAME: pod.name,
            DRAINGUARD_POD_NAMESPACE: c.ns,
            DRAINGUARD_LEADER_LEASE: 'off',
            ...env,
          });
    try {
      const identity = (await p.line(/^leader /)).split(' ')[1]!;
      p.kill('SIGTERM');
      await p.exit(20_000);
      const after = await c.lease(lease);
      assert.equal([after.spec.holderIdentity, after.spec.leaseDurationSeconds], [identity, 15], how);
    } finally {
      p.killAll();
    }
  }
});

test('a refused update is one warning, and the exit is not held up', async () => {
  // drainguard's ServiceAccount may read Leases but not update them.
  const c = await setup(['get', 'list']);
  const pod = await c.pod('op-0');
  const lease = 'refused';
  const p = drainguard(['run', '--', NODE, LEADER], {
    KUBECONFIG: c.cluster.kubeconfigFor(await c.token('op', pod)),
    DRAINGUARD_POD_NAME: pod.name,
    DRAINGUARD_POD_NAMESPACE: c.ns,
    ...electorEnv(c.cluster, c.ns, await c.token('elector'), pod.name, lease),
  });
  try {
    const identity = (await p.line(/^leader /)).split(' ')[1]!;
    await stopped(p);
    const lines = p.logs().filter((l) => l.msg.startsWith('leader Lease'));
    assert.is(lines.length, 1, JSON.stringify(lines));
    assert.equal([lines[0]!.level, lines[0]!.status], ['warn', 403]);
    assert.match(lines[0]!.msg, /refused/);
    assert.is((await c.lease(lease)).spec.holderIdentity, identity, 'left as it was');
  } finally {
    p.killAll();
  }
});

test('a Lease write that hangs does not hold up the guard: released in time, the exit before the grace period ends', async () => {
  await withCluster(
    async (c: Install) => {
      // kubebuilder's leader-election Role, for the operator.
      await c.cluster.grant(c.ns, 'op', 'leader-election', [
        {
          apiGroups: ['coordination.k8s.io'],
          resources: ['leases'],
          verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'],
        },
      ]);
      const pod = await c.pod('op-0', 6);
      const token = await c.cluster.token(c.ns, 'op', { pod });
      // drainguard's PUT of a leader Lease is held at the fault proxy past the kubelet's kill.
      c.proxy!.rule({ match: (r) => r.method === 'PUT' && r.resource === 'leases', delayMs: 60_000 });
      // The operator elects straight at the API server; drainguard goes through the proxy.
      const p = await c.run(
        pod,
        { DRAINGUARD_GRACE_PERIOD: '6s', DRAINGUARD_STOP_TIMEOUT: '1s', ...electorEnv(c.cluster, c.ns, token, pod.name, 'leader') },
        [NODE, LEADER],
      );
      await p.line(/^leader /);
      await c.cluster.waitFor(async () => Object.values(await c.holders()).every((h) => h.length === 1), 10_000, 'the guard held');
      p.kill('SIGTERM');
      const exit = await p.exit(20_000);
      assert.is(exit.code, 0, p.stderr.join('\n'));
      const released = p.logs().find((l) => l.msg === 'guard released');
      assert.ok(released, p.stderr.join('\n'));
      const signalled = Date.parse(p.logs().find((l) => l.msg === 'termination requested')!.time as string);
      const leaderLines = p.logs().filter((l) => l.msg.startsWith('leader Lease'));
      assert.is(leaderLines.length, 1, JSON.stringify(leaderLines));
      assert.match(leaderLines[0]!.msg, /release deadline/);
      assert.ok(p.exitedAt! - signalled < 6000, `exited ${p.exitedAt! - signalled} ms after SIGTERM, within the 6 s grace period`);
    },
    { proxy: true },
  );
});

test.run();
