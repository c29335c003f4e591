// What a shipped operator's chart needs of a cluster that this test cluster
// lacks, supplied from outside the chart so that the chart stays as its
// project ships it:
// - the pod network: the real node has no CNI (test/support/node/README.md),
//   so a MutatingAdmissionPolicy of the cluster's own puts every pod created
//   in the namespace on the host network, with the API server's address in
//   each container (nothing routes the `kubernetes` Service's ClusterIP);
//   that covers the operator's pods and the hooks' Jobs alike;
// - a scheduler: the control plane runs none (kube-scheduler is not built), so
//   bind() binds each unbound pod of the namespace to the node with the
//   pods/binding subresource, as kube-scheduler would. A stand-in: it decides
//   nothing, there is one node.

import type { TestCluster } from '../cluster/index.ts';
import type { RealNode } from '../node/index.ts';

const MAP = 'admissionregistration.k8s.io/v1';

/** The policy and its binding for NAMESPACE: created, and removed by the file's end with the cluster's objects. */
export async function hostNetworkPolicy(c: TestCluster, namespace: string): Promise<void> {
  const name = `host-network-${namespace}`;
  const port = new URL(c.url).port;
  const env = `[Object.spec.containers.env{name: "KUBERNETES_SERVICE_HOST", value: "127.0.0.1"},
    Object.spec.containers.env{name: "KUBERNETES_SERVICE_PORT", value: "${port}"}]`;
  await c.create(
    {
      apiVersion: MAP,
      kind: 'MutatingAdmissionPolicy',
      metadata: { name },
      spec: {
        matchConstraints: {
          resourceRules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['pods'] }],
        },
        failurePolicy: 'Fail',
        reinvocationPolicy: 'IfNeeded',
        mutations: [
          {
            patchType: 'ApplyConfiguration',
            applyConfiguration: {
              expression: `Object{spec: Object.spec{hostNetwork: true,
              containers: object.spec.containers.map(c, Object.spec.containers{name: c.name, env: ${env}})}}`,
            },
          },
          {
            patchType: 'ApplyConfiguration',
            applyConfiguration: {
              expression: `has(object.spec.initContainers) ? Object{spec: Object.spec{
              initContainers: object.spec.initContainers.map(c, Object.spec.initContainers{name: c.name,
                env: ${env.replaceAll('Object.spec.containers.env', 'Object.spec.initContainers.env')}})}} : Object{}`,
            },
          },
        ],
      },
    },
    'mutatingadmissionpolicies',
  );
  await c.create({
    apiVersion: MAP,
    kind: 'MutatingAdmissionPolicyBinding',
    metadata: { name },
    spec: { policyName: name, matchResources: { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': namespace } } } },
  });
  // The policy takes effect once the API server's admission has loaded it: a probe pod shows when.
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
    `the host-network policy applied in ${namespace}`,
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
