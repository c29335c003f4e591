// The chart path on the real control plane, for the files that split the
// shapes between them (each file within the runner's time limit): adopt on a
// copy of the shape's chart, then helm install of the result, the operator's
// pods run and guarded, helm uninstall --wait (its post-delete hook run by the
// kubelet stand-in), and nothing of the release left. The control: with
// --no-hooks no post-delete hook runs, and what Helm keeps (drainguard's own
// RBAC, deleted by that hook) is seen left: the check is not blind to it.

import { randomBytes } from 'node:crypto';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { type KubeletCluster, kubeletCluster } from '../support/kubelet/cluster.ts';
import { helmRun } from '../support/helm.ts';
import { cleanupCharts, template } from '../helm/support/charts.ts';
import type { KubeObject } from '../deploy/support/manifests.ts';
import { SHAPES, sourceOf } from './chart-shapes.ts';
import { guarded, kubeletErrors, logsOf, nothingLeft, objectPath, startKubelet, strip } from './cluster.ts';
import { adopt, cleanupCopies, copyChart } from './support.ts';

/** Values a shape needs on a shared cluster: the other namespaces it names, made for it. */
async function valuesFor(c: KubeletCluster, name: string): Promise<Record<string, unknown>> {
  if (name === 'other-namespaces')
    return {
      watchNamespaces: [await c.namespace('adopt-team'), await c.namespace('adopt-team')],
      leaderElectionNamespace: await c.namespace('adopt-le'),
    };
  if (name === 'uninstall-shapes') return { teamNamespace: await c.namespace('adopt-team') };
  return {};
}

/** The shapes of part PART (0, 1, 2): every third, so that the three files cover them all. */
export function chartTests(part: number): void {
  const names = Object.keys(SHAPES).filter((_, i) => i % 3 === part);
  let c: KubeletCluster;
  test.before(async () => {
    c = await kubeletCluster();
  });
  test.after(() => {
    cleanupCopies();
    cleanupCharts();
  });
  if (part === 1)
    test("the control: helm uninstall --no-hooks runs no post-delete hook, and drainguard's own RBAC is seen left", async () => {
      const ns = await c.namespace('adopt');
      const release = `ad${randomBytes(4).toString('hex')}`;
      const chart = copyChart(sourceOf('aggregated', SHAPES.aggregated!));
      assert.is(adopt(chart, ['-n', ns, '--release', release]).code, 0);
      const objects = template(chart, { release, namespace: ns });
      const kept = objects.filter((o) => o.metadata.annotations?.['helm.sh/resource-policy'] === 'keep');
      assert.ok(kept.length >= 4, "drainguard's own ClusterRole, ClusterRoleBinding, Role and RoleBinding are kept by Helm");
      const kubelet = await startKubelet(c, [ns]);
      const helm = (args: string[]) => helmRun([...args, '--kubeconfig', c.cluster.adminKubeconfig], 120_000);
      try {
        assert.is((await helm(['install', release, chart, '-n', ns, '--timeout', '90s'])).code, 0);
        await guarded(c, kubelet, ns, objects);
        const uninstall = await helm(['uninstall', release, '-n', ns, '--no-hooks', '--wait', '--timeout', '90s']);
        assert.is(uninstall.code, 0, uninstall.stderr);
        const left: KubeObject[] = [];
        for (const o of kept) if ((await c.api.call('GET', objectPath(o, ns))).status === 200) left.push(o);
        assert.is(left.length, kept.length, 'without the hook, what Helm keeps is left: the check of the other tests would see it');
      } finally {
        await kubelet.stop();
        await strip(c, objects, ns);
      }
    });
  for (const name of names) {
    const shape = SHAPES[name]!;
    test(`${name}: adopted, check finds nothing, installed and guarded, helm uninstall --wait: nothing left`, async () => {
      const ns = await c.namespace('adopt');
      const release = `ad${randomBytes(4).toString('hex')}`;
      const set = { ...shape.set, ...(await valuesFor(c, name)) };
      const chart = copyChart(sourceOf(name, shape));
      const run = adopt(chart, ['-n', ns, '--release', release, ...(shape.args ?? [])]);
      assert.is(run.code, 0, run.stdout + run.stderr);
      assert.match(run.stdout, /no findings/);
      const objects = template(chart, { release, namespace: ns, set });
      const kubelet = await startKubelet(c, [ns]);
      const helm = (args: string[]) => helmRun([...args, '--kubeconfig', c.cluster.adminKubeconfig], 120_000);
      const setArgs = Object.entries(set).flatMap(([k, v]) => ['--set-json', `${k}=${JSON.stringify(v)}`]);
      let done = false;
      try {
        const install = await helm(['install', release, chart, '-n', ns, ...setArgs, '--timeout', '90s']);
        assert.is(install.code, 0, install.stderr + install.stdout);
        await guarded(c, kubelet, ns, objects);
        const uninstall = await helm(['uninstall', release, '-n', ns, '--wait', '--timeout', '90s']);
        assert.is(uninstall.code, 0, `${uninstall.stderr}${uninstall.stdout}\n${kubelet.timeline()}\n${logsOf(kubelet)}`);
        await nothingLeft(c, objects, ns, [ns]);
        assert.equal(kubeletErrors(kubelet), []);
        done = true;
      } finally {
        await kubelet.stop();
        if (!done) await strip(c, objects, ns);
      }
    });
  }
}
