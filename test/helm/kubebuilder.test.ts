// kubebuilder's chart (test/fixtures/kubebuilder/dist/chart) with drainguard
// added by docs/helm.md's steps, through the real helm on the control plane,
// its pod run by the kubelet stand-in (wrap mode, the scaffold's 10 s grace
// period raised): helm install, the guard set on what the chart binds to the
// manager's ServiceAccount (its names following the release), a reconcile in
// flight, then helm uninstall --wait as a user types it: the pod drains and
// releases, the post-delete hook deletes drainguard's own RBAC, and nothing is
// left: no RBAC of the release, no finalizer, no Lease, no pod. (The chart's
// CRD stays out: the fixture operator does not use it, and the cluster is
// shared with the kustomize test of the same project, which applies it.)

import { readFileSync } from 'node:fs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { type TestCluster, useCluster } from '../support/cluster/index.ts';
import { Kubelet } from '../support/kubelet/index.ts';
import { DRAINGUARD_IMAGE, drainguardImage, operatorImage } from '../support/kubelet/runners.ts';
import { type HelmResult, helmRun } from '../support/helm.ts';
import { fixture } from '../support/proc.ts';
import { adoptKubebuilderChart } from './support/adopt.ts';
import { cleanupCharts } from './support/charts.ts';
import { HOLDER, RBAC, holdersOf } from './support/example.ts';

let cluster: TestCluster;
let chart: string;
test.before(async () => {
  cluster = await useCluster();
  chart = adoptKubebuilderChart();
});
test.after(cleanupCharts);

const access = () => ({ server: cluster.url, ca: cluster.ca, cert: readFileSync(cluster.state.adminCert, 'utf8'), key: readFileSync(cluster.state.adminKey, 'utf8') });
const helm = (args: string[]): Promise<HelmResult> => helmRun([...args, '--kubeconfig', cluster.adminKubeconfig], 150_000);

test('helm install, guarded by the names of the release, helm uninstall --wait: drained, released, nothing left', async () => {
  const ns = (await cluster.namespace('kb-helm')).name;
  const release = 'shop';
  const kubelet = await Kubelet.start({
    cluster: access(), namespaces: [ns],
    images: { [DRAINGUARD_IMAGE]: drainguardImage(), 'example.com/guestbook': operatorImage(fixture('operator.ts'), { FIXTURE_WORK: '300' }) },
  });
  const prefix = `${release}-guestbook`;
  const own = `drainguard:${ns}:${prefix}-controller-manager`;
  const operatorRbac = [
    `${RBAC}/clusterroles/${prefix}-manager-role`, `${RBAC}/clusterrolebindings/${prefix}-manager-rolebinding`,
    `${RBAC}/clusterroles/${prefix}-metrics-auth-role`, `${RBAC}/clusterrolebindings/${prefix}-metrics-auth-rolebinding`,
    `${RBAC}/namespaces/${ns}/roles/${prefix}-leader-election-role`, `${RBAC}/namespaces/${ns}/rolebindings/${prefix}-leader-election-rolebinding`,
    `/api/v1/namespaces/${ns}/serviceaccounts/${prefix}-controller-manager`,
  ];
  const ownRbac = [`${RBAC}/clusterroles/${own}`, `${RBAC}/clusterrolebindings/${own}`, `${RBAC}/namespaces/${ns}/roles/${own}`, `${RBAC}/namespaces/${ns}/rolebindings/${own}`];
  try {
    const install = await helm(['install', release, chart, '-n', ns, '--set', 'drainguard.mode=wrap', '--set', 'crd.enable=false', '--wait', '--timeout', '90s']);
    assert.is(install.code, 0, install.stderr + install.stdout);
    const [pod] = await cluster.api.list(`/api/v1/namespaces/${ns}/pods`);
    assert.ok(pod, 'the manager pod');
    assert.is(pod.spec.terminationGracePeriodSeconds, 60, "the scaffold's 10 s raised");
    for (const path of [...operatorRbac, ...ownRbac]) {
      await cluster.waitFor(async () => holdersOf(await cluster.api.get(path)).includes(`${HOLDER}${pod.metadata.uid}`), 30_000, `the guard on ${path}`);
    }
    const manager = await kubelet.process(pod.metadata.name, 'manager');
    await manager.line('work start 0', 20_000);

    const uninstall = await helm(['uninstall', release, '-n', ns, '--wait', '--timeout', '60s']);
    assert.is(uninstall.code, 0, uninstall.stderr + uninstall.stdout);
    await kubelet.event((e) => e.pod === pod.metadata.name && e.what === 'deleted 200', 60_000, 'the pod stopped and deleted by the kubelet');
    assert.ok(manager.stdout.includes('work done 0') && manager.stdout.includes('signal SIGTERM'), `drained, then stopped: ${manager.stdout.join(' | ')}`);
    assert.not.ok(manager.stdout.some((l) => l.startsWith('work interrupted')), 'no reconcile interrupted');
    const msgs = manager.logs().map((l) => l.msg);
    assert.ok(msgs.includes('guard released'), msgs.join(' | '));
    for (const path of [...operatorRbac, ...ownRbac]) await cluster.waitFor(async () => !(await cluster.api.get(path)), 60_000, `${path} gone`);
    assert.equal((await cluster.api.list(`/apis/coordination.k8s.io/v1/namespaces/${ns}/leases`)).map((l: any) => l.metadata.name), [], 'no Lease');
    await cluster.waitFor(async () => (await cluster.api.list(`/api/v1/namespaces/${ns}/pods`)).length === 0, 30_000, 'no pod');
    assert.equal(kubelet.errors, []);
  } catch (err) {
    process.stderr.write(`kubelet events:\n${kubelet.timeline()}\n`);
    throw err;
  } finally {
    await helm(['uninstall', release, '-n', ns, '--no-hooks', '--ignore-not-found']);
    for (const path of [...operatorRbac, ...ownRbac]) {
      if (await cluster.api.get(path)) {
        await cluster.api.patch(path, { metadata: { finalizers: null } });
        await cluster.api.delete(path);
      }
    }
    await kubelet.stop();
  }
});

test.run();
