// deploy/examples/{wrap,native-sidecar,sidecar} rendered with kubectl kustomize
// and applied for real to the real API server and controller-manager, run by
// the kubelet stand-in: drainguard and the example operator are processes.
// The operator's own roles are emptied, so drainguard works with what the
// manifests grant it alone. Each mode: the Deployment becomes available, the
// guard is set on all seven objects (a stale holder swept, the Lease renewed),
// an uninstall as docs/guard.md gives it (kubectl delete, background, leaving
// out drainguard's own RBAC by its label) leaves the operator's objects
// terminating and held until the pod has drained and stopped; the pod releases
// every one of them, and `drainguard release --wait --delete` then deletes
// drainguard's own RBAC: nothing is left, no finalizer, no Lease, no pod, and
// drainguard logged no warning or error. The same for kubebuilder's scaffold
// (cluster-scoped in wrap mode, namespace-scoped in sidecar mode) and for
// docs/deploy.md's overlay with guard-more (objects in kube-system).

import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { randomBytes } from 'node:crypto';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { WatchEvent } from '../support/kubelet/api.ts';
import { Kubelet } from '../support/kubelet/index.ts';
import { DRAINGUARD_IMAGE, drainguardImage, operatorImage } from '../support/kubelet/runners.ts';
import { guardTargetKey, parseGuardList } from '../../src/config/guard-list.ts';
import { within } from '../support/wait.ts';
import { EXE, type LogLine, NODE, type Proc, drainguard, fixture, tempDir } from '../support/proc.ts';
import { type KubeletCluster, kubeletCluster } from '../support/kubelet/cluster.ts';
import { type Example, type KubeObject, example, kubebuilderProject, parseObjects, shapesOverlay } from './support/manifests.ts';
import type { Launch, Runner } from '../support/kubelet/container.ts';

const GUARDED = ['ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding'];
const STALE_HOLDER = 'drainguard.dev/holder-0b5e6f3e-8d21-4c7c-9a53-1f0c2d3e4f50';
/** Renewed every second, so the test sees renewals. */
const LEASE = { DRAINGUARD_LEASE_DURATION: '3s' };

let cluster: KubeletCluster;
test.before(async () => {
  cluster = await kubeletCluster();
});

const pathOf = (o: KubeObject) => {
  const core = o.apiVersion === 'v1';
  const base = core ? '/api/v1' : `/apis/${o.apiVersion}`;
  return `${base}${o.metadata.namespace ? `/namespaces/${o.metadata.namespace}` : ''}/${o.kind.toLowerCase()}s/${o.metadata.name}`;
};

/** The example of `mode`, as kubectl kustomize renders it, with names of its own. */
function render(objects: KubeObject[]): KubeObject[] {
  return objects.map((o) => {
    // drainguard's own permissions alone: the operator's roles grant nothing here.
    if ((o.kind === 'ClusterRole' || o.kind === 'Role') && o.metadata.labels?.['app.kubernetes.io/name'] !== 'drainguard') {
      // A holder that died without releasing (no Lease): drainguard must find and sweep it.
      return { ...o, rules: [], metadata: { ...o.metadata, ...(o.kind === 'ClusterRole' && { finalizers: [STALE_HOLDER] }) } };
    }
    return o;
  });
}

/**
 * An operator image that runs `script` as its ENTRYPOINT: the container names no
 * command (argv is its args), or a wrap names the image's program (/ko-app/...).
 */
function entrypointImage(script: string, env: NodeJS.ProcessEnv = {}): Runner {
  return (run): Launch | undefined => {
    if (run.hook || run.container.name !== 'manager') return undefined;
    const program = run.argv.findIndex((w) => w.startsWith('/ko-app/'));
    const at = program !== -1 ? program : run.container.command === undefined ? 0 : -1;
    if (at === -1) return undefined;
    const argv = [...run.argv.slice(0, at), NODE, script];
    return { file: argv[0]!, args: argv.slice(1), env, probes: false };
  };
}

/** Every log line of every drainguard process the kubelet started (containers and hooks). */
function drainguardLogs(kubelet: Kubelet): (LogLine & { container: string })[] {
  return kubelet.events.filter((e) => e.proc).flatMap((e) => e.proc!.logs().map((l) => ({ ...l, container: e.container! })));
}

/** How the test uninstalls: as docs/guard.md gives it for the examples, or as docs/deploy.md for a kubebuilder project. */
type Uninstall = (uninstall: KubeObject[], guarded: KubeObject[], own: KubeObject[], namespace: string) => Promise<void>;

async function scenario(mode: string, guardContainer: string, ex: Example = example(mode, `ex-${randomBytes(4).toString('hex')}`), uninstallAs: Uninstall = byList): Promise<void> {
  const ns = ex.namespace;
  const objects = render(ex.objects);
  // The objects the Deployment's DRAINGUARD_GUARD names (a kubebuilder project has more roles than it guards).
  const spec = objects.find((o) => o.kind === 'Deployment')!.spec.template.spec;
  const list = [...spec.containers, ...(spec.initContainers ?? [])].flatMap((c: any) => c.env ?? []).find((e: any) => e.name === 'DRAINGUARD_GUARD').value as string;
  const named = new Set(parseGuardList(list, 'DRAINGUARD_GUARD').map(guardTargetKey));
  const guarded = objects.filter((o) => GUARDED.includes(o.kind) && named.has(guardTargetKey({ kind: o.kind.toLowerCase(), namespace: o.metadata.namespace, name: o.metadata.name })));
  assert.is(guarded.length, named.size, `every guarded object is rendered (${[...named].join(', ')})`);
  assert.ok(guarded.length >= 7, 'the seven of the mode component at least');
  const operatorEnv = { FIXTURE_WORK: '300', ...(mode === 'wrap' && LEASE) };
  const kubelet = await Kubelet.start({
    cluster: cluster.access,
    namespaces: [ns],
    images: { [DRAINGUARD_IMAGE]: drainguardImage(LEASE), [ex.image]: (ex.entrypoint ? entrypointImage : operatorImage)(fixture('operator.ts'), operatorEnv) },
  });
  try {
    cluster.kubectl(['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }));
    const deployment = await cluster.poll(`/apis/apps/v1/namespaces/${ns}/deployments/${ex.name}`, (b) => b.status?.availableReplicas === 1, 90_000, `the ${mode} Deployment available\n${kubelet.timeline()}`);
    assert.is(deployment.status.readyReplicas, 1);
    const pods = (await cluster.api.must('GET', `/api/v1/namespaces/${ns}/pods`)).items;
    assert.is(pods.length, 1);
    const pod = pods[0];
    const holder = `drainguard.dev/holder-${pod.metadata.uid}`;
    const lease = `/apis/coordination.k8s.io/v1/namespaces/${ns}/leases/drainguard-${pod.metadata.uid}`;

    // The guard: on every object, the stale holder swept, the Lease owned by the pod and renewed.
    for (const o of guarded) {
      await cluster.poll(pathOf(o), (b) => b.metadata?.finalizers?.includes(holder) && !b.metadata.finalizers.includes(STALE_HOLDER), 20_000, `${holder} on ${o.kind}/${o.metadata.name}, ${STALE_HOLDER} swept`);
    }
    const first = await cluster.poll(lease, (_b, s) => s === 200, 10_000, 'the holder Lease');
    assert.equal(first.metadata.ownerReferences.map((r: any) => [r.kind, r.uid]), [['Pod', pod.metadata.uid]]);
    assert.is(first.metadata.labels['app.kubernetes.io/managed-by'], 'drainguard');
    await cluster.poll(lease, (b) => b.spec.renewTime !== first.spec.renewTime, 10_000, 'a renewal of the Lease').catch(async (err: Error) => {
      // Still a failure; what came after says why (a late renewal after a request that hung, or none).
      const late = await cluster.poll(lease, (b) => b.spec.renewTime !== first.spec.renewTime, 15_000, 'a late renewal').then((b) => `renewed late, at ${b.spec.renewTime}`, () => 'not renewed 15 s later either');
      const lines = drainguardLogs(kubelet).filter((l) => l.level !== 'info' || l.msg.startsWith('guard')).map((l) => JSON.stringify(l));
      throw new Error(`${err.message}\n${late}; drainguard's warnings and guard lines:\n${lines.join('\n')}`);
    });
    const guard = await kubelet.process(pod.metadata.name, guardContainer);
    const operator = mode === 'wrap' ? guard : await kubelet.process(pod.metadata.name, 'manager');
    await operator.line('work done 0', 20_000);

    // The uninstall: everything but the Namespace, as kubectl deletes it (background), leaving out
    // drainguard's own RBAC by its label. Watched from before the delete: the release can come
    // within a few hundred ms.
    const own = guarded.filter((o) => o.metadata.labels?.['app.kubernetes.io/name'] === 'drainguard');
    assert.is(own.length, 4);
    const watches = await Promise.all(guarded.map((o) => watchObject(pathOf(o))));
    const uninstall = uninstallAs === naive ? objects : objects.filter((o) => o.kind !== 'Namespace');
    try {
      await uninstallAs(uninstall, guarded, own, ns);
      await kubelet.event((e) => e.pod === pod.metadata.name && e.what === 'deleted 200', 60_000, 'the pod stopped and deleted by the kubelet');
      const released = guard.logs().find((l) => l.msg === 'guard released');
      assert.ok(released, `released whole, nothing refused:\n${guard.stderr.join('\n')}`);
      for (const o of guarded) await cluster.poll(pathOf(o), (_b, s) => s === 404, 40_000, `${o.kind}/${o.metadata.name} gone`);
    } finally {
      for (const w of watches) w.stop.abort();
    }
    for (const [i, o] of guarded.entries()) {
      const seen = watches[i]!.events;
      const held = seen.findIndex((e) => e.type === 'MODIFIED' && e.object.metadata.deletionTimestamp && e.object.metadata.finalizers?.includes(holder));
      const released = seen.findIndex((e) => e.type === 'MODIFIED' && !e.object.metadata.finalizers?.includes(holder));
      const gone = seen.findIndex((e) => e.type === 'DELETED');
      if (own.includes(o) && uninstallAs !== naive) {
        assert.ok(held === -1 && released !== -1 && gone > released, `${o.kind}/${o.metadata.name}: kept, released by the pod, then deleted (${seen.map((e) => e.type)})`);
      } else {
        assert.ok(held !== -1 && gone > held, `${o.kind}/${o.metadata.name}: deleted, kept by the finalizer, then gone (${seen.map((e) => e.type)})`);
      }
    }
    await cluster.poll(lease, (_b, s) => s === 404, 15_000, 'the Lease gone');
    await cluster.poll(`/api/v1/namespaces/${ns}/pods`, (b) => b.items.length === 0, 15_000, 'no pod');

    if (uninstallAs === naive) {
      // No order was safe: drainguard's own RBAC was pinned to the release anchor, and went after it.
      const pinned = guard.logs().find((l) => l.msg.startsWith('no safe order: pinned'));
      assert.ok(pinned, guard.stderr.join('\n'));
      assert.equal([(pinned.pinned as string[]).length, pinned.notPinned], [5, []], JSON.stringify(pinned));
      await cluster.poll(`/api/v1/namespaces/${ns}`, (_b, s) => s === 404, 60_000, `namespace ${ns} gone, nothing left in it`);
    }
    // It drained before it stopped, and released after.
    const msgs = guard.logs().map((l) => l.msg);
    const released = msgs.findIndex((m) => m === 'guard released' || m.startsWith('guard released in part'));
    assert.ok(msgs.includes('drain started') && released !== -1, `${guardContainer} logged "drain started" and "guard released": ${msgs.join(' | ')}`);
    assert.ok(msgs.indexOf('drain started') < released);
    assert.ok(operator.stdout.includes('signal SIGTERM'), 'the operator got its stop signal');
    assert.not.ok(operator.stdout.some((l) => l.startsWith('work interrupted')), 'no reconcile interrupted');
    if (mode !== 'wrap') {
      const hook = kubelet.events.find((e) => e.pod === pod.metadata.name && e.container === 'manager' && e.what === 'preStop ended: succeeded');
      assert.ok(hook, `the manager's preStop hook (drainguard prestop) succeeded\n${kubelet.timeline()}`);
      const events = (await cluster.api.must('GET', `/api/v1/namespaces/${ns}/events?fieldSelector=involvedObject.uid%3D${pod.metadata.uid}`)).items.map((e: any) => e.reason);
      for (const reason of ['DrainStarted', 'Drained']) assert.ok(events.includes(reason), `Event ${reason} on the pod: ${events}`);
    }
    // Only the start-up advice about a guarded ServiceAccount's tokens (docs/guard.md) is expected.
    const complaints = drainguardLogs(kubelet).filter((l) => (l.level === 'warn' || l.level === 'error') && !l.msg.startsWith('a guarded ServiceAccount keeps its object, not its tokens'));
    const told = complaints.map((l) => `${l.container} ${l.level} "${l.msg}"${l.error ? ` (${String(l.error).slice(0, 300)})` : ''}`);
    assert.equal(told, [], `no other warning or error from drainguard: ${told.join('; ')}`);
    assert.equal(kubelet.errors, []);
  } catch (err) {
    throw new Error(`${(err as Error).message}\nkubelet:\n${kubelet.timeline()}\n${describeLogs(kubelet)}`, { cause: err });
  } finally {
    await kubelet.stop();
    // What a failed run left: finalizers stripped so nothing stays stuck, then deleted.
    for (const o of [...guarded, ...objects.filter((x) => x.kind === 'Namespace')]) {
      await cluster.api.call('PATCH', pathOf(o), { metadata: { finalizers: null } }, 'application/merge-patch+json');
      await cluster.api.call('DELETE', pathOf(o));
    }
    await cluster.poll(`/api/v1/namespaces/${ns}`, (_b, s) => s === 404, 60_000, `namespace ${ns} gone`);
  }
}

/**
 * docs/guard.md's uninstall: everything but the Namespace, leaving out drainguard's own RBAC
 * by its label; the release sweeps and then deletes drainguard's own RBAC, once no holder is left.
 */
const byList: Uninstall = async (uninstall, guarded, own, namespace) => {
  cluster.kubectl(['delete', '--wait=false', '-l', 'app.kubernetes.io/name!=drainguard', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: uninstall }));
  // drainguard's own RBAC stays until no holder is left.
  for (const o of own) assert.is((await cluster.api.call('GET', pathOf(o))).status, 200, `${o.kind}/${o.metadata.name} kept`);
  const keys = (list: KubeObject[]) => list.map((o) => `${o.kind.toLowerCase()}/${o.metadata.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata.name}`).join(',');
  const after = drainguard(['release', '--pod-namespace', namespace, '--guard', keys(guarded), '--wait', '30s', '--delete', keys(own)], { KUBECONFIG: cluster.cluster.adminKubeconfig });
  assert.equal((await after.exit(40_000)).code, 0, after.stdout.join('\n'));
};

/**
 * `kubectl delete -f` of the whole manifest, Namespace and drainguard's own RBAC included, as a user
 * who has not read docs/guard.md does: nothing may be left all the same, and nobody runs a hook.
 */
const naive: Uninstall = async (uninstall) => {
  cluster.kubectl(['delete', '--wait=false', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: uninstall }));
};

/** docs/deploy.md's uninstall of a kubebuilder project: its three commands, as a user types them. */
const byOverlay = (overlay: string): Uninstall => async (_uninstall, _guarded, own) => {
  cluster.kubectl(['delete', '--wait=false', '-k', overlay, '-l', 'drainguard.dev/uninstall!=last']);
  for (const o of own) assert.is((await cluster.api.call('GET', pathOf(o))).status, 200, `${o.kind}/${o.metadata.name} kept`);
  const render = execFileSync('kubectl', ['kustomize', overlay], { encoding: 'utf8' });
  // kubectl kustomize … | drainguard release --wait … -f -, its stdin the render.
  const after = spawn(EXE, ['release', '--wait', '30s', '-f', '-'], { env: { PATH: process.env.PATH, KUBECONFIG: cluster.cluster.adminKubeconfig }, stdio: ['pipe', 'pipe', 'pipe'] });
  const out: string[] = [];
  after.stdout.on('data', (b: Buffer) => out.push(b.toString()));
  after.stderr.on('data', (b: Buffer) => out.push(b.toString()));
  after.stdin.end(render);
  const [code] = (await within(40_000, 'drainguard release -f - to exit', once(after, 'close'))) as [number];
  assert.is(code, 0, out.join(''));
  cluster.kubectl(['delete', '--wait=false', '-k', overlay, '--ignore-not-found']);
};

/** Every watch event of one object, from now until `stop`. */
async function watchObject(path: string): Promise<{ events: WatchEvent[]; stop: AbortController }> {
  const name = path.slice(path.lastIndexOf('/') + 1);
  const collection = `${path.slice(0, path.lastIndexOf('/'))}?fieldSelector=metadata.name%3D${encodeURIComponent(name)}`;
  const list = await cluster.api.must('GET', collection);
  const events: WatchEvent[] = [];
  const stop = new AbortController();
  void cluster.api.watch(collection, list.metadata.resourceVersion, (e) => events.push(e), stop.signal);
  return { events, stop };
}

function describeLogs(kubelet: Kubelet): string {
  return kubelet.events
    .filter((e) => e.proc)
    .map((e) => `--- ${e.pod}/${e.container} ${e.what}\n${(e.proc as Proc).stderr.slice(-30).join('\n')}\n${(e.proc as Proc).stdout.slice(-10).join('\n')}`)
    .join('\n');
}

test('wrap: applied, available, guarded, uninstalled: drained, released, nothing left', () => scenario('wrap', 'manager'));
test("wrap, kubectl delete -f of the whole manifest, drainguard's own RBAC and the Namespace with it: released, nothing left, no hook", () =>
  scenario('wrap', 'manager', undefined, naive));
test('native sidecar: the same, with the preStop hook and Events on the pod', () => scenario('native-sidecar', 'drainguard'));
test('plain sidecar: the same', () => scenario('sidecar', 'drainguard'));
test("kubebuilder's scaffold, wrap: docs/deploy.md's overlay and uninstall, prefix and all", async () => {
  const project = kubebuilderProject('wrap', `kb-${randomBytes(4).toString('hex')}`, tempDir());
  await scenario('wrap', 'manager', project, byOverlay(project.overlay));
});

test("kubebuilder's namespace-scoped scaffold, sidecar: the overlay with kubebuilder-namespaced, its Roles held and released", async () => {
  const project = kubebuilderProject('sidecar', `kn-${randomBytes(4).toString('hex')}`, tempDir(), 'namespaced');
  assert.ok(project.objects.some((o) => o.kind === 'Role' && o.metadata.name.endsWith('-manager-role')), 'manager-role a Role');
  await scenario('sidecar', 'drainguard', project, byOverlay(project.overlay));
});

test('guard-more, native sidecar: docs/deploy.md\'s overlay for more RBAC, a binding to view, leader election in kube-system, an aggregation source, all held and released', async () => {
  const id = `sh-${randomBytes(4).toString('hex')}`;
  const dir = shapesOverlay(tempDir(), 'native-sidecar', { name: id, namespace: `${id}-system` });
  const objects = parseObjects(execFileSync('kubectl', ['kustomize', dir], { encoding: 'utf8' }));
  assert.equal(objects.filter((o) => o.metadata.namespace === 'kube-system').map((o) => o.kind).sort(), ['Role', 'RoleBinding']);
  await scenario('native-sidecar', 'drainguard', { objects, namespace: `${id}-system`, name: id, image: `example.com/${id}`, entrypoint: true });
});

test.run();
