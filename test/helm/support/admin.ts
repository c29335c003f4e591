// The test cluster's admin, as the helm tests that run a release on it need it:
// the kubelet stand-in's access, and helm with the admin kubeconfig.

import { readFileSync } from 'node:fs';
import type { TestCluster } from '../../support/cluster/index.ts';
import { type HelmResult, helmRun } from '../../support/helm.ts';

/** The admin's client certificate and the CA, for Kubelet.start({ cluster }). */
export const adminAccess = (cluster: TestCluster) => ({
  server: cluster.url,
  ca: cluster.ca,
  cert: readFileSync(cluster.state.adminCert, 'utf8'),
  key: readFileSync(cluster.state.adminKey, 'utf8'),
});

/** helm ARGS with the admin kubeconfig, at most TIMEOUT_MS. */
export const adminHelm =
  (cluster: TestCluster, timeoutMs = 150_000) =>
  (args: string[]): Promise<HelmResult> =>
    helmRun([...args, '--kubeconfig', cluster.adminKubeconfig], timeoutMs);
