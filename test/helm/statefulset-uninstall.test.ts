// An operator that runs as a StatefulSet (test/helm/fixtures/charts/statefulset,
// its headless Service in the same template file), with drainguard added by
// docs/helm.md's steps, through the real helm on the control plane, its pod
// run by the kubelet stand-in in wrap mode. The operator
// (test/fixtures/cr-operator.ts) deletes its state as it stops, once it has
// seen its ClusterRoleBinding deleted, 3 s later. With drainguard the
// StatefulSet's pod holds the release's RBAC and drainguard's own, helm
// uninstall --wait deletes all of it at once, the cleanup is allowed and
// nothing is left. Without drainguard the same cleanup is refused and the state
// stays. (Before the library rendered StatefulSets, neither release had a pod.)

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { type TestCluster, useCluster } from '../support/cluster/index.ts';
import { Kubelet } from '../support/kubelet/index.ts';
import type { HelmResult } from '../support/helm.ts';
import { adminAccess, adminHelm } from './support/admin.ts';
import { cleanupCharts } from './support/charts.ts';
import { HOLDER, RBAC, exampleImages, holdersOf } from './support/example.ts';
import { adoptOwnFileShape } from './support/shapes.ts';

let cluster: TestCluster;
let chart: string;
test.before(async () => {
  cluster = await useCluster();
  chart = adoptOwnFileShape('statefulset', 'An operator that runs as a StatefulSet');
});
test.after(cleanupCharts);

const helm = (args: string[]): Promise<HelmResult> => adminHelm(cluster)(args);
const STATE = 'example-operator-state';

async function scenario(release: string, drainguard: boolean): Promise<string[]> {
  const ns = (await cluster.namespace(`sts-${release}`)).name;
  const op = `${release}-op`;
  const images = exampleImages({ FIXTURE_NAME: op, FIXTURE_STOP_AFTER_MS: '3000' });
  const kubelet = await Kubelet.start({ cluster: adminAccess(cluster), namespaces: [ns], images });
  const own = `drainguard:${ns}:${op}`;
  const operatorRbac = [
    `${RBAC}/clusterroles/${op}`,
    `${RBAC}/clusterrolebindings/${op}`,
    `/api/v1/namespaces/${ns}/serviceaccounts/${op}`,
  ];
  const ownRbac = drainguard
    ? [
        `${RBAC}/clusterroles/${own}`,
        `${RBAC}/clusterrolebindings/${own}`,
        `${RBAC}/namespaces/${ns}/roles/${own}`,
        `${RBAC}/namespaces/${ns}/rolebindings/${own}`,
      ]
    : [];
  const workload = [`/apis/apps/v1/namespaces/${ns}/statefulsets/${op}`, `/api/v1/namespaces/${ns}/services/${op}`];
  try {
    const install = await helm([
      'install',
      release,
      chart,
      '-n',
      ns,
      '--set',
      'drainguard.mode=wrap',
      '--set',
      `drainguard.enabled=${drainguard}`,
      '--wait',
      '--timeout',
      '90s',
    ]);
    assert.is(install.code, 0, install.stderr + install.stdout);
    for (const path of workload) assert.ok(await cluster.api.get(path), `${path} installed`);
    // The StatefulSet's one pod, by its stable name.
    const pod = await cluster.waitFor(() => cluster.api.get(`/api/v1/namespaces/${ns}/pods/${op}-0`), 30_000, `pod ${op}-0`);
    assert.is(pod.metadata.ownerReferences?.[0]?.kind, 'StatefulSet');
    const operator = await kubelet.process(pod.metadata.name, 'operator');
    await operator.line('create state 201', 30_000);
    if (drainguard) {
      for (const path of [...operatorRbac, ...ownRbac]) {
        await cluster.waitFor(
          async () => holdersOf(await cluster.api.get(path)).includes(`${HOLDER}${pod.metadata.uid}`),
          30_000,
          `the guard of pod ${op}-0 on ${path}`,
        );
      }
      await operator.line('ready', 20_000);
    }
    const uninstall = await helm(['uninstall', release, '-n', ns, '--wait', '--timeout', '60s']);
    assert.is(uninstall.code, 0, uninstall.stderr + uninstall.stdout);
    await kubelet.event(
      (e) => e.pod === pod.metadata.name && e.what === 'deleted 200',
      60_000,
      'the pod stopped and deleted by the kubelet',
    );
    for (const path of [...workload, ...operatorRbac, ...ownRbac])
      await cluster.waitFor(async () => !(await cluster.api.get(path)), 60_000, `${path} gone`);
    await cluster.emptied(`/api/v1/namespaces/${ns}/pods`, 'Pod');
    await cluster.emptied(`/apis/coordination.k8s.io/v1/namespaces/${ns}/leases`, 'Lease');
    assert.equal(kubelet.errors, []);
    const out = [...operator.stdout];
    const state = await cluster.api.get(`/api/v1/namespaces/${ns}/configmaps/${STATE}`);
    return [...out, state ? 'state left' : 'no state left'];
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

test('with drainguard: the StatefulSet pod guards the RBAC through helm uninstall --wait; the cleanup is allowed, nothing is left', async () => {
  const out = await scenario('keep', true);
  assert.ok(out.includes('drain') && out.includes('saw clusterrolebinding terminating'), out.join(' | '));
  assert.ok(out.includes('stop: get clusterrolebinding 200'), `still granted 3 s into the stop: ${out.join(' | ')}`);
  assert.ok(out.includes('stop: delete state 200'), `the cleanup allowed: ${out.join(' | ')}`);
  assert.is(out.at(-1), 'no state left');
});

test('without drainguard (drainguard.enabled=false): the same StatefulSet, its cleanup refused, the state left behind', async () => {
  const out = await scenario('bare', false);
  assert.ok(out.includes('stop: delete state 403'), `the cleanup refused: ${out.join(' | ')}`);
  assert.is(out.at(-1), 'state left');
});

test.run();
