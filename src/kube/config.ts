// Where the Kubernetes API is and who drainguard is there, found as kubectl
// does: KUBECONFIG, else ~/.kube/config, else the pod's service account.

import { existsSync, readFileSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';
import { KubeConfig, type User } from '@kubernetes/client-node';
import { ConfigError } from '../config/errors.ts';

type Authenticator = Parameters<KubeConfig['addAuthenticator']>[0];

export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';
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

export interface LoadOptions {
  /** Where the pod's service account is mounted (a parameter for tests). */
  readonly serviceAccountDir?: string;
  readonly home?: string;
}

/** Thrown when no way to reach the API is configured. */
export class NoApiConfigError extends ConfigError {
  override name = 'NoApiConfigError';
  constructor(message: string) {
    super('DG_CONFIG_NO_API', message);
  }
}

export function loadApiAccess(env: NodeJS.ProcessEnv, { serviceAccountDir = SERVICE_ACCOUNT_DIR, home = env.HOME ?? homedir() }: LoadOptions = {}): ApiAccess {
  const kc = new KubeConfig();
  let source: string;
  const paths = (env.KUBECONFIG ?? '').split(delimiter).filter((p) => p !== '');
  const userConfig = join(home, '.kube', 'config');
  if (paths.length > 0) {
    const present = paths.filter((p) => existsSync(p));
    if (present.length === 0) throw new NoApiConfigError(`KUBECONFIG names no file that exists: ${env.KUBECONFIG}`);
    kc.loadFromFile(present[0]!);
    for (const p of present.slice(1)) {
      const more = new KubeConfig();
      more.loadFromFile(p);
      kc.mergeConfig(more, true);
    }
    source = `KUBECONFIG=${env.KUBECONFIG}`;
  } else if (existsSync(userConfig)) {
    kc.loadFromFile(userConfig);
    source = userConfig;
  } else if (env.KUBERNETES_SERVICE_HOST && existsSync(join(serviceAccountDir, 'token'))) {
    loadInCluster(kc, env, serviceAccountDir);
    source = 'in-cluster service account';
  } else {
    throw new NoApiConfigError(
      'no Kubernetes API configured: set KUBECONFIG, create ~/.kube/config, or run in a pod with a service account token (KUBERNETES_SERVICE_HOST and ' +
        `${join(serviceAccountDir, 'token')})`,
    );
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
