// The plugin's output on the real control plane: the cluster-scoped project the
// kubebuilder CLI scaffolds (test/support/kubebuilder.ts, of APPLY_DOMAIN: a
// CRD no other file has, for the overlay applies and deletes it), renamed as a
// user's project is (its namespace and namePrefix), then `kubebuilder edit
// --plugins=drainguard.dev/v1-alpha` by the real kubebuilder. Its pods run by
// the kubelet stand-in, the operator the example's (test/fixtures/operator.ts,
// in place of /manager: this file is about what the manifests do, the
// Guestbook manager's drain is test/helm/kubebuilder.test.ts's, on the render
// plugin.test.ts proves the plugin's chart equals).
//
// config/drainguard, rendered by the real kustomize with this checkout's
// components, applied with `kubectl apply -k`: the guard's finalizers on every
// object the Deployment guards (the manager's ClusterRole and binding among
// them); removed with docs/deploy.md's three commands: the binding held while
// the pod drains, then nothing left (no object of the render, no Lease, no
// holder on any RBAC object). The chart, installed by the real helm and
// uninstalled: the same guard, and nothing left. The controls, config/default
// as kubebuilder made it deleted the same way, and the chart with
// drainguard.enabled=false uninstalled: once the manager has SIGTERM, its
// binding is gone while its pod still runs (the operator there ignores
// SIGTERM until its grace period ends, as work in flight goes on).

import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { randomBytes } from 'node:crypto';
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { guardTargetKey, parseGuardList } from '../../src/config/guard-list.ts';
import { type KubeObject, parseObjects } from '../deploy/support/manifests.ts';
import { adminHelm } from '../helm/support/admin.ts';
import { cleanupCharts, stageChart } from '../helm/support/charts.ts';
import { APPLY_DOMAIN, MANAGER_IMAGE, scaffold } from '../support/kubebuilder.ts';
import { type KubeletCluster, kubeletCluster } from '../support/kubelet/cluster.ts';
import { Kubelet } from '../support/kubelet/index.ts';
import { DRAINGUARD_IMAGE, drainguardImage, operatorImage } from '../support/kubelet/runners.ts';
import { EXE, fixture, tempDir } from '../support/proc.ts';
import { within } from '../support/wait.ts';
import { KEY, installPlugin, kubebuilder, localOverlay } from './support/plugin.ts';

const HOLDER = 'drainguard.dev/holder-';
const RBAC = '/apis/rbac.authorization.k8s.io/v1';

let cluster: KubeletCluster;
let project = '';
/** The project's name: its namespace is NAME-system, its objects NAME-… */
const NAME = `kp-${randomBytes(3).toString('hex')}`;
test.before(async () => {
  cluster = await kubeletCluster();
  project = join(tempDir(), NAME);
  cpSync(scaffold(APPLY_DOMAIN).dir, project, { recursive: true });
  const defaults = join(project, 'config/default/kustomization.yaml');
  writeFileSync(
    defaults,
    readFileSync(defaults, 'utf8')
      .replace('namespace: guestbook-system', `namespace: ${NAME}-system`)
      .replace('namePrefix: guestbook-', `namePrefix: ${NAME}-`),
  );
  kubebuilder(installPlugin(), project, ['edit', `--plugins=${KEY}`]);
});
test.after(cleanupCharts);

/** The API path of a guard list entry's object. */
function pathOf(t: { kind: string; namespace?: string; name: string }): string {
  const ns = t.namespace ? `/namespaces/${t.namespace}` : '';
  return t.kind === 'serviceaccount' ? `/api/v1${ns}/serviceaccounts/${t.name}` : `${RBAC}${ns}/${t.kind}s/${t.name}`;
}

/** The API path of a rendered object (CRD, Namespace, RBAC, Deployment, ...). */
function objectPath(o: KubeObject): string {
  const base = o.apiVersion === 'v1' ? '/api/v1' : `/apis/${o.apiVersion}`;
  const plural = o.kind === 'NetworkPolicy' ? 'networkpolicies' : `${o.kind.toLowerCase()}s`;
  return `${base}${o.metadata.namespace ? `/namespaces/${o.metadata.namespace}` : ''}/${plural}/${o.metadata.name}`;
}

/** The objects a Deployment's DRAINGUARD_GUARD names, as API paths, by key. */
function guardedOf(deployment: KubeObject): Map<string, string> {
  const spec = deployment.spec.template.spec;
  const env = [...(spec.initContainers ?? []), ...spec.containers].flatMap((c: any) => c.env ?? []);
  const list = env.find((e: any) => e.name === 'DRAINGUARD_GUARD')?.value as string;
  assert.ok(list, 'the Deployment names what it guards');
  return new Map(parseGuardList(list, 'DRAINGUARD_GUARD').map((t) => [guardTargetKey(t), pathOf(t)]));
}

/** The kubelet for NAMESPACE, its operator given ENV. */
const kubeletFor = (namespace: string, env: NodeJS.ProcessEnv = {}) =>
  Kubelet.start({
    cluster: cluster.access,
    namespaces: [namespace],
    images: {
      [DRAINGUARD_IMAGE]: drainguardImage(),
      [MANAGER_IMAGE]: operatorImage(fixture('operator.ts'), { FIXTURE_WORK: '300', ...env }),
    },
  });

/** The namespace's one pod, once its Deployment is available. */
async function availablePod(namespace: string, deployment: string, kubelet: Kubelet): Promise<any> {
  await cluster.poll(
    `/apis/apps/v1/namespaces/${namespace}/deployments/${deployment}`,
    (b) => b.status?.availableReplicas === 1,
    90_000,
    `${deployment} available\n${kubelet.timeline()}`,
  );
  const pods = (await cluster.api.must('GET', `/api/v1/namespaces/${namespace}/pods`)).items;
  assert.is(pods.length, 1);
  return pods[0];
}

/** Nothing of the release is left: the pod's holder on no RBAC object or ServiceAccount of the cluster, no Lease of it. */
async function nothingLeft(pod: any, paths: string[]): Promise<void> {
  for (const path of paths) await cluster.poll(path, (_b, s) => s === 404, 60_000, `${path} gone`);
  const holder = `${HOLDER}${pod.metadata.uid}`;
  const lists = [`${RBAC}/clusterroles`, `${RBAC}/clusterrolebindings`, `${RBAC}/roles`, `${RBAC}/rolebindings`, '/api/v1/serviceaccounts'];
  for (const list of lists) {
    const held = (await cluster.api.must('GET', list)).items.filter(
      (o: any) => o.metadata.finalizers?.includes(holder) || (o.metadata.deletionTimestamp && o.metadata.name.startsWith(NAME)),
    );
    assert.equal(
      held.map((o: any) => o.metadata.name),
      [],
      `nothing in ${list} held by the pod or terminating`,
    );
  }
  await cluster.poll(
    `/apis/coordination.k8s.io/v1/namespaces/${pod.metadata.namespace}/leases/drainguard-${pod.metadata.uid}`,
    (_b, s) => s === 404,
    15_000,
    'the Lease gone',
  );
}

/** drainguard logged that the drain started, and later that the guard was released whole. */
function drainedThenReleased(logs: readonly { msg: string }[]): boolean {
  const msgs = logs.map((l) => l.msg);
  const drain = msgs.indexOf('drain started');
  return drain !== -1 && msgs.indexOf('guard released', drain) > drain;
}

/** What a failed run left at PATHS: finalizers stripped so nothing stays stuck, then deleted. */
async function strip(paths: Iterable<string>): Promise<void> {
  for (const path of paths) {
    if ((await cluster.api.call('GET', path)).status !== 200) continue;
    await cluster.api.call('PATCH', path, { metadata: { finalizers: null } }, 'application/merge-patch+json');
    await cluster.api.call('DELETE', path);
  }
}

/**
 * The controls' failure: once the manager has its SIGTERM, its binding is gone while the pod
 * is still there. Its operator ignores SIGTERM (work still in flight, as a manager's reconciles
 * go on after the signal) until the grace period's SIGKILL.
 */
async function bindingGoneWhileRunning(kubelet: Kubelet, pod: any, binding: string): Promise<void> {
  const name = pod.metadata.name;
  await kubelet.event((e) => e.pod === name && e.container === 'manager' && e.what === 'signal SIGTERM', 60_000, 'SIGTERM to the manager');
  await cluster.poll(binding, (_b, s) => s === 404, 30_000, 'the binding gone: nothing holds it');
  const still = await cluster.api.call('GET', `/api/v1/namespaces/${pod.metadata.namespace}/pods/${name}`);
  assert.is(still.status, 200, 'while the manager pod is still there');
  await kubelet.event((e) => e.pod === name && e.what === 'deleted 200', 60_000, 'the pod stopped (its grace period over) and deleted');
}

function render(overlay: string): KubeObject[] {
  return parseObjects(cluster.kubectl(['kustomize', overlay]));
}

test("config/drainguard applied with kubectl: the manager's RBAC guarded, held through the drain, deleted; nothing left", async () => {
  const overlay = localOverlay(project);
  const objects = render(overlay);
  const namespace = `${NAME}-system`;
  const deployment = objects.find((o) => o.kind === 'Deployment')!;
  const guarded = guardedOf(deployment);
  const managerRole = `clusterrole/${NAME}-manager-role`;
  const managerBinding = `clusterrolebinding/${NAME}-manager-rolebinding`;
  for (const key of [managerRole, managerBinding]) assert.ok(guarded.has(key), `${key} in ${[...guarded.keys()]}`);
  const kubelet = await kubeletFor(namespace);

  try {
    cluster.kubectl(['apply', '-k', overlay]);
    const pod = await availablePod(namespace, deployment.metadata.name, kubelet);
    const holder = `${HOLDER}${pod.metadata.uid}`;
    for (const [key, path] of guarded)
      await cluster.poll(path, (b) => b.metadata?.finalizers?.includes(holder), 30_000, `the guard's finalizer on ${key}`);
    const guard = await kubelet.process(pod.metadata.name, 'manager');
    await guard.line('work done 0', 20_000);

    // docs/deploy.md's uninstall, its three commands as a user types them.
    cluster.kubectl(['delete', '--wait=false', '-k', overlay, '-l', 'drainguard.dev/uninstall!=last']);
    const binding = await cluster.api.must('GET', guarded.get(managerBinding)!);
    assert.ok(binding.metadata.deletionTimestamp && binding.metadata.finalizers.includes(holder), 'the binding deleted, held by the pod');
    await guard.log('drain started', 30_000);
    // kubectl kustomize … | drainguard release --wait …, run apart: the kubelet stand-in in this process goes on meanwhile.
    const release = spawn('sh', ['-c', 'kubectl kustomize "$0" | "$1" release --wait 60s -f -', overlay, EXE], {
      env: { PATH: process.env.PATH, HOME: tempDir(), KUBECONFIG: cluster.cluster.adminKubeconfig },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const said: string[] = [];
    for (const stream of [release.stdout, release.stderr]) stream.on('data', (b: Buffer) => said.push(b.toString()));
    const [code] = (await within(90_000, 'drainguard release --wait to exit', once(release, 'close'))) as [number];
    assert.is(code, 0, said.join(''));
    cluster.kubectl(['delete', '--wait=false', '-k', overlay, '--ignore-not-found']);
    await kubelet.event((e) => e.pod === pod.metadata.name && e.what === 'deleted 200', 60_000, 'the pod stopped and deleted');
    assert.ok(
      drainedThenReleased(guard.logs()),
      `drained, then released: ${guard
        .logs()
        .map((l) => l.msg)
        .join(' | ')}`,
    );
    await nothingLeft(pod, [...objects.map(objectPath)]);
    assert.equal(kubelet.errors, []);
  } catch (err) {
    throw new Error(`${(err as Error).message}\nkubelet:\n${kubelet.timeline()}`, { cause: err });
  } finally {
    await kubelet.stop();
    await strip([...guarded.values(), ...objects.map(objectPath)]);
  }
});

test("the control: config/default as kubebuilder made it, deleted the same way: the manager's binding gone while its pod runs", async () => {
  const overlay = localOverlay(project, 'default');
  const objects = render(overlay);
  const namespace = `${NAME}-system`;
  const deployment = objects.find((o) => o.kind === 'Deployment')!;
  assert.not.ok(JSON.stringify(deployment).includes('DRAINGUARD_GUARD'), 'no drainguard in config/default');
  const binding = `${RBAC}/clusterrolebindings/${NAME}-manager-rolebinding`;
  const kubelet = await kubeletFor(namespace, { FIXTURE_ON_TERM: 'ignore' });
  try {
    cluster.kubectl(['apply', '-k', overlay]);
    const pod = await availablePod(namespace, deployment.metadata.name, kubelet);
    cluster.kubectl(['delete', '--wait=false', '-k', overlay]);
    await bindingGoneWhileRunning(kubelet, pod, binding);
    await nothingLeft(pod, objects.map(objectPath));
  } catch (err) {
    throw new Error(`${(err as Error).message}\nkubelet:\n${kubelet.timeline()}`, { cause: err });
  } finally {
    await kubelet.stop();
    await strip(objects.map(objectPath));
  }
});

test("the chart the plugin edited, installed by helm: the release's RBAC guarded; helm uninstall: nothing left", async () => {
  const namespace = await cluster.namespace('kp-chart');
  const chart = stageChart(join(project, 'dist/chart'));
  const helm = adminHelm(cluster.cluster);
  const kubelet = await kubeletFor(namespace);
  let guarded = new Map<string, string>();
  try {
    // No CRD (the example operator has no kind; helm would keep the chart's); metrics off: :8443 is no port the pod declares.
    const flags = ['-n', namespace, '--set', 'crd.enabled=false', '--set', 'metrics.enabled=false'];
    const install = await helm(['install', NAME, chart, ...flags, '--wait', '--timeout', '90s']);
    assert.is(install.code, 0, install.stderr + install.stdout);
    const manifest = await helm(['get', 'manifest', NAME, '-n', namespace]);
    const objects = parseObjects(manifest.stdout).map((o) => ({
      ...o,
      metadata: { namespace: o.kind.startsWith('Cluster') ? undefined : namespace, ...o.metadata },
    }));
    const deployment = objects.find((o) => o.kind === 'Deployment')!;
    guarded = guardedOf(deployment);
    const prefix = `${NAME}-guestbook`;
    for (const key of [`clusterrole/${prefix}-manager-role`, `clusterrolebinding/${prefix}-manager-rolebinding`])
      assert.ok(guarded.has(key), `${key} in ${[...guarded.keys()]}`);
    const pod = (await cluster.api.must('GET', `/api/v1/namespaces/${namespace}/pods`)).items[0];
    assert.ok(pod, 'the manager pod');
    const holder = `${HOLDER}${pod.metadata.uid}`;
    for (const [key, path] of guarded)
      await cluster.poll(path, (b) => b.metadata?.finalizers?.includes(holder), 30_000, `the guard's finalizer on ${key}`);
    const guard = await kubelet.process(pod.metadata.name, 'manager');

    const uninstall = await helm(['uninstall', NAME, '-n', namespace, '--wait', '--timeout', '90s']);
    assert.is(uninstall.code, 0, uninstall.stderr + uninstall.stdout);
    await kubelet.event((e) => e.pod === pod.metadata.name && e.what === 'deleted 200', 60_000, 'the pod stopped and deleted');
    assert.ok(
      drainedThenReleased(guard.logs()),
      `drained, then released: ${guard
        .logs()
        .map((l) => l.msg)
        .join(' | ')}`,
    );
    await nothingLeft(pod, [...objects.map(objectPath), ...guarded.values()]);
    assert.equal(kubelet.errors, []);
  } catch (err) {
    throw new Error(`${(err as Error).message}\nkubelet:\n${kubelet.timeline()}`, { cause: err });
  } finally {
    await helm(['uninstall', NAME, '-n', namespace, '--no-hooks', '--ignore-not-found']);
    await kubelet.stop();
    await strip(guarded.values());
  }
});

test("the chart's control (drainguard.enabled=false), helm uninstall: the manager's binding gone while its pod runs", async () => {
  const namespace = await cluster.namespace('kp-bare');
  const chart = stageChart(join(project, 'dist/chart'));
  const helm = adminHelm(cluster.cluster);
  const release = `${NAME}b`;
  const kubelet = await kubeletFor(namespace, { FIXTURE_ON_TERM: 'ignore' });
  const flags = ['-n', namespace, '--set', 'drainguard.enabled=false', '--set', 'crd.enabled=false', '--set', 'metrics.enabled=false'];
  let paths: string[] = [];
  try {
    const install = await helm(['install', release, chart, ...flags, '--wait', '--timeout', '90s']);
    assert.is(install.code, 0, install.stderr + install.stdout);
    const manifest = await helm(['get', 'manifest', release, '-n', namespace]);
    paths = parseObjects(manifest.stdout).map((o) =>
      objectPath({ ...o, metadata: { namespace: o.kind.startsWith('Cluster') ? undefined : namespace, ...o.metadata } }),
    );
    assert.not.ok(manifest.stdout.includes('DRAINGUARD_GUARD'), 'no drainguard in the render');
    const pod = (await cluster.api.must('GET', `/api/v1/namespaces/${namespace}/pods`)).items[0];
    assert.ok(pod, 'the manager pod');
    const uninstall = helm(['uninstall', release, '-n', namespace, '--wait', '--timeout', '90s']);
    await bindingGoneWhileRunning(kubelet, pod, `${RBAC}/clusterrolebindings/${release}-guestbook-manager-rolebinding`);
    const done = await uninstall;
    assert.is(done.code, 0, done.stderr + done.stdout);
    await nothingLeft(pod, paths);
  } catch (err) {
    throw new Error(`${(err as Error).message}\nkubelet:\n${kubelet.timeline()}`, { cause: err });
  } finally {
    await helm(['uninstall', release, '-n', namespace, '--no-hooks', '--ignore-not-found']);
    await kubelet.stop();
    await strip(paths);
  }
});

test.run();
