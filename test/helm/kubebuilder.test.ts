// kubebuilder's chart (test/fixtures/kubebuilder/dist/chart) with drainguard
// added by docs/helm.md's steps, through the real helm on the control plane,
// its pod run by the kubelet stand-in in wrap mode (the scaffold's 10 s grace
// period raised). The manager is test/helm/fixtures/operator.ts: it keeps a
// ConfigMap of state and deletes it as it stops once it sees its
// ClusterRoleBinding deleted (an uninstall), with the rights of that binding.
// With drainguard, helm uninstall --wait drains it, its cleanup is allowed
// (the binding held by the guard), it releases, the post-delete hook deletes
// drainguard's own RBAC, and nothing is left: no RBAC of the release, no
// finalizer, no Lease, no pod, no state. Without drainguard
// (drainguard.enabled=false, the same chart) the cleanup is refused and the
// state is left behind: the failure is real. (The chart's CRD stays out: the
// cluster is shared with the kustomize test of the same project, which applies it.)

import { readFileSync } from 'node:fs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { type TestCluster, useCluster } from '../support/cluster/index.ts';
import { Kubelet } from '../support/kubelet/index.ts';
import { type HelmResult, helmRun } from '../support/helm.ts';
import { adoptKubebuilderChart } from './support/adopt.ts';
import { cleanupCharts } from './support/charts.ts';
import { HOLDER, RBAC, exampleImages, holdersOf } from './support/example.ts';

let cluster: TestCluster;
let chart: string;
test.before(async () => {
  cluster = await useCluster();
  chart = adoptKubebuilderChart();
});
test.after(cleanupCharts);

const access = () => ({ server: cluster.url, ca: cluster.ca, cert: readFileSync(cluster.state.adminCert, 'utf8'), key: readFileSync(cluster.state.adminKey, 'utf8') });
const helm = (args: string[]): Promise<HelmResult> => helmRun([...args, '--kubeconfig', cluster.adminKubeconfig], 150_000);

async function scenario(release: string, drainguard: boolean): Promise<{ out: string[]; ns: string }> {
  const ns = (await cluster.namespace(`kb-${release}`)).name;
  const prefix = `${release}-guestbook`;
  const images = exampleImages({ POD_NAMESPACE: ns, FIXTURE_NAME: `${prefix}-manager-rolebinding`, FIXTURE_GROUP: 'webapp.my.domain' });
  const kubelet = await Kubelet.start({ cluster: access(), namespaces: [ns], images: { 'ghcr.io/drainguard/drainguard': images['ghcr.io/drainguard/drainguard'], 'example.com/guestbook': images['example.com/example-operator'] } });
  const own = `drainguard:${ns}:${prefix}-controller-manager`;
  const operatorRbac = [
    `${RBAC}/clusterroles/${prefix}-manager-role`, `${RBAC}/clusterrolebindings/${prefix}-manager-rolebinding`,
    `${RBAC}/clusterroles/${prefix}-metrics-auth-role`, `${RBAC}/clusterrolebindings/${prefix}-metrics-auth-rolebinding`,
    `${RBAC}/namespaces/${ns}/roles/${prefix}-leader-election-role`, `${RBAC}/namespaces/${ns}/rolebindings/${prefix}-leader-election-rolebinding`,
    `/api/v1/namespaces/${ns}/serviceaccounts/${prefix}-controller-manager`,
  ];
  const ownRbac = drainguard ? [`${RBAC}/clusterroles/${own}`, `${RBAC}/clusterrolebindings/${own}`, `${RBAC}/namespaces/${ns}/roles/${own}`, `${RBAC}/namespaces/${ns}/rolebindings/${own}`] : [];
  try {
    const install = await helm(['install', release, chart, '-n', ns, '--set', 'drainguard.mode=wrap', '--set', `drainguard.enabled=${drainguard}`, '--set', 'crd.enable=false', '--wait', '--timeout', '90s']);
    assert.is(install.code, 0, install.stderr + install.stdout);
    const [pod] = await cluster.api.list(`/api/v1/namespaces/${ns}/pods`);
    assert.ok(pod, 'the manager pod');
    const manager = await kubelet.process(pod.metadata.name, 'manager');
    await manager.line('create state 201', 20_000);
    if (drainguard) {
      assert.is(pod.spec.terminationGracePeriodSeconds, 60, "the scaffold's 10 s raised");
      for (const path of [...operatorRbac, ...ownRbac]) {
        await cluster.waitFor(async () => holdersOf(await cluster.api.get(path)).includes(`${HOLDER}${pod.metadata.uid}`), 30_000, `the guard on ${path}`);
      }
      await manager.line('ready', 20_000);
    }
    const uninstall = await helm(['uninstall', release, '-n', ns, '--wait', '--timeout', '60s']);
    assert.is(uninstall.code, 0, uninstall.stderr + uninstall.stdout);
    await kubelet.event((e) => e.pod === pod.metadata.name && e.what === 'deleted 200', 60_000, 'the pod stopped and deleted by the kubelet');
    for (const path of [...operatorRbac, ...ownRbac]) await cluster.waitFor(async () => !(await cluster.api.get(path)), 60_000, `${path} gone`);
    // The holder Lease, owned by the Pod, goes with it (the garbage collector, a moment after).
    await cluster.emptied(`/apis/coordination.k8s.io/v1/namespaces/${ns}/leases`, 'Lease');
    assert.equal(kubelet.errors, []);
    return { out: [...manager.stdout], ns };
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
}

test('with drainguard: helm uninstall --wait drains the manager, its cleanup gets its RBAC, nothing is left', async () => {
  const { out, ns } = await scenario('shop', true);
  assert.ok(out.includes('drain') && out.includes('saw clusterrolebinding terminating'), out.join(' | '));
  assert.ok(out.includes('stop: delete state 200'), `the cleanup allowed: ${out.join(' | ')}`);
  assert.not.ok(out.includes('interrupted'), 'no reconcile interrupted');
  assert.equal(await cluster.api.get(`/api/v1/namespaces/${ns}/configmaps/example-operator-state`), undefined, 'no state left');
});

test('without drainguard (drainguard.enabled=false): the same cleanup is refused, the state left behind', async () => {
  const { out, ns } = await scenario('bare', false);
  assert.ok(out.includes('stop: delete state 403'), `the cleanup refused: ${out.join(' | ')}`);
  assert.ok(await cluster.api.get(`/api/v1/namespaces/${ns}/configmaps/example-operator-state`), 'the state left');
});

test.run();
