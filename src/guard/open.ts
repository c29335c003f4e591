// Builds the guard of a supervising command (run, sidecar) from its resolved
// configuration. Imported lazily: without DRAINGUARD_GUARD, drainguard never
// loads the Kubernetes client.

import { ConfigError } from '../config/errors.ts';
import type { SupervisorConfig } from '../supervisor/config.ts';
import { KubeClient } from '../kube/client.ts';
import { NoApiConfigError, loadApiAccess } from '../kube/config.ts';
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
    if (err instanceof NoApiConfigError) throw new ConfigError('DG_CONFIG_NO_API', `${why} needs the Kubernetes API: ${err.message}`, { cause: err });
    throw new ConfigError('DG_CONFIG_NO_API', `${why} needs the Kubernetes API, but its configuration cannot be read: ${(err as Error).message}`, { cause: err });
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
