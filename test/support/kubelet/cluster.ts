// The run's real control plane (test/support/cluster) as the tests that run
// pods through the kubelet stand-in use it: the kubelet's access, the admin
// API, kubectl as the admin, and polling with a deadline.

import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { type TestCluster, useCluster } from '../cluster/index.ts';
import { Api, type ClusterAccess } from './api.ts';

export interface KubeletCluster {
  readonly cluster: TestCluster;
  /** What Kubelet.start needs. */
  readonly access: ClusterAccess;
  /** The admin API. */
  readonly api: Api;
  /** A fresh namespace, deleted at the end of the file. */
  namespace(prefix: string): Promise<string>;
  /** Polls GET `path` every 100 ms until `ok` holds, for at most `ms`; resolves with the body. */
  poll(path: string, ok: (body: any, status: number) => boolean, ms: number, what: string): Promise<any>;
  /** `kubectl ARGS` as the admin, `input` on stdin; returns stdout. */
  kubectl(args: readonly string[], input?: string): string;
  /**
   * Frees the release anchors (Leases being deleted, kept by a holder's finalizer) that drainguards killed
   * by the test left in `namespace`: no drainguard is left there to sweep them, and the namespace would wait.
   */
  freeAnchors(namespace: string): Promise<void>;
}

/** The run's shared control plane, or `own`: a file's private one (another release, other gates). */
export async function kubeletCluster(own?: TestCluster): Promise<KubeletCluster> {
  const cluster = own ?? (await useCluster());
  const access: ClusterAccess = {
    server: cluster.url,
    ca: cluster.ca,
    cert: readFileSync(cluster.state.adminCert),
    key: readFileSync(cluster.state.adminKey),
  };
  const api = new Api(access);
  return {
    cluster,
    access,
    api,
    namespace: async (prefix) => (await cluster.namespace(prefix)).name,
    async poll(path, ok, ms, what) {
      const deadline = Date.now() + ms;
      let last: { status: number; body: any } | undefined;
      while (Date.now() < deadline) {
        last = await api.call('GET', path);
        if (ok(last.body, last.status)) return last.body;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      // The object without its managedFields, which would fill the message.
      const body = last?.body?.metadata ? { ...last.body, metadata: { ...last.body.metadata, managedFields: undefined } } : last?.body;
      throw new Error(`timed out after ${ms} ms waiting for ${what}; last: ${last?.status} ${JSON.stringify(body).slice(0, 4000)}`);
    },
    async freeAnchors(namespace) {
      const leases = await api.call('GET', `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases`);
      for (const l of leases.body?.items ?? [])
        if (/^drainguard-.+-anchor$/.test(l.metadata.name) && l.metadata.finalizers?.length)
          await api.call(
            'PATCH',
            `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases/${l.metadata.name}`,
            { metadata: { finalizers: null } },
            'application/merge-patch+json',
          );
    },
    kubectl: (args, input) =>
      execFileSync('kubectl', ['--kubeconfig', cluster.adminKubeconfig, ...args], {
        input,
        encoding: 'utf8',
        stdio: ['pipe', 'pipe', 'pipe'],
      }),
  };
}
