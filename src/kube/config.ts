// Where the Kubernetes API is and who drainguard is there, found as kubectl
// does: KUBECONFIG, else ~/.kube/config, else the pod's service account.

import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { KubeConfig, type User } from '@kubernetes/client-node';
import { type LocateOptions, NoApiConfigError, locateApiConfig } from './locate.ts';

export { NoApiConfigError, SERVICE_ACCOUNT_DIR } from './locate.ts';

type Authenticator = Parameters<KubeConfig['addAuthenticator']>[0];

const TOKEN_FILE_PROVIDER = 'drainguard-token-file';

export interface ApiAccess {
  readonly kubeConfig: KubeConfig;
  /** The API server's URL, for messages. */
  readonly server: string;
  /** How it was found, for messages ("KUBECONFIG=/path", "in-cluster service account"). */
  readonly source: string;
  /** The service account's namespace in-cluster, or the context's namespace. */
  readonly namespace?: string;
}

export type LoadOptions = LocateOptions;

export function loadApiAccess(env: NodeJS.ProcessEnv, options: LoadOptions = {}): ApiAccess {
  const kc = new KubeConfig();
  const located = locateApiConfig(env, options);
  const { source } = located;
  if (located.kind === 'kubeconfig') {
    kc.loadFromFile(located.files[0]!);
    for (const p of located.files.slice(1)) {
      const more = new KubeConfig();
      more.loadFromFile(p);
      kc.mergeConfig(more, true);
    }
  } else {
    loadInCluster(kc, env, located.dir);
  }
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new NoApiConfigError(`${source}: no current context with a cluster`);
  const context = kc.getContextObject(kc.getCurrentContext());
  return { kubeConfig: kc, server: cluster.server, source, namespace: context?.namespace };
}

function loadInCluster(kc: KubeConfig, env: NodeJS.ProcessEnv, dir: string): void {
  const host = env.KUBERNETES_SERVICE_HOST!;
  const port = env.KUBERNETES_SERVICE_PORT ?? '443';
  const caFile = join(dir, 'ca.crt');
  const namespaceFile = join(dir, 'namespace');
  kc.loadFromOptions({
    clusters: [{ name: 'in-cluster', server: `https://${host.includes(':') ? `[${host}]` : host}:${port}`, caFile: existsSync(caFile) ? caFile : undefined, skipTLSVerify: false }],
    users: [{ name: 'in-cluster', authProvider: { name: TOKEN_FILE_PROVIDER, config: { path: join(dir, 'token') } } }],
    contexts: [{ name: 'in-cluster', cluster: 'in-cluster', user: 'in-cluster', namespace: existsSync(namespaceFile) ? readFileSync(namespaceFile, 'utf8').trim() : undefined }],
    currentContext: 'in-cluster',
  });
  kc.addAuthenticator(new RotatingTokenFile());
}

/**
 * The projected service account token: the kubelet replaces the file before
 * the token expires, so it is read again whenever the file changed.
 */
export class RotatingTokenFile implements Authenticator {
  #token = '';
  #stamp = '';

  isAuthProvider(user: User): boolean {
    return user.authProvider?.name === TOKEN_FILE_PROVIDER;
  }

  async applyAuthentication(user: User, opts: { headers?: Record<string, unknown> }): Promise<void> {
    const path: string = user.authProvider.config.path;
    const st = statSync(path);
    const stamp = `${st.ino}:${st.mtimeMs}:${st.size}`;
    if (stamp !== this.#stamp) {
      this.#token = readFileSync(path, 'utf8').trim();
      this.#stamp = stamp;
    }
    opts.headers ??= {};
    opts.headers.Authorization = `Bearer ${this.#token}`;
  }
}
