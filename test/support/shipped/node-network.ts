// What a shipped operator's chart needs of a cluster that this test cluster
// lacks, supplied from outside the chart so that the chart stays as its
// project ships it:
// - the pod network: the real node has no CNI (test/support/node/README.md),
//   so a mutating admission webhook of the test's own puts every pod created
//   in the namespace on the host network, with the API server's address in
//   each container (nothing routes the `kubernetes` Service's ClusterIP);
//   that covers the operator's pods and the hooks' Jobs alike. A webhook, not
//   a MutatingAdmissionPolicy: Kubernetes 1.30 serves no such policy, and the
//   shipped tier runs there too;
// - a scheduler: the control plane runs none (kube-scheduler is not built), so
//   bind() binds each unbound pod of the namespace to the node with the
//   pods/binding subresource, as kube-scheduler would. A stand-in: it decides
//   nothing, there is one node.

import { readFileSync } from 'node:fs';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { TestCluster } from '../cluster/index.ts';
import { onFileEnd } from '../file-end.ts';
import type { RealNode } from '../node/index.ts';

/** The API server's address, in place of the `kubernetes` Service's: what each container of a host-network pod is given. */
const apiEnv = (c: TestCluster) => [
  { name: 'KUBERNETES_SERVICE_HOST', value: '127.0.0.1' },
  { name: 'KUBERNETES_SERVICE_PORT', value: new URL(c.url).port },
];

/** The JSON patch that puts POD on the host network, each of its containers and init containers given the API's address. */
function hostNetworkPatch(c: TestCluster, pod: any): object[] {
  const env = apiEnv(c);
  const names = new Set(env.map((e) => e.name));
  const patch: object[] = [{ op: 'add', path: '/spec/hostNetwork', value: true }];
  for (const list of ['containers', 'initContainers'] as const)
    (pod.spec[list] ?? []).forEach((container: any, i: number) => {
      const kept = (container.env ?? []).filter((e: any) => !names.has(e.name));
      patch.push({ op: 'add', path: `/spec/${list}/${i}/env`, value: [...kept, ...env] });
    });
  return patch;
}

/**
 * The webhook server for C: HTTPS on loopback with the cluster's own serving certificate (SAN 127.0.0.1, signed by
 * the cluster CA), closed at the file's end. Every review it gets is a pod CREATE of a namespace that asked for it.
 */
async function serveWebhook(c: TestCluster): Promise<number> {
  const server = createServer({ cert: readFileSync(c.state.servingCert), key: readFileSync(c.state.servingKey) }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (b: Buffer) => chunks.push(b));
    req.on('end', () => {
      const review = JSON.parse(Buffer.concat(chunks).toString());
      const patch = Buffer.from(JSON.stringify(hostNetworkPatch(c, review.request.object))).toString('base64');
      res.setHeader('content-type', 'application/json');
      res.end(
        JSON.stringify({
          apiVersion: 'admission.k8s.io/v1',
          kind: 'AdmissionReview',
          response: { uid: review.request.uid, allowed: true, patchType: 'JSONPatch', patch },
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  onFileEnd(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return (server.address() as AddressInfo).port;
}

/** The webhook and its configuration for NAMESPACE: created, and removed by the file's end with the cluster's objects. */
export async function hostNetworkPolicy(c: TestCluster, namespace: string): Promise<void> {
  const port = await serveWebhook(c);
  await c.create(
    {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'MutatingWebhookConfiguration',
      metadata: { name: `host-network-${namespace}` },
      webhooks: [
        {
          name: 'host-network.drainguard.test',
          clientConfig: { url: `https://127.0.0.1:${port}/mutate`, caBundle: readFileSync(c.state.caFile).toString('base64') },
          rules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['pods'] }],
          namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': namespace } },
          failurePolicy: 'Fail',
          sideEffects: 'None',
          admissionReviewVersions: ['v1'],
          timeoutSeconds: 10,
        },
      ],
    },
    'mutatingwebhookconfigurations',
  );
  // The configuration takes effect once the API server's admission has loaded it: a probe pod shows when.
  await c.waitFor(
    async () => {
      const r = await c.api.request('POST', `/api/v1/namespaces/${namespace}/pods?dryRun=All`, {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'host-network-probe' },
        spec: { containers: [{ name: 'probe', image: 'probe' }] },
      });
      return r.status === 201 && r.body?.spec?.hostNetwork === true;
    },
    30_000,
    `the host-network webhook applied in ${namespace}`,
  );
}

/** Binds every pod of NAMESPACE (those matching LABEL_SELECTOR) created without a node to NODE until the returned stop is called. */
export function bindPods(c: TestCluster, namespace: string, node: RealNode, labelSelector?: string): () => void {
  let stopped = false;
  let stopWatch = () => {};
  const bound = new Set<string>();
  const bind = async (pod: any) => {
    if (bound.has(pod.metadata.uid) || pod.spec.nodeName || pod.metadata.deletionTimestamp) return;
    bound.add(pod.metadata.uid);
    const r = await c.api.request('POST', `/api/v1/namespaces/${namespace}/pods/${pod.metadata.name}/binding`, {
      apiVersion: 'v1',
      kind: 'Binding',
      metadata: { name: pod.metadata.name, uid: pod.metadata.uid },
      target: { apiVersion: 'v1', kind: 'Node', name: node.name },
    });
    if (r.status !== 201 && r.status !== 404 && r.status !== 409)
      process.stderr.write(`binding ${namespace}/${pod.metadata.name}: ${r.status} ${JSON.stringify(r.body?.message)}\n`);
  };
  const watch = () => {
    if (stopped) return;
    // A watch from no resourceVersion begins with every pod there is (ADDED): none is missed across a restart.
    stopWatch = c.api.watch(
      `/api/v1/namespaces/${namespace}/pods?fieldSelector=spec.nodeName%3D${labelSelector ? `&labelSelector=${encodeURIComponent(labelSelector)}` : ''}`,
      (e) => {
        if (e.type === 'ADDED' || e.type === 'MODIFIED') void bind(e.object);
      },
      () => setTimeout(watch, 100),
    );
  };
  watch();
  return () => {
    stopped = true;
    stopWatch();
  };
}
