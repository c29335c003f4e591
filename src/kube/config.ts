// Where the Kubernetes API is and who drainguard is there, found as kubectl
// does: KUBECONFIG, else ~/.kube/config, else the pod's service account.

import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type Credentials, credentialsOf, tokenFileCredentials } from './credentials.ts';
import { readKubeconfig } from './kubeconfig.ts';
import { type LocateOptions, locateApiConfig } from './locate.ts';
import type { TransportOptions } from './transport.ts';

export { NoApiConfigError, SERVICE_ACCOUNT_DIR } from './locate.ts';

export interface ApiAccess {
  /** The API server's URL, also for messages. */
  readonly server: string;
  /** How it was found, for messages ("KUBECONFIG=/path", "in-cluster service account"). */
  readonly source: string;
  /** The service account's namespace in-cluster, or the context's namespace. */
  readonly namespace?: string;
  readonly transport: TransportOptions;
  readonly credentials: Credentials;
}

export type LoadOptions = LocateOptions;

export async function loadApiAccess(env: NodeJS.ProcessEnv, options: LoadOptions = {}): Promise<ApiAccess> {
  const located = locateApiConfig(env, options);
  const { source } = located;
  if (located.kind === 'in-cluster') return inCluster(env, located.dir, source);
  const { cluster, user, namespace } = await readKubeconfig(located.files, source);
  return {
    server: cluster.server,
    source,
    namespace,
    transport: {
      server: cluster.server,
      ca: cluster.ca,
      insecureSkipTlsVerify: cluster.insecureSkipTlsVerify,
      tlsServerName: cluster.tlsServerName,
      proxyUrl: cluster.proxyUrl,
      env,
    },
    credentials: credentialsOf(user, cluster, env),
  };
}

function inCluster(env: NodeJS.ProcessEnv, dir: string, source: string): ApiAccess {
  const host = env.KUBERNETES_SERVICE_HOST!;
  const port = env.KUBERNETES_SERVICE_PORT ?? '443';
  const server = `https://${host.includes(':') ? `[${host}]` : host}:${port}`;
  const caFile = join(dir, 'ca.crt');
  const namespaceFile = join(dir, 'namespace');
  return {
    server,
    source,
    namespace: existsSync(namespaceFile) ? readFileSync(namespaceFile, 'utf8').trim() : undefined,
    // The proxy variables apply in a pod too, as in client-go (NO_PROXY usually names the API server).
    transport: { server, ca: existsSync(caFile) ? readFileSync(caFile, 'utf8') : undefined, env },
    credentials: tokenFileCredentials(join(dir, 'token')),
  };
}
