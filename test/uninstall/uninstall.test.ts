// `helm uninstall` of an operator, step by step as Helm does it, with the three
// layers together: the pre-delete hook (predelete), the guard and the drain
// (drainguard run), and the post-delete hook (release). The manifests of both
// hooks are the ones in deploy/helm-hooks. Nothing may remain.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parseAllDocuments } from 'yaml';
import { type FakeApiServer, type KubeObject, startApiServer, writeKubeconfig } from '../support/apiserver/index.ts';
import { NODE, drainguard, tempDir } from '../support/proc.ts';

const NS = 'operator-system';
const GROUP = 'operator.example.io';
const RBAC = 'rbac.authorization.k8s.io/v1';
const GUARD = `clusterrole/example-operator,clusterrolebinding/example-operator,serviceaccount/${NS}/example-operator`;

const hook = (file: string) => parseAllDocuments(readFileSync(`deploy/helm-hooks/${file}`, 'utf8')).map((d) => d.toJS() as KubeObject & { spec?: any });
const hookArgs = (file: string): string[] => hook(file).find((o) => o.kind === 'Job')!.spec.template.spec.containers[0].args;

function install(api: FakeApiServer): void {
  for (const [plural, kind] of [['apiservers', 'APIServer'], ['installations', 'Installation']]) {
    api.create({
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: `${plural}.${GROUP}` },
      spec: { group: GROUP, scope: 'Cluster', names: { plural, singular: kind!.toLowerCase(), kind }, versions: [{ name: 'v1', served: true, storage: true }] },
    } as KubeObject);
    api.create({ apiVersion: `${GROUP}/v1`, kind: kind!, metadata: { name: 'default', finalizers: [`${GROUP}/cleanup`] } });
  }
  api.create({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'example-operator', namespace: NS } });
  api.create({
    apiVersion: RBAC,
    kind: 'ClusterRole',
    metadata: { name: 'example-operator' },
    rules: [
      { apiGroups: [GROUP], resources: ['apiservers', 'installations'], verbs: ['get', 'list', 'watch', 'patch', 'update'] },
      { apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'create', 'delete'] },
      // drainguard's own: get/patch on the guarded objects, its Lease, its Pod, Events.
      { apiGroups: ['rbac.authorization.k8s.io'], resources: ['clusterroles', 'clusterrolebindings'], resourceNames: ['example-operator'], verbs: ['get', 'patch'] },
      { apiGroups: [''], resources: ['serviceaccounts'], resourceNames: ['example-operator'], verbs: ['get', 'patch'] },
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'list', 'create', 'update', 'patch', 'delete'] },
      { apiGroups: [''], resources: ['pods'], verbs: ['get'] },
      { apiGroups: [''], resources: ['events'], verbs: ['create'] },
    ],
  });
  api.create({
    apiVersion: RBAC,
    kind: 'ClusterRoleBinding',
    metadata: { name: 'example-operator' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'example-operator' },
    subjects: [{ kind: 'ServiceAccount', name: 'example-operator', namespace: NS }],
  });
}

test('helm uninstall: pre-delete cleanup, the guard and the drain, post-delete sweep; nothing remains', async () => {
  const api = await startApiServer({ namespaces: ['default', NS] });
  const t0 = Date.now();
  const timeline: string[] = [];
  const at = (what: string) => timeline.push(`${String(Date.now() - t0).padStart(5)} ms  ${what}`);
  try {
    install(api);
    const dir = tempDir();
    writeFileSync(join(dir, 'ca.crt'), api.ca);
    const pod = api.create({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'example-operator-7d9f', namespace: NS, labels: { 'app.kubernetes.io/name': 'example-operator' } },
      spec: { nodeName: 'node-1', terminationGracePeriodSeconds: 30, serviceAccountName: 'example-operator' },
      status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] },
    } as KubeObject);
    const token = api.tokenFor(NS, 'example-operator', { pod: pod.metadata.name });
    const operator = drainguard(['run', '--', NODE, join(import.meta.dirname, 'fixtures/cr-operator.ts')], {
      KUBECONFIG: writeKubeconfig(dir, api, token),
      DRAINGUARD_GUARD: GUARD,
      DRAINGUARD_POD_NAME: pod.metadata.name,
      DRAINGUARD_POD_NAMESPACE: NS,
      DRAINGUARD_POD_UID: pod.metadata.uid,
      FIXTURE_API: api.url,
      FIXTURE_TOKEN: token,
      FIXTURE_CA: join(dir, 'ca.crt'),
      FIXTURE_NS: NS,
    });
    await operator.line('ready');
    const held = (o: KubeObject | undefined) => o?.metadata.finalizers?.includes(`drainguard.dev/holder-${pod.metadata.uid}`);
    await api.waitFor(
      () =>
        (held(api.get(RBAC, 'clusterroles', undefined, 'example-operator')) &&
          held(api.get(RBAC, 'clusterrolebindings', undefined, 'example-operator')) &&
          held(api.get('v1', 'serviceaccounts', NS, 'example-operator'))) ||
        undefined,
      10_000,
      "the pod's finalizer on the three guarded objects",
    );
    at('operator running, guard set on ClusterRole, ClusterRoleBinding, ServiceAccount');

    // 1. pre-delete hook: its RBAC first (by weight), then the Job.
    for (const o of hook('predelete.yaml')) if (o.kind !== 'Job') api.create(o);
    const pre = drainguard(hookArgs('predelete.yaml'), { KUBECONFIG: writeKubeconfig(tempDir(), api, api.tokenFor(NS, 'drainguard-predelete')) });
    pre.child.stdout!.on('data', (chunk: string) => chunk.split('\n').filter(Boolean).forEach((l) => at(`pre-delete: ${l}`)));
    assert.equal((await pre.exit(20_000)).code, 0, pre.stderr.join('\n'));
    assert.ok(operator.stdout.includes('finalize apiservers/default 200') && operator.stdout.includes('finalize installations/default 200'));
    assert.equal(api.list(`${GROUP}/v1`, 'installations').length + api.list(`${GROUP}/v1`, 'apiservers').length, 0);

    // 2. Helm deletes the release kind by kind (UninstallOrder), background propagation, without waiting for pods.
    api.delete('v1', 'pods', NS, pod.metadata.name!); // the Deployment's pod, graceful: 30 s
    operator.kill('SIGTERM'); // the kubelet
    at('Deployment deleted: pod terminating, SIGTERM to drainguard');
    for (const [v, r, ns] of [[RBAC, 'clusterrolebindings', undefined], [RBAC, 'clusterroles', undefined], ['v1', 'serviceaccounts', NS]] as const) {
      api.delete(v, r, ns, 'example-operator', { propagationPolicy: 'Background' });
      at(`${r}/example-operator deleted: held, terminating`);
    }
    await operator.line('drained');
    at(`operator drained: its last API call answered ${operator.stdout.find((l) => l.startsWith('delete state'))}`);
    assert.ok(operator.stdout.includes('delete state 200'), 'the operator still had its permissions while draining');
    assert.equal((await operator.exit()).code, 0);
    const released = operator.logs().find((l) => l.msg === 'guard released')!;
    at(`drainguard released its finalizers (${(released.deleted as string[]).length} objects went with them) and exited 0`);
    api.finishPodTermination(NS, pod.metadata.name!);
    await api.waitFor(() => api.list('coordination.k8s.io/v1', 'leases', NS).length === 0 || undefined, 5000, 'the Lease garbage-collected');
    at('pod gone, its Lease garbage-collected');

    // 3. post-delete hook: nothing left to sweep.
    for (const o of hook('postdelete.yaml')) if (o.kind !== 'Job') api.create(o);
    const post = drainguard(hookArgs('postdelete.yaml'), { KUBECONFIG: writeKubeconfig(tempDir(), api, api.tokenFor(NS, 'drainguard-release')) });
    post.child.stdout!.on('data', (chunk: string) => chunk.split('\n').filter(Boolean).forEach((l) => at(`post-delete: ${l}`)));
    assert.equal((await post.exit(20_000)).code, 0, post.stderr.join('\n'));

    const left = [
      ...api.list(RBAC, 'clusterroles').filter((o) => o.metadata.name === 'example-operator'),
      ...api.list(RBAC, 'clusterrolebindings').filter((o) => o.metadata.name === 'example-operator'),
      ...api.list('v1', 'serviceaccounts', NS).filter((o) => o.metadata.name === 'example-operator'),
      ...api.list('v1', 'configmaps', NS),
      ...api.list('v1', 'pods', NS),
      ...api.list('coordination.k8s.io/v1', 'leases', NS),
      ...api.list(`${GROUP}/v1`, 'installations'),
      ...api.list(`${GROUP}/v1`, 'apiservers'),
    ];
    assert.equal(left.map((o) => `${o.kind}/${o.metadata.name}`), [], 'nothing remains');
    at('nothing remains');
  } finally {
    if (process.env.TEST_VERBOSE) console.log(`\n${timeline.join('\n')}\n`);
    await api.close();
  }
});

test.run();
