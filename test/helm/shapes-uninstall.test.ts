// A chart of issue 41's first three shapes (test/helm/fixtures/charts/uninstall-shapes)
// with drainguard added by docs/helm.md's steps, through the real helm on the
// control plane, its pod run by the kubelet stand-in in wrap mode. The
// operator (test/fixtures/cr-operator.ts) keeps its state in another
// namespace than the release's, through a RoleBinding there to the cluster's
// own `edit` role, and tells an uninstall by reading its ClusterRoleBinding,
// a right its ClusterRole only has by aggregating another of the chart's.
// Its stop takes 3 s once it has seen the uninstall. With drainguard, helm
// uninstall --wait deletes all of it at once, yet the aggregated rule stays
// granted while the operator cleans up (the source ClusterRole held, terminating),
// the cleanup is allowed, and nothing is left. Without drainguard the same
// cleanup is refused and the state is left behind.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { type TestCluster, useCluster } from '../support/cluster/index.ts';
import { Kubelet } from '../support/kubelet/index.ts';
import type { HelmResult } from '../support/helm.ts';
import { adminAccess, adminHelm } from './support/admin.ts';
import { cleanupCharts } from './support/charts.ts';
import { HOLDER, RBAC, exampleImages, holdersOf } from './support/example.ts';
import { adoptShape } from './support/shapes.ts';

let cluster: TestCluster;
let chart: string;
test.before(async () => {
  cluster = await useCluster();
  chart = adoptShape('uninstall-shapes');
});
test.after(cleanupCharts);

const access = () => adminAccess(cluster);
const helm = (args: string[]): Promise<HelmResult> => adminHelm(cluster)(args);
const STATE = 'example-operator-state';

/** Whether the operator's ServiceAccount may read its ClusterRoleBinding: the aggregated rule. */
async function mayReadBinding(ns: string, sa: string, name: string): Promise<boolean> {
  const review = await cluster.api.create('/apis/authorization.k8s.io/v1/subjectaccessreviews', {
    apiVersion: 'authorization.k8s.io/v1',
    kind: 'SubjectAccessReview',
    spec: {
      user: `system:serviceaccount:${ns}:${sa}`,
      groups: ['system:serviceaccounts', `system:serviceaccounts:${ns}`, 'system:authenticated'],
      resourceAttributes: { group: 'rbac.authorization.k8s.io', resource: 'clusterrolebindings', verb: 'get', name },
    },
  });
  return review.status?.allowed === true;
}

interface Outcome {
  readonly out: string[];
  readonly team: string;
  /** With drainguard: what the test saw once the aggregation source was terminating. */
  readonly whileSourceTerminating?: { rules: string[]; allowed: boolean };
}

async function scenario(release: string, drainguard: boolean): Promise<Outcome> {
  const ns = (await cluster.namespace(`sh-${release}`)).name;
  const team = (await cluster.namespace(`sh-${release}-team`)).name;
  const op = `${release}-op`;
  const images = exampleImages({ POD_NAMESPACE: team, FIXTURE_NAME: op, FIXTURE_STOP_AFTER_MS: '3000' });
  const kubelet = await Kubelet.start({ cluster: access(), namespaces: [ns], images });
  const own = `drainguard:${ns}:${op}`;
  const source = `${RBAC}/clusterroles/${op}-rbac-reader`;
  const operatorRbac = [
    `${RBAC}/clusterroles/${op}`,
    source,
    `${RBAC}/clusterrolebindings/${op}`,
    `${RBAC}/namespaces/${team}/rolebindings/${op}-edit`,
    `/api/v1/namespaces/${ns}/serviceaccounts/${op}`,
  ];
  const ownRbac = drainguard
    ? [
        `${RBAC}/clusterroles/${own}`,
        `${RBAC}/clusterrolebindings/${own}`,
        ...[ns, team].flatMap((n) => [`${RBAC}/namespaces/${n}/roles/${own}`, `${RBAC}/namespaces/${n}/rolebindings/${own}`]),
      ]
    : [];
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
      '--set',
      `teamNamespace=${team}`,
      '--wait',
      '--timeout',
      '90s',
    ]);
    assert.is(install.code, 0, install.stderr + install.stdout);
    const [pod] = await cluster.api.list(`/api/v1/namespaces/${ns}/pods`);
    assert.ok(pod, 'the operator pod');
    const operator = await kubelet.process(pod.metadata.name, 'operator');
    await operator.line('create state 201', 30_000);
    await cluster.waitFor(() => mayReadBinding(ns, op, op), 30_000, 'the aggregated rule granted');
    if (drainguard) {
      for (const path of [...operatorRbac, ...ownRbac]) {
        await cluster.waitFor(
          async () => holdersOf(await cluster.api.get(path)).includes(`${HOLDER}${pod.metadata.uid}`),
          30_000,
          `the guard on ${path}`,
        );
      }
      await operator.line('ready', 20_000);
    }
    const uninstalling = helm(['uninstall', release, '-n', ns, '--wait', '--timeout', '60s']);
    let whileSourceTerminating: Outcome['whileSourceTerminating'];
    if (drainguard) {
      await cluster.waitFor(
        async () => (await cluster.api.get(source))?.metadata.deletionTimestamp,
        30_000,
        'the aggregation source deleted, held',
      );
      const aggregated = await cluster.api.get(`${RBAC}/clusterroles/${op}`);
      whileSourceTerminating = {
        rules: (aggregated?.rules ?? []).flatMap((r: any) =>
          r.resources.flatMap((res: string) => r.verbs.map((v: string) => `${res}/${v}`)),
        ),
        allowed: await mayReadBinding(ns, op, op),
      };
    }
    const uninstall = await uninstalling;
    assert.is(uninstall.code, 0, uninstall.stderr + uninstall.stdout);
    await kubelet.event(
      (e) => e.pod === pod.metadata.name && e.what === 'deleted 200',
      60_000,
      'the pod stopped and deleted by the kubelet',
    );
    for (const path of [...operatorRbac, ...ownRbac])
      await cluster.waitFor(async () => !(await cluster.api.get(path)), 60_000, `${path} gone`);
    await cluster.emptied(`/apis/coordination.k8s.io/v1/namespaces/${ns}/leases`, 'Lease');
    assert.equal(kubelet.errors, []);
    return { out: [...operator.stdout], team, ...(whileSourceTerminating && { whileSourceTerminating }) };
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

test('with drainguard: the binding to edit in another namespace and the aggregated rule stay granted through helm uninstall --wait; the cleanup is allowed, nothing is left', async () => {
  const { out, team, whileSourceTerminating } = await scenario('keep', true);
  assert.equal(
    whileSourceTerminating,
    { rules: ['clusterrolebindings/get'], allowed: true },
    'the aggregation source terminating, its rule still in the aggregated role and granted',
  );
  assert.ok(out.includes('drain') && out.includes('saw clusterrolebinding terminating'), out.join(' | '));
  assert.ok(out.includes('stop: get clusterrolebinding 200'), `the aggregated rule granted 3 s into the stop: ${out.join(' | ')}`);
  assert.ok(out.includes('stop: delete state 200'), `the cleanup allowed through the edit binding: ${out.join(' | ')}`);
  assert.equal(await cluster.api.get(`/api/v1/namespaces/${team}/configmaps/${STATE}`), undefined, 'no state left');
});

test('without drainguard (drainguard.enabled=false): the same cleanup is refused, the state left behind', async () => {
  const { out, team } = await scenario('bare', false);
  assert.ok(out.includes('stop: get clusterrolebinding 403'), `the aggregated rule gone: ${out.join(' | ')}`);
  assert.ok(out.includes('stop: delete state 403'), `the cleanup refused: ${out.join(' | ')}`);
  assert.ok(await cluster.api.get(`/api/v1/namespaces/${team}/configmaps/${STATE}`), 'the state left');
});

test.run();
