// Builds the guard of a supervising command (run, sidecar) from its settings.
// Imported lazily: without DRAINGUARD_GUARD, drainguard never loads the
// Kubernetes client.

import type { GuardTarget } from '../config/guard-list.ts';
import { openClient } from '../kube/open.ts';
import type { PodRef } from '../kube/pod.ts';
import type { Logger } from '../log/logger.ts';
import { Guard } from './guard.ts';

/** What a guard is made of: the resolved configuration's part, and the release margin of the stop's deadlines. */
export interface GuardSettings {
  readonly targets: readonly GuardTarget[];
  readonly pod: PodRef;
  readonly leaseDurationMs: number;
  readonly releaseMarginMs: number;
}

export interface OpenGuardOptions {
  readonly env: NodeJS.ProcessEnv;
  readonly logger: Logger;
  readonly onReleaseFailed?: (objects: readonly string[], fix: string) => void;
}

/** The guard for `settings`; throws ConfigError when no Kubernetes API is configured. */
export async function openGuard(settings: GuardSettings, { env, logger, onReleaseFailed }: OpenGuardOptions): Promise<Guard> {
  return new Guard({ ...settings, client: await openClient(env, logger, 'DRAINGUARD_GUARD is set, so drainguard'), logger, onReleaseFailed });
}
