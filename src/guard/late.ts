// The guard of `run`, with the Kubernetes client loaded only once the
// operator has started (start()): the operator must not wait for it. What
// makes a guard impossible is still a configuration error before the operator
// starts, as far as it can be told without the client (kube/locate.ts).

import { apiConfigError, locateApiConfig, precheckApiConfig } from '../kube/locate.ts';
import type { GuardReport } from './guard.ts';
import type { GuardSettings, GuardUse, OpenGuardOptions } from './open.ts';

export type { GuardUse } from './open.ts';

/** Why the API is needed, for the message when it cannot be had: the guard's list, else the hold alone. */
export const whyApi = (settings: GuardSettings): string => `${settings.targets.length > 0 ? 'DRAINGUARD_GUARD' : 'DRAINGUARD_HOLD'} is set, so drainguard`;

const NOT_SET: GuardReport = { set: false, objectsHeld: 0, errors: 0 };

/** Throws ConfigError when no Kubernetes API is configured; the guard itself opens at start(). */
export function lateGuard(settings: GuardSettings, options: OpenGuardOptions): GuardUse {
  try {
    precheckApiConfig(locateApiConfig(options.env));
  } catch (err) {
    throw apiConfigError(whyApi(settings), err);
  }
  let guard: GuardUse | undefined;
  let opened: Promise<GuardUse | undefined> | undefined;
  const open = () =>
    (opened ??= import('./open.ts')
      .then(async ({ openGuard }) => (guard = await openGuard(settings, options)))
      .catch((err: unknown) => {
        options.logger.error('the guard cannot be set: its Kubernetes API configuration cannot be read', { error: err });
        return undefined;
      }));
  return {
    start: () => void open().then((g) => g?.start()),
    release: async (deadline) => (await open())?.release(deadline),
    report: () => guard?.report() ?? NOT_SET,
  };
}
