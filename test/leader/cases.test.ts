// The leader release's cases that a whole run cannot bring about on demand,
// against the run's control plane with drainguard's own client
// (src/leader/release.ts, open.ts): a successor that takes the Lease between
// the read and the write wins; a sidecar that cannot tell the operator stopped
// leaves the Lease; a named Lease held by another pod is left; only the named
// one is read.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { systemClock } from '../../src/clock.ts';
import { KubeClient } from '../../src/kube/client.ts';
import { loadApiAccess } from '../../src/kube/config.ts';
import { leaderRelease } from '../../src/leader/open.ts';
import { releaseLeaderLease } from '../../src/leader/release.ts';
import { createLogger } from '../../src/log/logger.ts';
import { type TestCluster, resourcePath, useCluster } from '../support/cluster/index.ts';

const LEASES = 'coordination.k8s.io/v1';
const micro = (ms: number) => new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');

function capture() {
  const lines: { msg: string; level: string; [k: string]: unknown }[] = [];
  const logger = createLogger({ level: 'debug', format: 'json', stream: { write: (s: string) => void lines.push(JSON.parse(s)) } });
  return { lines, logger };
}

async function lease(c: TestCluster, ns: string, name: string, holder: string): Promise<any> {
  const now = micro(Date.now());
  return c.create({
    apiVersion: LEASES,
    kind: 'Lease',
    metadata: { name, namespace: ns },
    spec: { holderIdentity: holder, leaseDurationSeconds: 15, acquireTime: now, renewTime: now, leaseTransitions: 0 },
  });
}

const c = await useCluster();
const { name: ns } = await c.namespace('leader-cases');
const admin = new KubeClient({ access: await loadApiAccess({ KUBECONFIG: c.adminKubeconfig }) });
const path = (name: string) => resourcePath(LEASES, 'leases', ns, name);

test('a successor that takes the Lease between the read and the write wins: 409, the Lease is left to it', async () => {
  await lease(c, ns, 'race', 'op-0_old');
  const { lines, logger } = capture();
  // The successor's acquisition lands just before drainguard's PUT.
  const racing = Object.create(admin) as KubeClient;
  racing.request = async (method, p, options) => {
    if (method === 'PUT') {
      const current = await c.api.get(path('race'));
      await c.api.request('PUT', path('race'), {
        ...current,
        spec: { ...current.spec, holderIdentity: 'op-1_new', leaseDurationSeconds: 15, renewTime: micro(Date.now()) },
      });
    }
    return admin.request(method, p, options);
  };
  const r = await releaseLeaderLease(
    { pod: { name: 'op-0', namespace: ns }, lease: 'auto', client: async () => racing, logger },
    Date.now() + 10_000,
  );
  assert.equal(r, { outcome: 'taken' });
  const after = await c.api.get(path('race'));
  assert.equal([after.spec.holderIdentity, after.spec.leaseDurationSeconds], ['op-1_new', 15]);
  assert.equal(
    lines.filter((l) => l.msg.startsWith('leader Lease')).map((l) => l.msg),
    ['leader Lease changed since it was read: left to its new holder'],
  );
});

test('a sidecar: the Lease left when it cannot tell the operator stopped (no DRAINGUARD_OPERATOR_CONTAINER, or the API never says so), given up once the API says so', async () => {
  const made = await lease(c, ns, 'sidecar', 'op-2_x');
  const env = { KUBECONFIG: c.adminKubeconfig };
  const never = async (signal: AbortSignal) => new Promise<void>((r) => signal.addEventListener('abort', () => r()));
  for (const [operator, outcome, msg] of [
    [
      'unknown',
      'left',
      'leader Lease held by this pod left as it is: drainguard cannot tell that the operator has stopped (a sidecar needs DRAINGUARD_OPERATOR_CONTAINER, and the API to report that container terminated)',
    ],
    [never, 'deadline', 'leader Lease not released by the release deadline (the successor waits out its lease duration)'],
  ] as const) {
    const { lines, logger } = capture();
    const release = leaderRelease({ setting: 'auto', pod: { name: 'op-2', namespace: ns }, env, logger, clock: systemClock, operator })!;
    const r = await release(Date.now() + 300);
    assert.equal(r, { outcome });
    assert.equal(
      lines.filter((l) => l.msg.startsWith('leader Lease')).map((l) => l.msg),
      [msg],
    );
  }
  assert.is((await c.api.get(path('sidecar'))).metadata.resourceVersion, made.metadata.resourceVersion, 'not written');
  // Once the API reports the operator container terminated, it is given up.
  let asked = 0;
  const { logger } = capture();
  const confirmed = leaderRelease({
    setting: 'auto',
    pod: { name: 'op-2', namespace: ns },
    env,
    logger,
    clock: systemClock,
    operator: async () => void asked++,
  })!;
  assert.equal(await confirmed(Date.now() + 10_000), { outcome: 'released', leases: ['sidecar'] });
  assert.is(asked, 1);
  assert.equal(
    [(await c.api.get(path('sidecar'))).spec.holderIdentity, (await c.api.get(path('sidecar'))).spec.leaseDurationSeconds],
    ['', 1],
  );
});

test('DRAINGUARD_LEADER_LEASE=NAME: only that Lease is read; held by another pod, it is left; off: nothing at all', async () => {
  await lease(c, ns, 'named', 'op-3x_y');
  const mine = await lease(c, ns, 'other-mine', 'op-3_z');
  const { lines, logger } = capture();
  const calls: string[] = [];
  const counting = new KubeClient({
    access: await loadApiAccess({ KUBECONFIG: c.adminKubeconfig }),
    onCall: (call) => calls.push(`${call.method} ${call.path}`),
  });
  const r = await releaseLeaderLease(
    { pod: { name: 'op-3', namespace: ns }, lease: { name: 'named' }, client: async () => counting, logger },
    Date.now() + 10_000,
  );
  assert.equal(r, { outcome: 'none' });
  assert.equal(calls, [`GET ${path('named')}`]);
  assert.ok(lines.some((l) => l.msg === 'leader Lease not held by this pod: left as it is' && l.holder === 'op-3x_y'));
  assert.is(
    (await c.api.get(path('other-mine'))).metadata.resourceVersion,
    mine.metadata.resourceVersion,
    'a Lease of this pod not named is not read or written',
  );
  assert.is(
    leaderRelease({ setting: 'off', pod: { name: 'op-3', namespace: ns }, env: {}, logger, clock: systemClock, operator: 'exited' }),
    undefined,
  );
  assert.is(
    leaderRelease({ setting: 'auto', pod: { namespace: ns }, env: {}, logger, clock: systemClock, operator: 'exited' }),
    undefined,
    'no pod name: nothing to go by',
  );
});

test('an operator with no rights on Leases (it elects no leader): one info line, no warning', async () => {
  await c.serviceAccount(ns, 'plain');
  const plain = new KubeClient({ access: await loadApiAccess({ KUBECONFIG: c.kubeconfigFor(await c.token(ns, 'plain')) }) });
  const { lines, logger } = capture();
  const r = await releaseLeaderLease(
    { pod: { name: 'op-4', namespace: ns }, lease: 'auto', client: async () => plain, logger },
    Date.now() + 10_000,
  );
  assert.equal(r, { outcome: 'refused' });
  assert.equal(
    lines.map((l) => [l.level, l.msg]),
    [['info', 'cannot list the Leases of this namespace: no leader Lease looked for (DRAINGUARD_LEADER_LEASE=off says none is wanted)']],
  );
});

test.run();
