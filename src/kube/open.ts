// The API client of a command that needs one (release, status, predelete,
// check, the guard), from the kubeconfig or the in-cluster service account,
// as kubectl finds them. Imported lazily, with the rest of the kube layer.

import type { Logger } from '../log/logger.ts';
import { KubeClient } from './client.ts';
import { NoApiConfigError, loadApiAccess } from './config.ts';
import { apiConfigError } from './locate.ts';

/** An API client, or a ConfigError saying why there is none (`why`: what needs the API). */
export async function openClient(env: NodeJS.ProcessEnv, logger: Logger, why: string): Promise<KubeClient> {
  let access;
  try {
    access = await loadApiAccess(env);
  } catch (err) {
    throw apiConfigError(why, err);
  }
  return new KubeClient({ access, logger });
}

/** An API client, or undefined where none is configured: for a step that goes without (the leader Lease, the namespace's resources). */
export async function openOptionalClient(env: NodeJS.ProcessEnv, logger: Logger): Promise<KubeClient | undefined> {
  try {
    return new KubeClient({ access: await loadApiAccess(env), logger });
  } catch (err) {
    if (err instanceof NoApiConfigError) return undefined;
    throw err;
  }
}

/** The namespace where holder Leases are looked for when drainguard may not list them cluster-wide. */
export function defaultNamespace(client: KubeClient, podNamespace: string | undefined): string {
  return podNamespace ?? client.namespace ?? 'default';
}
