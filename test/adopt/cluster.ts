// What adopt wrote, installed on the run's real control plane and removed
// again: its pods run by the kubelet stand-in (drainguard is the built
// executable, the operator test/fixtures/operator.ts behind it), the guard
// seen on the operator's ServiceAccount, then the uninstall the docs give
// (helm uninstall with its post-delete hook; kubectl's three commands for an
// overlay), and every object the render holds gone: none left with a
// finalizer, none terminating, no pod and no Lease in the namespace.

import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import * as assert from 'uvu/assert';
import { SERVICE_ACCOUNT_DIR } from '../../src/kube/locate.ts';
import { pathOf } from '../support/cluster/index.ts';
import { Kubelet } from '../support/kubelet/index.ts';
import { type KubeletCluster } from '../support/kubelet/cluster.ts';
import type { Launch, Runner } from '../support/kubelet/container.ts';
import { DRAINGUARD_IMAGE, drainguardImage } from '../support/kubelet/runners.ts';
import { NODE, fixture } from '../support/proc.ts';
import type { KubeObject } from '../deploy/support/manifests.ts';

/** Every operator image as the fixture operator: in wrap mode behind drainguard (what follows `--`), else as the container. */
const operator: Runner = (run): Launch | undefined => {
  if (run.hook) return undefined;
  const script = fixture('operator.ts');
  // A chart's own Job (one-template's pre-delete `/my-operator cleanup`) runs to completion.
  const env = run.argv.includes('cleanup') ? { FIXTURE_EXIT_AFTER: '100' } : {};
  const sep = run.argv.indexOf('--');
  if (/(^|\/)drainguard$/.test(run.argv[0] ?? '') && sep !== -1)
    return { file: run.argv[0]!, args: [...run.argv.slice(1, sep + 1), NODE, script], env, probes: false };
  return { file: NODE, args: [script], env, probes: false };
};

/**
 * drainguard's image. A pod that mounts no token gets one projected into drainguard's container
 * alone, at the ServiceAccount directory, which a host process cannot see: the stand-in wrote the
 * volume's files (the pod's token from TokenRequest, kube-root-ca.crt's CA) elsewhere, and a
 * kubeconfig that names them stands for that directory. The real kubelet mounts it where it is.
 */
function drainguardWithToken(server: string): Runner {
  const plain = drainguardImage();
  return (run) => {
    const launch = plain(run);
    const dir = run.hostPath(SERVICE_ACCOUNT_DIR);
    if (!launch || !dir || run.env.KUBECONFIG) return launch;
    const config = join(dirname(dir), `kubeconfig-${randomBytes(4).toString('hex')}`);
    const kubeconfig = {
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'c', cluster: { server, 'certificate-authority': join(dir, 'ca.crt') } }],
      users: [{ name: 'u', user: { tokenFile: join(dir, 'token') } }],
      contexts: [{ name: 'c', context: { cluster: 'c', user: 'u', namespace: readFileSync(join(dir, 'namespace'), 'utf8') } }],
      'current-context': 'c',
    };
    writeFileSync(config, JSON.stringify(kubeconfig), { mode: 0o600 });
    return { ...launch, env: { ...launch.env, KUBECONFIG: config } };
  };
}

export const startKubelet = (c: KubeletCluster, namespaces: readonly string[]): Promise<Kubelet> => {
  const drainguard = drainguardWithToken(c.cluster.url);
  return Kubelet.start({ cluster: c.access, namespaces, images: (image) => (image.startsWith(DRAINGUARD_IMAGE) ? drainguard : operator) });
};

const isHook = (o: KubeObject) => o.metadata.annotations?.['helm.sh/hook'] !== undefined;
const hasPod = (o: KubeObject) => ['Deployment', 'StatefulSet', 'DaemonSet'].includes(o.kind);

/** The operator pods of NAMESPACE on KUBELET's node: each runs drainguard, and its guard is on its ServiceAccount. */
export async function guarded(c: KubeletCluster, kubelet: Kubelet, namespace: string, objects: readonly KubeObject[]): Promise<void> {
  const workloads = objects.filter((o) => hasPod(o) && !isHook(o) && (o.metadata.namespace ?? namespace) === namespace);
  assert.ok(workloads.length > 0, 'the render has an operator');
  for (const w of workloads) {
    const account = w.spec.template.spec.serviceAccountName ?? 'default';
    const labels = w.spec.selector.matchLabels as Record<string, string>;
    const selector = encodeURIComponent(
      Object.entries(labels)
        .map(([k, v]) => `${k}=${v}`)
        .join(','),
    );
    const pods = await c.poll(
      `/api/v1/namespaces/${namespace}/pods?labelSelector=${selector}`,
      (b) => (b.items ?? []).some((p: any) => p.spec.nodeName === kubelet.nodeName && p.status?.phase === 'Running'),
      90_000,
      `a pod of the ${w.kind} ${w.metadata.name} running\n${kubelet.timeline()}`,
    );
    for (const pod of pods.items.filter((p: any) => p.spec.nodeName === kubelet.nodeName && p.status?.phase === 'Running')) {
      const holder = `drainguard.dev/holder-${pod.metadata.uid}`;
      await c.poll(
        `/api/v1/namespaces/${namespace}/serviceaccounts/${account}`,
        (b) => b.metadata?.finalizers?.includes(holder),
        60_000,
        `${holder} on ServiceAccount ${account}\n${kubelet.timeline()}\n${logsOf(kubelet)}`,
      );
    }
  }
}

const CLUSTER_SCOPED = new Set(['ClusterRole', 'ClusterRoleBinding', 'ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding']);

/** The API path of a rendered object, NAMESPACE where a namespaced one names none. */
export const objectPath = (o: KubeObject, namespace: string): string =>
  pathOf({ ...o, metadata: { ...o.metadata, namespace: CLUSTER_SCOPED.has(o.kind) ? undefined : (o.metadata.namespace ?? namespace) } });

/**
 * The stand-in's own failures, but for a pod deleted before it could start it (the token of a pod
 * that is gone: 404): a DaemonSet's controller replaces its pods as the shared cluster's nodes come
 * and go, and deletes one while the stand-in still prepares it. Any other is a failure of the test.
 */
export const kubeletErrors = (kubelet: Kubelet): string[] =>
  kubelet.errors.filter((e) => !/\/token: 404 "pods \\"[^"\\]+\\" not found"$/.test(e));

/** The last lines each container the kubelet started wrote, for a failure's message. */
export const logsOf = (kubelet: Kubelet): string =>
  kubelet.events
    .filter((e) => e.proc)
    .map((e) => `--- ${e.pod}/${e.container} ${e.what}\n${e.proc!.stderr.slice(-15).join('\n')}\n${e.proc!.stdout.slice(-5).join('\n')}`)
    .join('\n');

/** Every object of OBJECTS gone (its namespace's default filled in); no pod, no Lease of drainguard left in NAMESPACES. */
export async function nothingLeft(
  c: KubeletCluster,
  objects: readonly KubeObject[],
  namespace: string,
  namespaces: readonly string[],
): Promise<void> {
  for (const o of objects) {
    if (isHook(o) || o.kind === 'CustomResourceDefinition' || o.kind === 'Namespace') continue;
    const path = objectPath(o, namespace);
    await c.poll(path, (_b, s) => s === 404, 60_000, `${o.kind} ${o.metadata.name} gone (no finalizer holds it, nothing terminating)`);
  }
  for (const ns of namespaces) {
    await c.poll(`/api/v1/namespaces/${ns}/pods`, (b) => (b.items ?? []).length === 0, 60_000, `no pod left in ${ns}`);
    const leases = await c.api.call('GET', `/apis/coordination.k8s.io/v1/namespaces/${ns}/leases`);
    const ours = (leases.body.items ?? []).filter((l: any) => l.metadata.name.startsWith('drainguard-')).map((l: any) => l.metadata.name);
    assert.equal(ours, [], `no Lease of drainguard left in ${ns}`);
  }
}

/** What a failed run left: finalizers stripped, then deleted, so that the namespaces can go. */
export async function strip(c: KubeletCluster, objects: readonly KubeObject[], namespace: string): Promise<void> {
  for (const o of objects) {
    if (o.kind === 'CustomResourceDefinition' || o.kind === 'Namespace') continue;
    const path = objectPath(o, namespace);
    await c.api.call('PATCH', path, { metadata: { finalizers: null } }, 'application/merge-patch+json');
    await c.api.call('DELETE', path);
  }
  await c.freeAnchors(namespace);
}
