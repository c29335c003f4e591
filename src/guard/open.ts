// Builds the guard of a supervising command (run, sidecar) from its resolved
// configuration. Imported lazily: without DRAINGUARD_GUARD, drainguard never
// loads the Kubernetes client.

import type { SupervisorConfig } from '../supervisor/config.ts';
import { KubeClient } from '../kube/client.ts';
import { loadApiAccess } from '../kube/config.ts';
import { apiConfigError } from '../kube/locate.ts';
import type { Logger } from '../log/logger.ts';
import { Guard } from './guard.ts';

export interface OpenGuardOptions {
  readonly env: NodeJS.ProcessEnv;
  readonly logger: Logger;
  readonly onReleaseFailed?: (objects: readonly string[], fix: string) => void;
}

/** An API client, or a ConfigError saying why there is none (`why`: what needs the API). */
export function openClient(env: NodeJS.ProcessEnv, logger: Logger, why: string): KubeClient {
  let access;
  try {
    access = loadApiAccess(env);
  } catch (err) {
    throw apiConfigError(why, err);
  }
  return new KubeClient({ access, logger });
}

/** The namespace where holder Leases are looked for when drainguard may not list them cluster-wide. */
export function defaultNamespace(client: KubeClient, podNamespace: string | undefined): string {
  return podNamespace ?? client.namespace ?? 'default';
}

/** The guard for `config.guard`; throws ConfigError when no Kubernetes API is configured. */
export function openGuard(config: SupervisorConfig, { env, logger, onReleaseFailed }: OpenGuardOptions): Guard {
  const { name, namespace, uid } = config.pod;
  return new Guard({
    client: openClient(env, logger, 'DRAINGUARD_GUARD is set, so drainguard'),
    targets: config.guard,
    pod: { name: name!, namespace: namespace!, uid: uid! },
    leaseDurationMs: config.leaseDurationMs,
    logger,
    onReleaseFailed,
  });
}
