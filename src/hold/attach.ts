// The hold put on a guard: what a supervising command drives instead of the
// bare guard. Its finalizer is one more object of the guard's, so the release
// phase takes it with the others (before the RBAC waves, release-order.ts).

import type { HoldKind } from '../config/hold-list.ts';
import type { Guard } from '../guard/guard.ts';
import type { GuardUse } from '../guard/open.ts';
import type { KubeClient } from '../kube/client.ts';
import type { PodRef } from '../kube/pod.ts';
import type { Logger } from '../log/logger.ts';
import type { ReleaseReason } from './decide.ts';
import { Hold } from './hold.ts';

export interface HoldSettings {
  readonly kinds: readonly HoldKind[];
  readonly pod: PodRef;
  readonly timeoutMs: number;
  readonly settleMs: number;
}

export function withHold(guard: Guard, client: KubeClient, settings: HoldSettings, logger: Logger, onReleased?: (reason: ReleaseReason, message: string) => void): GuardUse & { readonly hold: Hold } {
  const hold = new Hold({ client, guard, pod: settings.pod, kinds: settings.kinds, timeoutMs: settings.timeoutMs, settleMs: settings.settleMs, logger, onReleased });
  return {
    hold,
    start: () => {
      guard.start();
      hold.start();
    },
    release: async (deadline) => {
      await hold.stop();
      await guard.release(deadline);
    },
    report: () => {
      const g = guard.report();
      const h = hold.report();
      // Readiness waits for the Deployment to be found and held as for any guarded object.
      return { ...g, set: g.set && h.settled, hold: { held: h.held, released: h.released } };
    },
  };
}
