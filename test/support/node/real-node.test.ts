// The kubelet's termination sequence, as the real kubelet does it
// (test/support/node: the kubelet of the control plane's release, containerd,
// runc): a preStop hook, then the stop signal, SIGKILL when the grace period
// runs out, native sidecars stopped after the main containers in reverse
// order (while the grace period lasts); a second delete with a shorter grace
// period (kept at the first); a force delete (1 s; the spec's grace on 1.30). The
// containers are busybox scripts that write what happens to them, stamped with
// the host's /proc/uptime (not namespaced: the test reads the same clock), to
// a file on the host. docs/kubernetes.md has the figures.

import { readFileSync } from 'node:fs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { TestCluster } from '../cluster/index.ts';
import { type RealNode, TOOLS_IMAGE, nodeWithNamespace } from './index.ts';

let c: TestCluster;
let node: RealNode;
let ns: string;

test.before(async () => {
  ({ c, node, ns } = await nodeWithNamespace('real-node'));
});

/** Seconds since boot, as the containers stamp their lines. */
const uptime = () => Number(readFileSync('/proc/uptime', 'utf8').split(' ')[0]);

/** Writes `$NAME WHAT UPTIME` to /out/$POD; on SIGTERM logs it and exits, unless ON_TERM=ignore. */
const SCRIPT = `stamp() { read up _ </proc/uptime; echo "$NAME $1 $up" >> /out/$POD; }
trap 'stamp TERM; [ "$ON_TERM" = ignore ] || exit 0' TERM
stamp started
while :; do /busybox sleep 1 & wait $!; done`;

function container(name: string, env: Record<string, string> = {}, extra: object = {}): object {
  return {
    name,
    image: TOOLS_IMAGE,
    command: ['/busybox', 'sh', '-c', SCRIPT],
    env: [
      { name: 'NAME', value: name },
      { name: 'POD', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
      ...Object.entries(env).map(([k, v]) => ({ name: k, value: v })),
    ],
    volumeMounts: [{ name: 'out', mountPath: '/out' }],
    ...extra,
  };
}

function pod(name: string, spec: object): object {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: ns },
    spec: {
      nodeName: node.name,
      hostNetwork: true,
      automountServiceAccountToken: false,
      volumes: [{ name: 'out', hostPath: { path: node.outDir } }],
      ...spec,
    },
  };
}

interface Line {
  readonly who: string;
  readonly what: string;
  readonly at: number;
}

function lines(podName: string): Line[] {
  let text = '';
  try {
    text = readFileSync(`${node.outDir}/${podName}`, 'utf8');
  } catch {}
  return text
    .split('\n')
    .filter(Boolean)
    .map((l) => {
      const [who, what, at] = l.split(' ');
      return { who: who!, what: what!, at: Number(at) };
    });
}

const podPath = (name: string) => `/api/v1/namespaces/${ns}/pods/${name}`;

async function started(name: string, containers: string[]): Promise<void> {
  await c.waitFor(
    () => containers.every((x) => lines(name).some((l) => l.who === x && l.what === 'started')),
    60_000,
    `${containers.join(', ')} started in ${name}`,
    () => node.tail(),
  );
}

async function gone(name: string, ms = 60_000): Promise<void> {
  await c.waitFor(async () => (await c.api.get(podPath(name))) === undefined, ms, `pod ${name} gone`);
}

const at = (ls: Line[], who: string, what: string): number => {
  const l = ls.find((x) => x.who === who && x.what === what);
  assert.ok(l, `${who} ${what} in:\n${ls.map((x) => `${x.who} ${x.what} ${x.at}`).join('\n')}`);
  return l!.at;
};

test('deletion: the preStop hook, then SIGTERM; once the main container exited, the native sidecars one after the other, the last started first', async () => {
  await c.api.create(
    `/api/v1/namespaces/${ns}/pods`,
    pod('ordered', {
      terminationGracePeriodSeconds: 20,
      initContainers: [container('sidecar-a', {}, { restartPolicy: 'Always' }), container('sidecar-b', {}, { restartPolicy: 'Always' })],
      containers: [
        container(
          'main',
          {},
          {
            lifecycle: {
              preStop: {
                exec: {
                  command: ['/busybox', 'sh', '-c', 'read up _ </proc/uptime; echo "main preStop $up" >> /out/$POD; /busybox sleep 1'],
                },
              },
            },
          },
        ),
      ],
    }),
  );
  await started('ordered', ['sidecar-a', 'sidecar-b', 'main']);
  const ls0 = lines('ordered');
  assert.ok(
    at(ls0, 'sidecar-a', 'started') <= at(ls0, 'sidecar-b', 'started') && at(ls0, 'sidecar-b', 'started') <= at(ls0, 'main', 'started'),
    'started in order',
  );
  const deleted = uptime();
  await c.api.delete(podPath('ordered'));
  await gone('ordered');
  const ls = lines('ordered').filter((l) => l.what !== 'started');
  assert.equal(
    ls.map((l) => `${l.who} ${l.what}`),
    ['main preStop', 'main TERM', 'sidecar-b TERM', 'sidecar-a TERM'],
  );
  const term = at(ls, 'main', 'TERM') - at(ls, 'main', 'preStop');
  assert.ok(term >= 0.9 && term < 1.6, `SIGTERM ${term} s after the hook started (it sleeps 1 s)`);
  console.log(
    `real kubelet, grace 20 s, main exits at SIGTERM: preStop +${(at(ls, 'main', 'preStop') - deleted).toFixed(2)} s, SIGTERM +${(at(ls, 'main', 'TERM') - deleted).toFixed(2)} s, sidecar-b +${(at(ls, 'sidecar-b', 'TERM') - deleted).toFixed(2)} s, sidecar-a +${(at(ls, 'sidecar-a', 'TERM') - deleted).toFixed(2)} s after the delete`,
  );
});

test('deletion: a main container that outlives the grace period is killed at it; the native sidecars then get SIGTERM all at once, not in order', async () => {
  const grace = 3;
  await c.api.create(
    `/api/v1/namespaces/${ns}/pods`,
    pod('stopping', {
      terminationGracePeriodSeconds: grace,
      initContainers: [container('sidecar-a', {}, { restartPolicy: 'Always' }), container('sidecar-b', {}, { restartPolicy: 'Always' })],
      containers: [container('main', { ON_TERM: 'ignore' })],
    }),
  );
  await started('stopping', ['sidecar-a', 'sidecar-b', 'main']);
  const deleted = uptime();
  await c.api.delete(podPath('stopping'));
  await gone('stopping');
  const ls = lines('stopping').filter((l) => l.what !== 'started');
  assert.equal(ls.map((l) => `${l.who} ${l.what}`).sort(), ['main TERM', 'sidecar-a TERM', 'sidecar-b TERM']);
  const [a, b] = [at(ls, 'sidecar-a', 'TERM') - deleted, at(ls, 'sidecar-b', 'TERM') - deleted];
  // Each sidecar waits for its turn only as long as the grace period lasts (kuberuntime's terminationOrdering.waitForTurn),
  // counted from when the kubelet started the stop (main's SIGTERM), not from the DELETE: the kubelet's watch lag is
  // no part of the rule (it reached 1.9 s beside a busy loop).
  const stop = at(ls, 'main', 'TERM') - deleted;
  for (const t of [a, b])
    assert.ok(t - stop >= grace - 0.2 && t - stop < grace + 1.5, `a sidecar's SIGTERM ${t - stop} s after main's, grace ${grace} s`);
  assert.ok(Math.abs(a - b) < 0.5, `sidecar-a ${a} s, sidecar-b ${b} s: together`);
  console.log(
    `real kubelet, grace ${grace} s, main ignores SIGTERM: main SIGTERM +${stop.toFixed(2)} s, sidecar-b +${b.toFixed(2)} s, sidecar-a +${a.toFixed(2)} s after the delete`,
  );
});

test('a second delete with a shorter grace period: the kubelet keeps the grace period it started the stop with', async () => {
  const first = 10;
  await c.api.create(
    `/api/v1/namespaces/${ns}/pods`,
    pod('kept', {
      terminationGracePeriodSeconds: first,
      // The sidecar's SIGTERM marks when main was killed: the kubelet stops it once main is gone.
      initContainers: [container('marker', {}, { restartPolicy: 'Always' })],
      containers: [container('main', { ON_TERM: 'ignore' })],
    }),
  );
  await started('kept', ['marker', 'main']);
  const deleted = uptime();
  await c.api.delete(podPath('kept'));
  await c.waitFor(() => lines('kept').some((l) => l.who === 'main' && l.what === 'TERM'), 20_000, 'main SIGTERM');
  const r = await c.api.request('DELETE', podPath('kept'), { apiVersion: 'v1', kind: 'DeleteOptions', gracePeriodSeconds: 3 });
  assert.is(r.status, 200, JSON.stringify(r.body));
  assert.is((r.body as any).metadata.deletionGracePeriodSeconds, 3, 'the API server takes the shorter one');
  await gone('kept');
  const killed = at(lines('kept'), 'marker', 'TERM') - deleted;
  assert.ok(
    killed >= first - 0.5 && killed < first + 2,
    `main killed ${killed} s after the first delete: at its ${first} s, not 3 s after the second`,
  );
  console.log(`real kubelet: second delete with grace 3 s: main killed ${killed.toFixed(2)} s after the first delete (grace ${first} s)`);
});

test("a force delete (grace 0): the Pod is gone from the API at once, and the kubelet kills after 1 s, not after the spec's grace period (1.30: after it)", async () => {
  await c.api.create(
    `/api/v1/namespaces/${ns}/pods`,
    pod('forced', {
      terminationGracePeriodSeconds: 6,
      initContainers: [container('marker', {}, { restartPolicy: 'Always' })],
      containers: [container('main', { ON_TERM: 'ignore' })],
    }),
  );
  await started('forced', ['marker', 'main']);
  const deleted = uptime();
  await c.api.delete(podPath('forced'), { gracePeriodSeconds: 0 });
  assert.is(await c.api.get(podPath('forced')), undefined, 'gone from the API at once');
  await c.waitFor(() => lines('forced').some((l) => l.who === 'marker' && l.what === 'TERM'), 30_000, 'the sidecar stopped');
  const ls = lines('forced');
  const term = at(ls, 'main', 'TERM') - deleted;
  const killed = at(ls, 'marker', 'TERM') - deleted;
  console.log(`real kubelet: force delete, spec grace 6 s: main SIGTERM +${term.toFixed(2)} s, killed +${killed.toFixed(2)} s`);
  assert.ok(term < 2, `SIGTERM ${term} s after the force delete`);
  // calculateEffectiveGracePeriod (pkg/kubelet/pod_workers.go): from 1.31 a DeletionGracePeriodSeconds of 0
  // wins over the spec's, and 1 s is the floor; 1.30 reads the 0 as "none given" and takes the spec's 6 s.
  // Counted from the kubelet's SIGTERM: how soon the kubelet sees the delete is the machine's load, not the grace.
  const [low, high] = Number(/^v1\.(\d+)\./.exec(c.release)?.[1]) >= 31 ? [0.9, 2.0] : [5.9, 7.0];
  const grace = killed - term;
  assert.ok(grace >= low && grace < high, `main killed ${grace} s after its SIGTERM (kubelet ${c.release})`);
});

test.run();
