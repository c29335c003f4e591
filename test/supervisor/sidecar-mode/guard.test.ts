// The sidecar holds the guard for its pod and releases it only once the
// operator container has stopped: real pods on the real API server, run by
// the kubelet stand-in (test/support/kubelet), deleted as an uninstall
// deletes them while it deletes the operator's ClusterRole. Plain and native
// sidecar, the preStop hook as exec (`drainguard prestop`, installed into an
// emptyDir by an init container) and as httpGet (/prestop with the token),
// and the wait for the API to report the operator's container terminated.
// And a deletion shorter than the spec (--grace-period 4 and 1 on 30 s): the
// preStop drain fits in it, the hook returns before the kubelet gives up on it,
// and the release comes before the kubelet's SIGKILL.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Kubelet } from '../../support/kubelet/index.ts';
import { type KubeletCluster, kubeletCluster } from '../../support/kubelet/cluster.ts';
import { DRAINGUARD_IMAGE, drainguardImage, operatorImage } from '../../support/kubelet/runners.ts';
import { type Proc, fixture } from '../../support/proc.ts';
import { parseExposition } from '../../telemetry/prom-text.ts';
import { http } from './support.ts';

const RBAC = 'rbac.authorization.k8s.io/v1';
const OPERATOR_IMAGE = 'example.com/operator';
const TOKEN = 'a-prestop-token-of-32-characters';

let c: KubeletCluster;
let ns: string;
let kubelet: Kubelet;
let role: string;

test.before(async () => {
  c = await kubeletCluster();
  ns = await c.namespace('sidecar');
  role = `op-${ns}`;
  await c.cluster.serviceAccount(ns, 'op');
  await c.cluster.grant(
    ns,
    'op',
    role,
    [{ apiGroups: ['rbac.authorization.k8s.io'], resources: ['clusterroles'], resourceNames: [role], verbs: ['get', 'patch'] }],
    { clusterWide: true },
  );
  await c.cluster.grant(ns, 'op', 'drainguard', [
    { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'list', 'create', 'patch', 'update', 'delete'] },
    { apiGroups: [''], resources: ['pods'], verbs: ['get'] },
    { apiGroups: [''], resources: ['events'], verbs: ['create'] },
  ]);
  kubelet = await Kubelet.start({
    cluster: c.access,
    namespaces: [ns],
    images: {
      [DRAINGUARD_IMAGE]: drainguardImage({ DRAINGUARD_LOG_LEVEL: 'debug' }),
      [OPERATOR_IMAGE]: operatorImage(fixture('operator.ts')),
    },
  });
});

test.after(async () => {
  await kubelet?.stop();
});

interface PodOptions {
  readonly name: string;
  readonly native: boolean;
  readonly hook: 'exec' | 'httpGet' | 'none';
  readonly operatorEnv?: Record<string, string>;
  readonly sidecarEnv?: Record<string, string>;
}

const env = (vars: Record<string, string>) => Object.entries(vars).map(([name, value]) => ({ name, value }));

/** An operator pod with drainguard beside it, as deploy/components lay it out. */
function podOf(o: PodOptions): any {
  const sidecar = {
    name: 'drainguard',
    image: `${DRAINGUARD_IMAGE}:0.1.0`,
    command: ['/drainguard/drainguard', 'sidecar'],
    env: [
      ...['name', 'namespace', 'uid'].map((f) => ({
        name: `DRAINGUARD_POD_${f.toUpperCase()}`,
        valueFrom: { fieldRef: { fieldPath: `metadata.${f}` } },
      })),
      ...env({
        DRAINGUARD_GUARD: `clusterrole/${role}`,
        DRAINGUARD_HTTP_ADDR: ':9404',
        DRAINGUARD_STOP_TIMEOUT: '1s',
        ...(o.hook === 'httpGet' && { DRAINGUARD_PRESTOP_TOKEN: TOKEN }),
        ...o.sidecarEnv,
      }),
    ],
    ports: [{ name: 'drainguard', containerPort: 9404 }],
    readinessProbe: { httpGet: { path: '/readyz', port: 'drainguard' } },
    volumeMounts: [{ name: 'socket', mountPath: '/run/drainguard' }],
    ...(o.native && { restartPolicy: 'Always' }),
  };
  const preStop = {
    exec: { exec: { command: ['/drainguard/drainguard', 'prestop'] } },
    httpGet: { httpGet: { path: '/prestop', port: 9404, httpHeaders: [{ name: 'X-Drainguard-Token', value: TOKEN }] } },
    none: undefined,
  }[o.hook];
  const manager = {
    name: 'manager',
    image: `${OPERATOR_IMAGE}:1.0.0`,
    command: ['/manager'],
    env: env({ DRAINGUARD_SOCKET: '/run/drainguard/drain.sock', ...o.operatorEnv }),
    ...(preStop && { lifecycle: { preStop } }),
    volumeMounts: [
      { name: 'socket', mountPath: '/run/drainguard' },
      ...(o.hook === 'exec' ? [{ name: 'drainguard', mountPath: '/drainguard', readOnly: true }] : []),
    ],
  };
  const install = {
    name: 'drainguard-install',
    image: `${DRAINGUARD_IMAGE}:0.1.0`,
    command: ['/drainguard/drainguard', 'install', '/shared'],
    volumeMounts: [{ name: 'drainguard', mountPath: '/shared' }],
  };
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: o.name, namespace: ns },
    spec: {
      serviceAccountName: 'op',
      terminationGracePeriodSeconds: 30,
      volumes: [
        { name: 'socket', emptyDir: {} },
        { name: 'drainguard', emptyDir: {} },
      ],
      initContainers: [...(o.hook === 'exec' ? [install] : []), ...(o.native ? [sidecar] : [])],
      containers: [manager, ...(o.native ? [] : [sidecar])],
    },
  };
}

const rolePath = () => `/apis/${RBAC}/clusterroles/${role}`;

interface Running {
  readonly uid: string;
  readonly finalizer: string;
  readonly sidecar: Proc;
  readonly operator: Proc;
}

/** Creates the pod and waits until it is Ready, which needs the guard set. */
async function run(o: PodOptions): Promise<Running> {
  const created = await c.api.must('POST', `/api/v1/namespaces/${ns}/pods`, podOf(o));
  const uid = created.metadata.uid;
  const finalizer = `drainguard.dev/holder-${uid}`;
  const sidecar = await kubelet.process(o.name, 'drainguard', 60_000);
  const operator = await kubelet.process(o.name, 'manager', 60_000);
  await operator.line('ready', 20_000);
  await c.poll(
    `/api/v1/namespaces/${ns}/pods/${o.name}`,
    (b) => b.status?.conditions?.some((x: any) => x.type === 'Ready' && x.status === 'True'),
    20_000,
    'the pod Ready',
  );
  return { uid, finalizer, sidecar, operator };
}

/** helm uninstall: the ClusterRole deleted (background) and the pod deleted (graceful) at the same moment. */
async function uninstall(name: string): Promise<void> {
  await c.api.must('DELETE', rolePath(), { propagationPolicy: 'Background' });
  await c.api.must('DELETE', `/api/v1/namespaces/${ns}/pods/${name}`);
}

async function recreateRole(): Promise<void> {
  if ((await c.api.call('GET', rolePath())).status === 200) return;
  await c.api.must('POST', `/apis/${RBAC}/clusterroles`, {
    apiVersion: RBAC,
    kind: 'ClusterRole',
    metadata: { name: role },
    rules: [{ apiGroups: ['rbac.authorization.k8s.io'], resources: ['clusterroles'], resourceNames: [role], verbs: ['get', 'patch'] }],
  });
}

const msgs = (p: Proc) => p.logs().map((l) => l.msg);
const what = (name: string) =>
  kubelet.events
    .filter((e) => e.pod === name && /^(preStop (started|ended)|signal|exited|deleted|terminating)/.test(e.what))
    .map((e) => `${e.container ?? 'pod'} ${e.what}`);

test('plain sidecar, exec preStop: the ClusterRole deleted by an uninstall stays until the operator is gone', async () => {
  await recreateRole();
  const p = await run({ name: 'plain-exec', native: false, hook: 'exec', operatorEnv: { FIXTURE_WORK: '300', FIXTURE_ON_TERM: 'ignore' } });
  const held = await c.api.must('GET', rolePath());
  assert.ok(held.metadata.finalizers.includes(p.finalizer));
  // Ready only once the guard was set: readiness is what gates availability.
  const sidecarLog = p.sidecar.logs();
  const guardSet = Date.parse(sidecarLog.find((l) => l.msg === 'finalizer added')!.time as string);
  const ready = kubelet.events.find((e) => e.pod === 'plain-exec' && e.container === 'drainguard' && e.what === 'ready')!.at;
  assert.ok(guardSet <= ready, `the sidecar was ready ${ready - guardSet} ms after the finalizer was set`);
  const base = `http://${sidecarLog.find((l) => l.msg === 'http listener started')!.address as string}`;
  assert.equal(parseExposition((await http(`${base}/metrics`)).body).value('drainguard_guard_objects_held'), 1);
  await p.operator.line('work done 0');

  await uninstall('plain-exec');
  // The kubelet: the hook (drainguard prestop) and, with it, SIGTERM to the plain sidecar; then SIGTERM to the operator, which ignores it.
  await kubelet.event(
    (e) => e.pod === 'plain-exec' && e.container === 'manager' && e.what === 'signal SIGTERM',
    30_000,
    'SIGTERM to the operator',
  );
  await p.operator.line('signal SIGTERM');
  await p.sidecar.log('waiting for the operator to stop');
  const during = await c.api.must('GET', rolePath());
  assert.ok(during.metadata.deletionTimestamp, 'the ClusterRole is being deleted');
  assert.ok(during.metadata.finalizers.includes(p.finalizer), 'and still held while the operator runs');
  assert.is(p.sidecar.child.exitCode, null, 'the sidecar still runs');

  p.operator.kill('SIGKILL');
  assert.equal((await p.sidecar.exit(30_000)).code, 0);
  await c.poll(rolePath(), (_b, s) => s === 404, 10_000, 'the ClusterRole gone once the operator is');
  await c.poll(
    `/apis/coordination.k8s.io/v1/namespaces/${ns}/leases/drainguard-${p.uid}`,
    (_b, s) => s === 404,
    10_000,
    'the holder Lease gone',
  );
  await kubelet.event((e) => e.pod === 'plain-exec' && e.what === 'deleted 200', 30_000, 'the final delete');
  const m = msgs(p.sidecar);
  assert.ok(m.indexOf('operator stopped') < m.indexOf('releasing the guard'), m.join(' | '));
  const order = what('plain-exec');
  assert.ok(order.indexOf('manager preStop ended: succeeded') < order.indexOf('manager signal SIGTERM'), order.join('\n'));
  assert.ok(
    order.indexOf('drainguard signal SIGTERM') < order.indexOf('manager preStop ended: succeeded'),
    'a plain sidecar gets SIGTERM with the hook',
  );
  assert.not.ok(p.operator.stdout.some((l) => l.startsWith('work interrupted')));
  assert.equal(kubelet.errors, []);
});

test('native sidecar, httpGet preStop: the operator drains and stops first, the sidecar is stopped after it and releases', async () => {
  await recreateRole();
  const p = await run({ name: 'native-http', native: true, hook: 'httpGet', operatorEnv: { FIXTURE_WORK: '5000' } });
  await uninstall('native-http');
  await kubelet.event((e) => e.pod === 'native-http' && e.what === 'deleted 200', 30_000, 'the final delete');
  await c.poll(rolePath(), (_b, s) => s === 404, 10_000, 'the ClusterRole gone');
  assert.equal(what('native-http'), [
    'pod terminating, grace 30s',
    'manager preStop started',
    'manager preStop ended: succeeded',
    'manager signal SIGTERM',
    'manager exited 0',
    'drainguard signal SIGTERM',
    'drainguard exited 0',
    'pod deleted 200',
  ]);
  // The drain came while the reconcile was in flight; it finished; only then SIGTERM.
  const out = p.operator.stdout;
  const [drain, done, term] = [
    out.findIndex((l) => l.startsWith('drain remainingMs=')),
    out.indexOf('work done 0'),
    out.indexOf('signal SIGTERM'),
  ];
  assert.ok(drain !== -1 && drain < done && done < term, out.join('\n'));
  assert.not.ok(p.operator.stdout.some((l) => l.startsWith('work interrupted')));
  const m = msgs(p.sidecar);
  assert.equal(p.sidecar.logs().find((l) => l.msg === 'drain started')!.source, 'http');
  assert.ok(m.indexOf('client drained') < m.indexOf('releasing the guard'), m.join(' | '));
  assert.equal(kubelet.errors, []);
});

for (const [native, grace] of [
  [true, 4],
  [false, 4],
  [true, 1],
  [false, 1],
] as const) {
  const name = `${native ? 'native' : 'plain'}-short-${grace}`;
  test(`${native ? 'native' : 'plain'} sidecar, exec preStop, deleted with --grace-period=${grace} on a 30 s spec and 8 s of work in flight: the hook returns in time, the operator stops, the release comes before the kubelet's SIGKILL`, async () => {
    await recreateRole();
    const p = await run({ name, native, hook: 'exec', operatorEnv: { FIXTURE_WORK: '8000' } });
    await c.api.must('DELETE', `/api/v1/namespaces/${ns}/pods/${name}`, { gracePeriodSeconds: grace });
    await kubelet.event((e) => e.pod === name && e.what === 'deleted 200', 30_000, 'the final delete');
    const order = what(name);
    assert.not.ok(
      order.some((l) => l.endsWith('signal SIGKILL')),
      `the kubelet killed:\n${kubelet.timeline()}\n${p.sidecar.stderr.join('\n')}`,
    );
    assert.ok(
      order.includes('manager preStop ended: succeeded'),
      `the hook returned by itself, not abandoned at the deadline:\n${order.join('\n')}`,
    );
    assert.ok(order.indexOf('manager preStop ended: succeeded') < order.indexOf('manager signal SIGTERM'), order.join('\n'));
    assert.ok(p.operator.stdout.includes('signal SIGTERM'), 'the operator got its stop signal');
    const read = p.sidecar.logs().find((l) => l.msg === 'deletion read from the Pod')!;
    assert.is(read?.deletionGracePeriodMs, grace * 1000, p.sidecar.stderr.join('\n'));
    // The kubelet's SIGKILL: the grace from when it saw the deletion, never sooner than 2 s after a container's SIGTERM.
    const seen = kubelet.events.find((e) => e.pod === name && e.what.startsWith('terminating'))!.at;
    const sidecarTerm = kubelet.events.find((e) => e.pod === name && e.container === 'drainguard' && e.what === 'signal SIGTERM')!.at;
    const killAt = Math.max(seen + grace * 1000, sidecarTerm + 2000);
    const released = Date.parse(p.sidecar.logs().find((l) => l.msg === 'guard released')?.time as string);
    assert.ok(released < killAt, `released ${released - killAt} ms after the kubelet's deadline\n${p.sidecar.stderr.join('\n')}`);
    assert.not.ok((await c.api.must('GET', rolePath())).metadata.finalizers?.includes(p.finalizer), "this pod's finalizer left");
    const hookEnded = kubelet.events.find((e) => e.pod === name && e.what === 'preStop ended: succeeded')!.at;
    console.log(
      `${name}: ${JSON.stringify({ hookEndedAfterDeleteMs: hookEnded - seen, operatorSigtermBeforeKillMs: Math.max(seen + grace * 1000, hookEnded + 2000) - hookEnded, releasedBeforeKillMs: killAt - released })}`,
    );
    assert.equal(kubelet.errors, []);
  });
}

test('an operator without the protocol: the release waits for the API to report its container terminated', async () => {
  await recreateRole();
  const p = await run({
    name: 'no-protocol',
    native: false,
    hook: 'none',
    operatorEnv: { FIXTURE_CONNECT: 'never', FIXTURE_ON_TERM: 'ignore' },
    sidecarEnv: { DRAINGUARD_OPERATOR_CONTAINER: 'manager' },
  });
  await uninstall('no-protocol');
  await p.operator.line('signal SIGTERM');
  await p.sidecar.log('waiting for the Kubernetes API to report the operator container terminated');
  const during = await c.api.must('GET', rolePath());
  assert.ok(during.metadata.finalizers.includes(p.finalizer), 'held while the container runs');
  assert.is(p.sidecar.child.exitCode, null);

  p.operator.kill('SIGKILL');
  // The kubelet reports the container terminated (exit 137); the sidecar sees it and releases.
  assert.equal((await p.sidecar.exit(30_000)).code, 0);
  await c.poll(rolePath(), (_b, s) => s === 404, 10_000, 'released, and the ClusterRole gone');
  const m = msgs(p.sidecar);
  assert.ok(
    m.indexOf('operator container terminated') !== -1 && m.indexOf('operator container terminated') < m.indexOf('releasing the guard'),
    m.join(' | '),
  );
  await kubelet.event((e) => e.pod === 'no-protocol' && e.what === 'deleted 200', 30_000, 'the final delete');
});

test('a container name the pod does not have: going by the connections, said once', async () => {
  await recreateRole();
  const p = await run({ name: 'wrong-name', native: false, hook: 'none', sidecarEnv: { DRAINGUARD_OPERATOR_CONTAINER: 'nope' } });
  await c.api.must('DELETE', `/api/v1/namespaces/${ns}/pods/wrong-name`);
  assert.equal((await p.sidecar.exit(30_000)).code, 0);
  const warned = p.sidecar.logs().filter((l) => l.msg.startsWith('cannot tell from the Kubernetes API'));
  assert.is(warned.length, 1);
  assert.match(
    warned[0]!.error as string,
    new RegExp(
      `DRAINGUARD_OPERATOR_CONTAINER names nope, which is not a container of pod ${ns}/wrong-name \\(it has manager, drainguard\\)`,
    ),
  );
  await kubelet.event((e) => e.pod === 'wrong-name' && e.what === 'deleted 200', 30_000, 'the final delete');
});

test.run();
