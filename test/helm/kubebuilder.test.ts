// A real kubebuilder project through the real helm on the real control plane:
// the project the kubebuilder CLI scaffolds (test/support/kubebuilder.ts: its
// Guestbook controller keeps a finalizer and a ConfigMap per Guestbook), in
// each layout (cluster-scoped, and `init --namespaced`: the manager's RBAC a
// Role and RoleBinding in the release's namespace, WATCH_NAMESPACE), its
// dist/chart with drainguard added by docs/helm.md's steps, its manager built
// with clients/go/ctrl added by docs/deploy.md's diff, run by the kubelet
// stand-in in wrap mode as the chart says (`/drainguard/drainguard run --
// /manager --leader-elect ...`).
//
// A Guestbook is deleted and its cleanup is in flight (waiting for its
// external work, which the test ends) when `helm uninstall` deletes the
// release: the Deployment and, at the same moment, the manager's RBAC. With
// drainguard, SIGTERM drains the manager: the cleanup reconcile runs on,
// with a live context and its RBAC held by the guard (the binding
// terminating, not gone), deletes its ConfigMap and removes its finalizer;
// drained, the manager stops, drainguard releases, and nothing is left. Without
// drainguard (drainguard.enabled=false, the same chart and binary) the
// cleanup's context is cancelled by SIGTERM and its RBAC is gone: the
// Guestbook stays stuck on its finalizer, its ConfigMap left behind. The
// same in both layouts.
//
// The chart's metrics are off (`metrics.enabled=false`: the scaffold's
// :8443 is no port the pod declares, so it would bind the host's) and its CRD
// is created by the test (`crd.enabled=false`: the chart's keeps it after an
// uninstall, owned by the first release); the project's domain is its own,
// so no other file on the shared cluster has this CRD.

import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parse } from 'yaml';
import { type TestCluster, useCluster } from '../support/cluster/index.ts';
import { Kubelet } from '../support/kubelet/index.ts';
import { DRAINGUARD_IMAGE, drainguardImage } from '../support/kubelet/runners.ts';
import type { HelmResult } from '../support/helm.ts';
import { adminAccess, adminHelm } from './support/admin.ts';
import { type Layout, MANAGER_IMAGE, RUN_DOMAIN, kubebuilderManager, managerImage, scaffold } from '../support/kubebuilder.ts';
import { tempDir } from '../support/proc.ts';
import { adoptKubebuilderChart } from './support/adopt.ts';
import { cleanupCharts } from './support/charts.ts';
import { HOLDER, RBAC, holdersOf } from './support/example.ts';

let cluster: TestCluster;
let crd: any;
/** Each layout's project (of RUN_DOMAIN: one CRD, the same kind), its manager and its chart with drainguard added. */
const built = new Map<Layout, { group: string; manager: string; chart: string }>();
test.before(async () => {
  cluster = await useCluster();
  for (const layout of ['cluster', 'namespaced'] as Layout[]) {
    const project = scaffold(RUN_DOMAIN, layout);
    built.set(layout, { group: project.group, manager: kubebuilderManager(project), chart: adoptKubebuilderChart(RUN_DOMAIN, layout) });
    crd ??= parse(readFileSync(join(project.dir, `config/crd/bases/${project.group}_guestbooks.yaml`), 'utf8'));
  }
  await cluster.create(crd);
  await cluster.waitFor(
    async () =>
      (await cluster.api.get(`/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crd.metadata.name}`))?.status?.conditions?.some(
        (c: any) => c.type === 'Established' && c.status === 'True',
      ),
    30_000,
    'the Guestbook CRD established',
  );
});
test.after(cleanupCharts);

const access = () => adminAccess(cluster);
const helm = (args: string[]): Promise<HelmResult> => adminHelm(cluster)(args);

interface Outcome {
  readonly ns: string;
  readonly out: string[];
  readonly drainguardLog: string[];
  /** The Guestbook and its ConfigMap after the uninstall (undefined: gone). */
  readonly guestbook: any;
  readonly configMap: any;
  /** Whether the manager's ServiceAccount may still remove a Guestbook's finalizer. */
  readonly mayStillUpdate: boolean;
}

async function scenario(release: string, drainguard: boolean, layout: Layout = 'cluster'): Promise<Outcome> {
  const { group, manager, chart } = built.get(layout)!;
  const ns = (await cluster.namespace(`kb-${release}`)).name;
  const prefix = `${release}-guestbook`;
  const sa = `${prefix}-controller-manager`;
  const gate = join(tempDir(), 'external-work-done');
  const kubelet = await Kubelet.start({
    cluster: access(),
    namespaces: [ns],
    images: { [DRAINGUARD_IMAGE]: drainguardImage(), [MANAGER_IMAGE]: managerImage(manager, { GUESTBOOK_CLEANUP_AFTER: gate }) },
  });
  const guestbooks = `/apis/${group}/v1/namespaces/${ns}/guestbooks`;
  // The manager's role and binding: cluster-scoped, or in the release's namespace.
  const scope = layout === 'namespaced' ? `${RBAC}/namespaces/${ns}/roles` : `${RBAC}/clusterroles`;
  const binding =
    layout === 'namespaced'
      ? `${RBAC}/namespaces/${ns}/rolebindings/${prefix}-manager-rolebinding`
      : `${RBAC}/clusterrolebindings/${prefix}-manager-rolebinding`;
  const operatorRbac = [
    `${scope}/${prefix}-manager-role`,
    binding,
    `${RBAC}/namespaces/${ns}/roles/${prefix}-leader-election-role`,
    `${RBAC}/namespaces/${ns}/rolebindings/${prefix}-leader-election-rolebinding`,
    `/api/v1/namespaces/${ns}/serviceaccounts/${sa}`,
  ];
  const own = `drainguard:${ns}:${sa}`;
  const ownRbac = drainguard
    ? [
        `${RBAC}/clusterroles/${own}`,
        `${RBAC}/clusterrolebindings/${own}`,
        `${RBAC}/namespaces/${ns}/roles/${own}`,
        `${RBAC}/namespaces/${ns}/rolebindings/${own}`,
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
      'crd.enabled=false',
      '--set',
      'metrics.enabled=false',
      '--wait',
      '--timeout',
      '90s',
    ]);
    assert.is(install.code, 0, install.stderr + install.stdout);
    const [pod] = await cluster.api.list(`/api/v1/namespaces/${ns}/pods`);
    assert.ok(pod, 'the manager pod');
    const proc = await kubelet.process(pod.metadata.name, 'manager');
    if (drainguard) {
      assert.is(pod.spec.terminationGracePeriodSeconds, 60, "the scaffold's 10 s raised");
      for (const path of [...operatorRbac, ...ownRbac]) {
        await cluster.waitFor(
          async () => holdersOf(await cluster.api.get(path)).includes(`${HOLDER}${pod.metadata.uid}`),
          30_000,
          `the guard on ${path}`,
        );
      }
    }

    // A Guestbook, taken up by the manager (its leader once elected), then deleted: the cleanup starts and waits for its external work.
    await cluster.api.create(guestbooks, {
      apiVersion: `${group}/v1`,
      kind: 'Guestbook',
      metadata: { name: 'gb', namespace: ns },
      spec: {},
    });
    await proc.line(`added ${ns}/gb`, 60_000);
    assert.ok(await cluster.api.get(`/api/v1/namespaces/${ns}/configmaps/guestbook-gb`), "the Guestbook's ConfigMap");
    await cluster.api.delete(`${guestbooks}/gb`);
    await proc.line(`cleanup start ${ns}/gb`, 20_000);

    // The uninstall, while that cleanup is in flight: the pod gets SIGTERM, the manager's binding is deleted.
    const uninstall = helm(['uninstall', release, '-n', ns, '--wait', '--timeout', '90s']);
    await kubelet.event(
      (e) => e.pod === pod.metadata.name && e.container === 'manager' && e.what === 'signal SIGTERM',
      60_000,
      'SIGTERM to the manager container',
    );
    if (drainguard) {
      await proc.log('drain started', 20_000);
      const held = await cluster.waitFor(
        async () => {
          const b = await cluster.api.get(binding);
          return b?.metadata.deletionTimestamp && b;
        },
        30_000,
        'the manager-rolebinding deleted by the uninstall',
      );
      assert.ok(holdersOf(held).includes(`${HOLDER}${pod.metadata.uid}`), 'terminating, held by the pod');
    } else {
      await cluster.waitFor(async () => !(await cluster.api.get(binding)), 30_000, 'the manager-rolebinding gone');
    }
    assert.ok((await cluster.api.get(`${guestbooks}/gb`))?.metadata.finalizers?.length, 'the cleanup had not finished yet');
    // The external work ends: the cleanup goes on to its API calls.
    writeFileSync(gate, '');
    await proc.line(new RegExp(`^cleanup (done|error) ${ns}/gb`), 30_000);

    const uninstalled = await uninstall;
    assert.is(uninstalled.code, 0, uninstalled.stderr + uninstalled.stdout);
    await kubelet.event(
      (e) => e.pod === pod.metadata.name && e.what === 'deleted 200',
      60_000,
      'the pod stopped and deleted by the kubelet',
    );
    for (const path of [...operatorRbac, ...ownRbac])
      await cluster.waitFor(async () => !(await cluster.api.get(path)), 60_000, `${path} gone`);
    await cluster.emptied(
      `/apis/coordination.k8s.io/v1/namespaces/${ns}/leases?labelSelector=app.kubernetes.io%2Fmanaged-by%3Ddrainguard`,
      'holder Lease',
    );
    assert.equal(kubelet.errors, []);
    const review = await cluster.api.create('/apis/authorization.k8s.io/v1/subjectaccessreviews', {
      apiVersion: 'authorization.k8s.io/v1',
      kind: 'SubjectAccessReview',
      spec: {
        user: `system:serviceaccount:${ns}:${sa}`,
        groups: ['system:serviceaccounts', `system:serviceaccounts:${ns}`],
        resourceAttributes: { group, resource: 'guestbooks', verb: 'update', namespace: ns },
      },
    });
    return {
      ns,
      out: [...proc.stdout],
      drainguardLog: proc.logs().map((l) => l.msg),
      guestbook: await cluster.api.get(`${guestbooks}/gb`),
      configMap: await cluster.api.get(`/api/v1/namespaces/${ns}/configmaps/guestbook-gb`),
      mayStillUpdate: review.status.allowed === true,
    };
  } catch (err) {
    process.stderr.write(`kubelet events:\n${kubelet.timeline()}\n`);
    for (const e of kubelet.events.filter((x) => x.proc))
      process.stderr.write(`--- ${e.pod}/${e.container}\n${e.proc!.stdout.join('\n')}\n${e.proc!.stderr.slice(-40).join('\n')}\n`);
    throw err;
  } finally {
    if (!existsSync(gate)) writeFileSync(gate, '');
    await helm(['uninstall', release, '-n', ns, '--no-hooks', '--ignore-not-found']);
    for (const path of [`${guestbooks}/gb`, ...operatorRbac, ...ownRbac]) {
      if (await cluster.api.get(path)) {
        await cluster.api.patch(path, { metadata: { finalizers: null } });
        await cluster.api.delete(path);
      }
    }
    await kubelet.stop();
  }
}

for (const layout of ['cluster', 'namespaced'] as Layout[]) {
  const tag = layout === 'namespaced' ? 'namespaced, ' : '';
  test(`${tag}with drainguard: SIGTERM in a cleanup drains it, its RBAC held, the Guestbook and its ConfigMap go, nothing left`, async () => {
    const r = await scenario(layout === 'namespaced' ? 'nshop' : 'shop', true, layout);
    assert.ok(r.out.includes(`cleanup done ${r.ns}/gb`), `the cleanup succeeded: ${r.out.join(' | ')}`);
    const msgs = r.drainguardLog;
    const drain = msgs.indexOf('drain started');
    const released = msgs.findIndex((m) => m === 'guard released');
    assert.ok(drain !== -1 && released > drain, `drained, then released whole: ${msgs.join(' | ')}`);
    assert.is(r.guestbook, undefined, 'the Guestbook is gone: its finalizer removed');
    assert.is(r.configMap, undefined, 'its ConfigMap deleted');
    assert.not.ok(r.mayStillUpdate, 'and the RBAC is gone now');
  });

  test(`${tag}without drainguard (drainguard.enabled=false): the cleanup is cut and refused, the Guestbook stuck, its ConfigMap left`, async () => {
    const r = await scenario(layout === 'namespaced' ? 'nbare' : 'bare', false, layout);
    const error = r.out.find((l) => l.startsWith(`cleanup error ${r.ns}/gb`));
    assert.ok(error, `the cleanup failed: ${r.out.join(' | ')}`);
    assert.match(error!, /context canceled/, "cut by SIGTERM: the reconcile's context cancelled");
    assert.equal(r.guestbook?.metadata.finalizers, [`${built.get(layout)!.group}/cleanup`], 'the Guestbook stuck on its finalizer');
    assert.ok(r.configMap, 'its ConfigMap left behind');
    assert.not.ok(r.mayStillUpdate, 'and no retry can finish it: the RBAC went with the release');
  });
}

test.run();
