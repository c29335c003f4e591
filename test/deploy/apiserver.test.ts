// The rendered manifests against the test API server (RBAC enforced, as
// kubernetes-facts.md records a real one): drainguard, with the environment
// the kubelet would give it and only the permissions the manifests grant it
// (the operator's own roles are emptied),
// sets its guard on all seven objects, sweeps a stale holder, renews its
// Lease, keeps the objects through an uninstall and releases them at the
// end, without a single request refused.

import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { type FakeApiServer, type KubeObject as StoredObject, startApiServer, writeKubeconfig } from '../support/apiserver/index.ts';
import { NODE, Proc, drainguard, fixture, tempDir } from '../support/proc.ts';
import { type KubeObject, kubeletEnv, rendered, theDeployment } from './support/manifests.ts';

const apiVersionOf = (kind: string) => (kind === 'ServiceAccount' || kind === 'Namespace' ? 'v1' : 'rbac.authorization.k8s.io/v1');
const resourceOf = (kind: string) => `${kind.toLowerCase()}s`;
const GUARDED = ['ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding'];
const STALE_HOLDER = 'drainguard.dev/holder-0b5e6f3e-8d21-4c7c-9a53-1f0c2d3e4f50';
/** Renewed every second, so the test sees renewals. */
const LEASE = { DRAINGUARD_LEASE_DURATION: '3s' };

interface Installed {
  readonly api: FakeApiServer;
  readonly deployment: KubeObject;
  readonly pod: { name: string; namespace: string; uid: string };
  readonly kubeconfig: string;
  /** The guarded objects of the install (the operator's and drainguard's), as stored now. */
  objects(): { id: string; object: StoredObject | undefined }[];
  /** `helm uninstall` or `kubectl delete -k`: every object deleted, background propagation. */
  uninstall(): void;
  /** Requests the API server refused (401/403). */
  refused(): string[];
}

async function install(mode: string): Promise<Installed> {
  const objects = rendered(mode);
  const deployment = theDeployment(objects);
  const api = await startApiServer();
  const namespace = deployment.metadata.namespace!;
  for (const o of objects) {
    if (o.kind === 'Deployment') continue;
    const copy = structuredClone(o);
    // drainguard's own permissions alone: the operator's roles grant nothing here.
    if ((o.kind === 'ClusterRole' || o.kind === 'Role') && o.metadata.labels?.['app.kubernetes.io/name'] !== 'drainguard') copy.rules = [];
    // A holder that died without releasing (no Lease): drainguard must find and sweep it.
    if (o.kind === 'ClusterRole' && copy.rules.length === 0) copy.metadata.finalizers = [STALE_HOLDER];
    api.create(copy);
  }
  // The pod the Deployment's ReplicaSet would make, scheduled.
  const template = deployment.spec.template;
  const stored = api.create({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: `${deployment.metadata.name}-6c9d8-x2x4q`, namespace, labels: template.metadata.labels },
    spec: { ...structuredClone(template.spec), nodeName: 'node-1' },
  });
  const pod = { name: stored.metadata.name, namespace, uid: stored.metadata.uid as string };
  const kubeconfig = writeKubeconfig(tempDir(), api, api.tokenFor(namespace, template.spec.serviceAccountName, { pod: pod.name }));
  const guarded = objects.filter((o) => GUARDED.includes(o.kind));
  return {
    api,
    deployment,
    pod,
    kubeconfig,
    objects: () =>
      guarded.map((o) => ({
        id: `${o.kind}/${o.metadata.name}`,
        object: api.get(apiVersionOf(o.kind), resourceOf(o.kind), o.metadata.namespace, o.metadata.name),
      })),
    uninstall() {
      for (const o of guarded) api.delete(apiVersionOf(o.kind), resourceOf(o.kind), o.metadata.namespace, o.metadata.name, { propagationPolicy: 'Background' });
    },
    refused: () =>
      api.requests
        // The guard looks for other holders cluster-wide first and falls back to its own
        // namespace when refused (docs/guard.md); the manifests grant the namespace only.
        .filter((r) => !(r.verb === 'list' && r.resource === 'leases' && r.namespace === undefined))
        .filter((r) => r.status === 401 || r.status === 403)
        .map((r) => `${r.status} ${r.verb} ${r.path} as ${r.user}`),
  };
}

/** The guard set on every object, the stale holder swept, and the Lease renewed at least once. */
async function guardIsSet(c: Installed): Promise<void> {
  const holder = `drainguard.dev/holder-${c.pod.uid}`;
  const lease = `drainguard-${c.pod.uid}`;
  await c.api.waitFor(
    () =>
      c.objects().every((o) => o.object?.metadata.finalizers?.includes(holder) && !o.object.metadata.finalizers.includes(STALE_HOLDER)) &&
      c.api.requests.some((r) => r.resource === 'leases' && r.name === lease && (r.verb === 'patch' || r.verb === 'update') && r.status === 200),
    15_000,
    `${holder} on ${c.objects().map((o) => o.id).join(', ')}, ${STALE_HOLDER} swept, and a renewal of the Lease (refused so far: ${c.refused().join('; ')})`,
  );
}

function allGone(c: Installed): Promise<unknown> {
  return c.api.waitFor(() => c.objects().every((o) => o.object === undefined), 15_000, `the install gone, left: ${c.objects().filter((o) => o.object).map((o) => o.id)}`);
}

test('wrap: the guard is set with what the manifests grant, holds through an uninstall, and is released', async () => {
  const c = await install('wrap');
  const manager = c.deployment.spec.template.spec.containers.find((x: any) => x.name === 'manager');
  const env = { ...kubeletEnv(manager.env, c.pod), KUBECONFIG: c.kubeconfig, DRAINGUARD_SOCKET: join(tempDir(), 'drain.sock'), ...LEASE };
  const p = drainguard(['run', '--', NODE, fixture('operator.ts')], env);
  try {
    await p.line('ready');
    await guardIsSet(c);
    c.uninstall();
    assert.ok(c.objects().every((o) => o.object?.metadata.deletionTimestamp), 'deleted, and kept by the finalizers');
    p.kill('SIGTERM');
    assert.equal((await p.exit()).code, 0, p.stderr.join('\n'));
    await allGone(c);
    assert.equal(c.refused(), []);
  } finally {
    p.kill('SIGKILL');
    await c.api.close();
  }
});

test('native sidecar: the same with drainguard sidecar and prestop, Events on the pod included', async () => {
  const c = await install('native-sidecar');
  const spec = c.deployment.spec.template.spec;
  const sidecarEnv = kubeletEnv(spec.initContainers.find((x: any) => x.name === 'drainguard').env, c.pod);
  const socket = join(tempDir(), 'drain.sock');
  const env = { ...sidecarEnv, KUBECONFIG: c.kubeconfig, DRAINGUARD_SOCKET: socket, DRAINGUARD_HTTP_ADDR: '127.0.0.1:0', ...LEASE };
  const sidecar = drainguard(['sidecar'], env);
  const operator = new Proc(NODE, [fixture('operator.ts')], { DRAINGUARD_SOCKET: socket, FIXTURE_WORK: '300' });
  try {
    await sidecar.log('sidecar ready');
    await operator.line('ready');
    await guardIsSet(c);
    c.uninstall();
    const prestop = drainguard(['prestop'], { DRAINGUARD_SOCKET: socket });
    assert.equal((await prestop.exit()).code, 0, prestop.stderr.join('\n'));
    operator.kill('SIGTERM');
    await operator.exit();
    sidecar.kill('SIGTERM');
    assert.equal((await sidecar.exit()).code, 0, sidecar.stderr.join('\n'));
    await allGone(c);
    assert.ok(c.api.list('v1', 'events', c.pod.namespace).length > 0, 'Events recorded on the pod');
    assert.equal(c.refused(), []);
  } finally {
    operator.kill('SIGKILL');
    sidecar.kill('SIGKILL');
    await c.api.close();
  }
});

test.run();
