// Builds the guard of a supervising command (run, sidecar) from its resolved
// configuration. Imported lazily: without DRAINGUARD_GUARD, drainguard never
// loads the Kubernetes client.

import type { SupervisorConfig } from '../supervisor/config.ts';
import { openClient } from '../kube/open.ts';
import type { Logger } from '../log/logger.ts';
import { Guard } from './guard.ts';

export interface OpenGuardOptions {
  readonly env: NodeJS.ProcessEnv;
  readonly logger: Logger;
  readonly onReleaseFailed?: (objects: readonly string[], fix: string) => void;
}

/** The guard for `config.guard`; throws ConfigError when no Kubernetes API is configured. */
export async function openGuard(config: SupervisorConfig, { env, logger, onReleaseFailed }: OpenGuardOptions): Promise<Guard> {
  const { name, namespace, uid } = config.pod;
  return new Guard({
    client: await openClient(env, logger, 'DRAINGUARD_GUARD is set, so drainguard'),
    targets: config.guard,
    pod: { name: name!, namespace: namespace!, uid: uid! },
    leaseDurationMs: config.leaseDurationMs,
    logger,
    onReleaseFailed,
  });
}
