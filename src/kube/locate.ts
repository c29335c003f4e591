// Which configuration of the Kubernetes API is in force, found as kubectl
// does (KUBECONFIG, else ~/.kube/config, else the pod's service account),
// without loading the Kubernetes client: `run` checks it before the operator
// starts (a missing configuration is exit 2) and loads the client after.

import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';
import { ConfigError } from '../errors.ts';

export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

export interface LocateOptions {
  /** Where the pod's service account is mounted (a parameter for tests). */
  readonly serviceAccountDir?: string;
  readonly home?: string;
}

export type ApiConfigSource =
  | { readonly kind: 'kubeconfig'; readonly files: readonly string[]; readonly source: string }
  | { readonly kind: 'in-cluster'; readonly dir: string; readonly host: string; readonly source: string };

/** Thrown when no way to reach the API is configured. */
export class NoApiConfigError extends ConfigError {
  override name = 'NoApiConfigError';
  constructor(message: string) {
    super('DG_CONFIG_NO_API', message);
  }
}

export function locateApiConfig(
  env: NodeJS.ProcessEnv,
  { serviceAccountDir = SERVICE_ACCOUNT_DIR, home = env.HOME ?? homedir() }: LocateOptions = {},
): ApiConfigSource {
  const paths = (env.KUBECONFIG ?? '').split(delimiter).filter((p) => p !== '');
  const userConfig = join(home, '.kube', 'config');
  if (paths.length > 0) {
    const present = paths.filter((p) => existsSync(p));
    if (present.length === 0) throw new NoApiConfigError(`KUBECONFIG names no file that exists: ${env.KUBECONFIG}`);
    return { kind: 'kubeconfig', files: present, source: `KUBECONFIG=${env.KUBECONFIG}` };
  }
  if (existsSync(userConfig)) return { kind: 'kubeconfig', files: [userConfig], source: userConfig };
  if (env.KUBERNETES_SERVICE_HOST && existsSync(join(serviceAccountDir, 'token'))) {
    return { kind: 'in-cluster', dir: serviceAccountDir, host: env.KUBERNETES_SERVICE_HOST, source: 'in-cluster service account' };
  }
  throw new NoApiConfigError(
    'no Kubernetes API configured: set KUBECONFIG, create ~/.kube/config, ' +
      'or run in a pod with a service account token ' +
      `(KUBERNETES_SERVICE_HOST and ${join(serviceAccountDir, 'token')})`,
  );
}

/**
 * The cheap half of loading a kubeconfig: the files can be read and one names
 * a current context (as YAML `current-context: NAME` or JSON). What is left
 * to the client (the rest of the YAML, the context's cluster) fails after the
 * operator started, and is logged then.
 */
export function precheckApiConfig(located: ApiConfigSource): void {
  if (located.kind === 'in-cluster') return;
  const texts = located.files.map((f) => readFileSync(f, 'utf8'));
  // At the start of a line (YAML) or after `{` or `,` (JSON, which kubectl reads too).
  if (!texts.some((t) => /(?:^|[{,])\s*["']?current-context["']?\s*:\s*["']?[^\s"',}#]/m.test(t)))
    throw new NoApiConfigError(`${located.source}: no current context with a cluster`);
}

/** The configuration error of a command that needs the API (`why`: what needs it) and cannot have it. */
export function apiConfigError(why: string, err: unknown): ConfigError {
  if (err instanceof NoApiConfigError)
    return new ConfigError('DG_CONFIG_NO_API', `${why} needs the Kubernetes API: ${err.message}`, { cause: err });
  return new ConfigError(
    'DG_CONFIG_NO_API',
    `${why} needs the Kubernetes API, but its configuration cannot be read: ${(err as Error).message}`,
    { cause: err },
  );
}
