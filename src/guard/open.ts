// Builds the guard of a supervising command (run, sidecar) from its settings.
// Imported lazily: without DRAINGUARD_GUARD, drainguard never loads the
// Kubernetes client.

import type { GuardTarget } from '../config/guard-list.ts';
import type { KubeClient } from '../kube/client.ts';
import { openClient } from '../kube/open.ts';
import type { PodRef } from '../kube/pod.ts';
import type { Logger } from '../log/logger.ts';
import { Guard } from './guard.ts';
import { whyApi } from './late.ts';

/** What a guard is made of: the resolved configuration's part. */
export interface GuardSettings {
  readonly targets: readonly GuardTarget[];
  readonly pod: PodRef;
  readonly leaseDurationMs: number;
}

/** What a supervising command drives and reads of its guard. */
export type GuardUse = Pick<Guard, 'start' | 'release' | 'report'>;

export interface OpenGuardOptions {
  readonly env: NodeJS.ProcessEnv;
  readonly logger: Logger;
  readonly onReleaseFailed?: (objects: readonly string[], fix: string) => void;
  /** What the command drives instead of the bare guard (the hold, which holds one more object through it). */
  readonly attach?: (guard: Guard, client: KubeClient) => GuardUse | Promise<GuardUse>;
}

/** The guard for `settings`; throws ConfigError when no Kubernetes API is configured. */
export async function openGuard(settings: GuardSettings, { env, logger, onReleaseFailed, attach }: OpenGuardOptions): Promise<GuardUse> {
  const client = await openClient(env, logger, whyApi(settings));
  const guard = new Guard({ ...settings, client, logger, onReleaseFailed });
  return attach ? attach(guard, client) : guard;
}
