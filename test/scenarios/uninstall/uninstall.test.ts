// `helm uninstall` of an operator, step by step as Helm does it, on the real
// API server and controller-manager with the kubelet stand-in running the
// pods: the operator's Deployment, the pre-delete hook Job (predelete), the
// guard and the drain (drainguard run; drainguard's own RBAC kept through the
// uninstall, as helm.sh/resource-policy: keep makes Helm do), and the
// post-delete hook Job (release --delete), with the hooks' manifests from
// deploy/helm-hooks. Nothing may remain.
// The control case is the same uninstall without drainguard: the operator's
// cleanup is refused once its ClusterRole and binding are gone, and its custom
// resources stay stuck with their finalizers.

import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parseAllDocuments } from 'yaml';
import { CR_OPERATOR, createCrds, deleteCrds, stripCustomResources as strip } from '../../support/cr-operator.ts';
import { drainguardRbac } from '../../support/drainguard-rbac.ts';
import { Kubelet } from '../../support/kubelet/index.ts';
import { type KubeletCluster, kubeletCluster } from '../../support/kubelet/cluster.ts';
import { DRAINGUARD_IMAGE, drainguardImage, operatorImage } from '../../support/kubelet/runners.ts';
import type { Proc } from '../../support/proc.ts';

// A group of its own: test/helm/uninstall.test.ts installs the example chart's operator.example.io CRDs into the same cluster, and may run at the same time.
const GROUP = 'operator.uninstall.example.io';
const RBAC = 'rbac.authorization.k8s.io/v1';
const CR_OPERATOR_IMAGE = 'example.com/cr-operator';
/** ConfigMaps the controller-manager publishes in every namespace (the second one: OpenShift's fork of the controller-manager). */
const PUBLISHED = ['kube-root-ca.crt', 'openshift-service-ca.crt'];

let c: KubeletCluster;
test.before(async () => {
  c = await kubeletCluster();
  await createCrds(c, GROUP);
});

// The CRDs go at the end, and are waited for (a CRD keeps a finalizer of its own for a moment).
test.after(() => deleteCrds(c, GROUP));

interface Install {
  readonly ns: string;
  readonly name: string;
  readonly guard: string;
  /** drainguard's own RBAC, which the uninstall keeps. */
  readonly ownPaths: readonly string[];
  readonly kubelet: Kubelet;
  /** The hooks' manifests with this install's namespace and names. */
  hook(file: string): any[];
  at(what: string): void;
  readonly timeline: string[];
}

async function install(withDrainguard: boolean, operatorEnv: NodeJS.ProcessEnv = {}): Promise<Install> {
  const ns = await c.namespace('uninstall');
  const name = `example-operator-${randomBytes(3).toString('hex')}`;
  const t0 = Date.now();
  const timeline: string[] = [];
  const at = (what: string) => timeline.push(`${String(Date.now() - t0).padStart(5)} ms  ${what}`);
  const kubelet = await Kubelet.start({
    cluster: c.access,
    namespaces: [ns],
    images: {
      [DRAINGUARD_IMAGE]: drainguardImage(),
      [CR_OPERATOR_IMAGE]: operatorImage(CR_OPERATOR, { FIXTURE_GROUP: GROUP, FIXTURE_NAME: name, ...operatorEnv }),
    },
  });
  for (const kind of ['APIServer', 'Installation'])
    await c.api.must('POST', `/apis/${GROUP}/v1/${kind.toLowerCase()}s`, {
      apiVersion: `${GROUP}/v1`,
      kind,
      metadata: { name: 'default', finalizers: [`${GROUP}/cleanup`] },
    });
  await c.cluster.serviceAccount(ns, name);
  await c.cluster.grant(
    ns,
    name,
    name,
    [
      { apiGroups: [GROUP], resources: ['apiservers', 'installations'], verbs: ['get', 'list', 'watch', 'patch', 'update'] },
      { apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'create', 'delete'] },
    ],
    { clusterWide: true },
  );
  // drainguard's own, as deploy/components/rbac renders it (the hooks' comments ask for it): get/patch on the
  // guarded objects, its Lease, its Pod, Events; kept through the uninstall (helm.sh/resource-policy: keep) and guarded too.
  const rbac = drainguardRbac({ namespace: ns, deployment: name, serviceAccount: name, clusterRole: name, clusterRoleBinding: name });
  for (const object of rbac) await c.cluster.create(object);
  const own = rbac[0]!.metadata.name;
  const ownPaths = [
    `/apis/${RBAC}/clusterroles/${own}`,
    `/apis/${RBAC}/clusterrolebindings/${own}`,
    `/apis/${RBAC}/namespaces/${ns}/roles/${own}`,
    `/apis/${RBAC}/namespaces/${ns}/rolebindings/${own}`,
  ];
  // The same list as the post-delete hook's --guard, with these names.
  const guard = [
    `clusterrole/${name}`,
    `clusterrolebinding/${name}`,
    `serviceaccount/${ns}/${name}`,
    `clusterrole/${own}`,
    `clusterrolebinding/${own}`,
    `role/${ns}/${own}`,
    `rolebinding/${ns}/${own}`,
  ].join(',');
  const env = [
    ...['name', 'namespace', 'uid'].map((f) => ({
      name: `DRAINGUARD_POD_${f.toUpperCase()}`,
      valueFrom: { fieldRef: { fieldPath: `metadata.${f}` } },
    })),
    { name: 'DRAINGUARD_GUARD', value: guard },
  ];
  const manager = withDrainguard
    ? {
        name: 'manager',
        image: `${CR_OPERATOR_IMAGE}:1.0.0`,
        command: ['/drainguard/drainguard', 'run', '--', '/manager'],
        env,
        volumeMounts: [{ name: 'drainguard', mountPath: '/drainguard', readOnly: true }],
      }
    : { name: 'manager', image: `${CR_OPERATOR_IMAGE}:1.0.0`, command: ['/manager'] };
  await c.api.must('POST', `/apis/apps/v1/namespaces/${ns}/deployments`, {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name },
    spec: {
      replicas: 1,
      selector: { matchLabels: { 'app.kubernetes.io/name': name } },
      template: {
        metadata: { labels: { 'app.kubernetes.io/name': name } },
        spec: {
          serviceAccountName: name,
          terminationGracePeriodSeconds: 30,
          ...(withDrainguard && {
            volumes: [{ name: 'drainguard', emptyDir: {} }],
            initContainers: [
              {
                name: 'drainguard-install',
                image: `${DRAINGUARD_IMAGE}:0.1.0`,
                command: ['/drainguard/drainguard', 'install', '/shared'],
                volumeMounts: [{ name: 'drainguard', mountPath: '/shared' }],
              },
            ],
          }),
          containers: [manager],
        },
      },
    },
  });
  const hook = (file: string) =>
    parseAllDocuments(
      readFileSync(`deploy/helm-hooks/${file}`, 'utf8')
        .replaceAll('operator-system', ns)
        .replaceAll('example-operator', name)
        .replaceAll('operator.example.io', GROUP),
    ).map((d) => d.toJS());
  return { ns, name, guard, ownPaths, kubelet, hook, at, timeline };
}

const pathOf = (o: any, plural = `${o.kind.toLowerCase()}s`) =>
  `${o.apiVersion.includes('/') ? `/apis/${o.apiVersion}` : `/api/${o.apiVersion}`}${o.metadata.namespace ? `/namespaces/${o.metadata.namespace}` : ''}/${plural}/${o.metadata.name}`;

/** A hook as Helm runs it: its other objects first, then the Job, waited for until complete; its pod's output on the timeline. */
async function runHook(i: Install, file: string, label: string): Promise<Proc> {
  const objects = i.hook(file);
  for (const o of objects.filter((x) => x.kind !== 'Job')) await c.api.must('POST', pathOf(o).replace(/\/[^/]+$/, ''), o);
  const job = objects.find((x) => x.kind === 'Job');
  await c.api.must('POST', `/apis/batch/v1/namespaces/${i.ns}/jobs`, job);
  const proc = await i.kubelet.process(job.metadata.name, job.spec.template.spec.containers[0].name, 30_000);
  proc.child.stdout!.on('data', (chunk: string) =>
    chunk
      .split('\n')
      .filter(Boolean)
      .forEach((l) => i.at(`${label}: ${l}`)),
  );
  await c.poll(
    `/apis/batch/v1/namespaces/${i.ns}/jobs/${job.metadata.name}`,
    (b) => b.status?.succeeded === 1,
    60_000,
    `the ${label} Job complete: ${proc.stderr.join('\n')}`,
  );
  // hook-succeeded: Helm deletes the hook's objects, the Job with its pod.
  for (const o of objects) await c.api.call('DELETE', pathOf(o), { propagationPolicy: 'Background' });
  return proc;
}

/** Helm's uninstall of the release objects, kind by kind, background propagation, nothing waited for; drainguard's own RBAC is kept. */
async function helmDeletes(i: Install, customResources: boolean): Promise<void> {
  await c.api.must('DELETE', `/apis/apps/v1/namespaces/${i.ns}/deployments/${i.name}`, { propagationPolicy: 'Background' });
  i.at('Deployment deleted');
  for (const path of [
    `/apis/${RBAC}/clusterrolebindings/${i.name}`,
    `/apis/${RBAC}/clusterroles/${i.name}`,
    `/api/v1/namespaces/${i.ns}/serviceaccounts/${i.name}`,
  ]) {
    await c.api.must('DELETE', path, { propagationPolicy: 'Background' });
    i.at(`${path.split('/').slice(-2).join('/')} deleted`);
  }
  if (customResources) {
    for (const plural of ['apiservers', 'installations'])
      await c.api.must('DELETE', `/apis/${GROUP}/v1/${plural}/default`, { propagationPolicy: 'Background' });
    i.at('custom resources deleted');
  }
}

async function operatorPod(i: Install): Promise<{ proc: Proc; pod: any }> {
  const proc = await i.kubelet.process(i.name, 'manager', 60_000);
  await proc.line('ready', 20_000);
  const pods = await c.api.must('GET', `/api/v1/namespaces/${i.ns}/pods?labelSelector=app.kubernetes.io%2Fname%3D${i.name}`);
  await c.poll(
    `/api/v1/namespaces/${i.ns}/pods/${pods.items[0].metadata.name}`,
    (b) => b.status?.conditions?.some((x: any) => x.type === 'Ready' && x.status === 'True'),
    20_000,
    'the operator pod Ready',
  );
  return { proc, pod: pods.items[0] };
}

const stripCustomResources = () => strip(c, GROUP);

test('helm uninstall: pre-delete cleanup, the guard and the drain, post-delete sweep; nothing remains', async () => {
  const i = await install(true);
  try {
    const { proc: operator, pod } = await operatorPod(i);
    const holder = `drainguard.dev/holder-${pod.metadata.uid}`;
    for (const path of [
      `/apis/${RBAC}/clusterroles/${i.name}`,
      `/apis/${RBAC}/clusterrolebindings/${i.name}`,
      `/api/v1/namespaces/${i.ns}/serviceaccounts/${i.name}`,
      ...i.ownPaths,
    ]) {
      await c.poll(path, (b) => b.metadata?.finalizers?.includes(holder), 20_000, `the pod's finalizer on ${path}`);
    }
    i.at("operator running, guard set on ClusterRole, ClusterRoleBinding, ServiceAccount and drainguard's own RBAC");

    // 1. pre-delete hook: its RBAC first (by weight), then the Job, run by the kubelet.
    await runHook(i, 'predelete.yaml', 'pre-delete');
    assert.ok(
      operator.stdout.includes('cleanup apiservers/default: finalizer 200') &&
        operator.stdout.includes('cleanup installations/default: finalizer 200'),
      operator.stdout.join('\n'),
    );
    for (const plural of ['apiservers', 'installations'])
      assert.is((await c.api.must('GET', `/apis/${GROUP}/v1/${plural}`)).items.length, 0);

    // 2. Helm deletes the release kind by kind; the kubelet stops the pod.
    await helmDeletes(i, false);
    await operator.line('drained', 30_000);
    i.at(`operator drained: its last API call answered ${operator.stdout.find((l) => l.startsWith('stop: delete state'))}`);
    assert.ok(operator.stdout.includes('stop: delete state 200'), 'the operator still had its permissions while draining');
    await i.kubelet.event(
      (e) => e.pod === pod.metadata.name && e.container === 'manager' && e.what === 'exited 0',
      30_000,
      'drainguard exited 0',
    );
    // Every removal authorised: nothing of the release may be left to the post-delete hook.
    const released = operator.logs().find((l) => l.msg === 'guard released');
    assert.ok(released, operator.stderr.join('\n'));
    const deleted = (released.deleted as string[]).filter((o) => !/^lease\/.*-anchor$/.test(o));
    assert.is(deleted.length, 3, 'the ClusterRole, ClusterRoleBinding and ServiceAccount went with the release (and the release anchor)');
    i.at(
      `drainguard released its finalizers (${(released.deleted as string[]).length} objects went with them) in ${released.waves} waves and exited 0`,
    );
    await c.poll(`/api/v1/namespaces/${i.ns}/pods/${pod.metadata.name}`, (_b, s) => s === 404, 30_000, 'the pod gone');
    await c.poll(
      `/apis/coordination.k8s.io/v1/namespaces/${i.ns}/leases`,
      (b) => b.items.length === 0,
      15_000,
      'the Lease garbage-collected',
    );
    i.at('pod gone, its Lease garbage-collected');

    // 3. post-delete hook: nothing left to sweep; drainguard's own RBAC deleted now that no holder is left.
    for (const path of i.ownPaths) assert.is((await c.api.call('GET', path)).status, 200, `${path} kept by the uninstall`);
    const hook = await runHook(i, 'postdelete.yaml', 'post-delete');
    assert.ok(
      hook.stdout.some((l) => l.startsWith('released 0 finalizer(s); 0 of live holders left; deleted 4 object(s)')),
      hook.stdout.join('\n'),
    );

    const left: string[] = [];
    for (const path of [
      `/apis/${RBAC}/clusterroles/${i.name}`,
      `/apis/${RBAC}/clusterrolebindings/${i.name}`,
      `/api/v1/namespaces/${i.ns}/serviceaccounts/${i.name}`,
      ...i.ownPaths,
    ]) {
      if ((await c.api.call('GET', path)).status !== 404) left.push(path);
    }
    for (const list of [
      `/api/v1/namespaces/${i.ns}/configmaps`,
      `/api/v1/namespaces/${i.ns}/pods`,
      `/apis/coordination.k8s.io/v1/namespaces/${i.ns}/leases`,
      `/apis/${GROUP}/v1/installations`,
      `/apis/${GROUP}/v1/apiservers`,
    ]) {
      const mine = (b: any) => b.items.filter((o: any) => !PUBLISHED.includes(o.metadata.name));
      const items = mine(
        await c
          .poll(list, (b) => mine(b).length === 0, 30_000, `${list} empty (hook pods deleted with their Jobs)`)
          .catch(() => c.api.must('GET', list)),
      );
      left.push(...items.map((o: any) => `${list}/${o.metadata.name}`));
    }
    assert.equal(left, [], 'nothing remains');
    i.at('nothing remains');
    assert.equal(i.kubelet.errors, []);
  } finally {
    if (process.env.TEST_VERBOSE) console.log(`\n${i.timeline.join('\n')}\n\nkubelet:\n${i.kubelet.timeline()}\n`);
    await i.kubelet.stop();
    await stripCustomResources();
  }
});

test('control: the same uninstall without drainguard: the cleanup is refused and the custom resources stay stuck', async () => {
  // An operator that shuts down gracefully on SIGTERM (a last reconcile pass and its cleanup, 3 s after it saw the uninstall).
  const i = await install(false, { FIXTURE_STOP_AFTER_MS: '3000' });
  try {
    const { proc: operator, pod } = await operatorPod(i);
    await helmDeletes(i, true);
    await operator.line('signal SIGTERM', 30_000);
    await operator.line(/^stop: delete state /, 30_000);
    await c.poll(`/api/v1/namespaces/${i.ns}/pods/${pod.metadata.name}`, (_b, s) => s === 404, 30_000, 'the pod gone');
    assert.ok(operator.stdout.includes('stop: delete state 403'), `its cleanup refused: ${operator.stdout.join('\n')}`);
    assert.ok(operator.stdout.includes('list apiservers 403'), 'its finalizer pass refused');
    assert.not.ok(
      operator.stdout.some((l) => /^cleanup .*: finalizer \d+$/.test(l)),
      'it removed no finalizer',
    );
    assert.ok(
      (await c.api.call('GET', `/api/v1/namespaces/${i.ns}/configmaps/example-operator-state`)).status === 200,
      'its state stays behind',
    );
    for (const plural of ['apiservers', 'installations']) {
      const cr = await c.api.must('GET', `/apis/${GROUP}/v1/${plural}/default`);
      assert.ok(
        cr.metadata.deletionTimestamp && cr.metadata.finalizers.includes(`${GROUP}/cleanup`),
        `${plural}/default stuck Terminating with its finalizer, no operator left to remove it`,
      );
    }
  } finally {
    await i.kubelet.stop();
    await stripCustomResources();
  }
});

test.run();
