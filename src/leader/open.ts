// The leader release as the stop procedure calls it: once, after the operator
// has exited, beside the guard's release and by the same deadline. Built by the
// composition root (cli/supervise.ts); the Kubernetes client is opened at the
// call only (in wrap mode nothing of Kubernetes may hold up the operator's start).

import { type Clock, abortAfter } from '../clock.ts';
import type { LeaderLeaseSetting } from '../config/options.ts';
import type { KubeClient } from '../kube/client.ts';
import type { PodRef } from '../kube/pod.ts';
import type { Logger } from '../log/logger.ts';
import type { LeaderReleaseOutcome } from './release.ts';

export interface LeaderReleaseUse {
  readonly setting: LeaderLeaseSetting;
  readonly pod: Partial<PodRef>;
  readonly env: NodeJS.ProcessEnv;
  readonly logger: Logger;
  /** The stop procedure's clock, which the release deadline is on. */
  readonly clock: Clock;
  /**
   * How drainguard knows, at the release, that the operator has exited:
   * 'exited' (wrap mode: its child is gone by then), a wait for the Kubernetes
   * API to report the operator container terminated (a sidecar with
   * DRAINGUARD_OPERATOR_CONTAINER), or 'unknown' (a sidecar without it:
   * the Lease is then left).
   */
  readonly operator: 'exited' | 'unknown' | ((signal: AbortSignal) => Promise<void>);
}

/** The release, or undefined when it is off (DRAINGUARD_LEADER_LEASE=off) or the pod is not known by name. */
export function leaderRelease(use: LeaderReleaseUse): ((deadline: number) => Promise<LeaderReleaseOutcome>) | undefined {
  const { setting, pod, env, logger, clock } = use;
  if (setting === 'off' || pod.name === undefined || pod.namespace === undefined) return undefined;
  const where = { name: pod.name, namespace: pod.namespace };
  return async (deadline) => {
    const confirmed = use.operator === 'exited' || use.operator === 'unknown' || (await operatorGone(use.operator, clock, deadline));
    const { releaseLeaderLease } = await import('./release.ts');
    return releaseLeaderLease(
      {
        pod: where,
        lease: setting,
        client: () => openClient(env, logger),
        logger,
        clock,
        mayWrite: use.operator !== 'unknown' && confirmed,
      },
      deadline,
    );
  };
}

/** Whether the API reports the operator container terminated by `deadline`; it normally has by the release. */
async function operatorGone(wait: (signal: AbortSignal) => Promise<void>, clock: Clock, deadline: number): Promise<boolean> {
  // On the clock, which keeps the process alive until then (AbortSignal.timeout's timer does not).
  const stop = abortAfter(clock, deadline - clock.now());
  try {
    await wait(stop.signal);
    return !stop.signal.aborted;
  } catch {
    // The stop procedure has already said why the API cannot tell (sidecar-mode.ts); the release says the Lease is left.
    return false;
  } finally {
    stop.cancel();
  }
}

/** The API client, loaded with the rest of the kube layer only when the step runs. */
const openClient = async (env: NodeJS.ProcessEnv, logger: Logger): Promise<KubeClient | undefined> =>
  (await import('../kube/open.ts')).openOptionalClient(env, logger);
