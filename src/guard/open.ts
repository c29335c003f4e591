// The guard of a supervising command (run, sidecar), built in one place from
// one settings shape: the holder Lease and the finalizers of DRAINGUARD_GUARD
// (guard.ts) and, with DRAINGUARD_HOLD, the Deployment above the pod, held as
// one more object of the guard's until the hold lets it go (hold/).
//
// What it needs is imported when it opens: the Kubernetes client and the
// guard, and hold/ only with the hold. Late (wrap mode), it opens at start():
// the operator must not wait for the client, and what makes a guard
// impossible is still a ConfigError before the operator starts, as far as it
// can be told without the client (kube/locate.ts). Else (a sidecar) at once.

import type { Clock } from '../clock.ts';
import type { ReleaseReason } from '../hold/decide.ts';
import type { Hold, HoldSettings } from '../hold/hold.ts';
import { apiConfigError, locateApiConfig, precheckApiConfig } from '../kube/locate.ts';
import type { Logger } from '../log/logger.ts';
import type { Guard, GuardOptions, GuardReport } from './guard.ts';

/** What a guard is made of: the resolved configuration's part. */
export interface GuardSettings extends Pick<GuardOptions, 'targets' | 'pod' | 'leaseDurationMs'> {
  /** DRAINGUARD_HOLD; undefined: no hold. */
  readonly hold?: HoldSettings;
}

export interface OpenGuardOptions {
  readonly env: NodeJS.ProcessEnv;
  readonly logger: Logger;
  /** The stop procedure's clock: the guard's and the hold's times go by it. */
  readonly clock: Clock;
  /** Open at start() instead of at once (wrap mode: the operator must not wait for the Kubernetes client). */
  readonly late: boolean;
  /** Told when the release left this pod's finalizer on objects, with the command that frees them (for an Event). */
  readonly onReleaseFailed?: (objects: readonly string[], fix: string) => void;
  /** Told once, when the hold lets go early (for the HoldReleased Event). */
  readonly onHoldReleased?: (reason: ReleaseReason, message: string) => void;
}

/** What a supervising command drives and reads of its guard. */
export interface SupervisedGuard {
  /** Sets the guard (and the hold) and keeps holding in the background; never throws, never waits. */
  start(): void;
  /** Stops the hold, then releases the guard by `deadline` (epoch ms); never throws. */
  release(deadline: number): Promise<void>;
  /** The guard's figures with the hold's part; not set until the guard is opened. */
  report(): GuardReport;
}

interface Opened {
  readonly guard: Guard;
  readonly hold?: Hold;
}

/** The guard for `settings`; throws ConfigError when no Kubernetes API is configured. */
export async function openGuard(settings: GuardSettings, options: OpenGuardOptions): Promise<SupervisedGuard> {
  // Why the API is needed, for the message when it cannot be had: the guard's list, else the hold alone.
  const why = `${settings.targets.length > 0 ? 'DRAINGUARD_GUARD' : 'DRAINGUARD_HOLD'} is set, so drainguard`;
  let opened: Opened | undefined;
  let opening: Promise<Opened | undefined> | undefined;
  const open = async (): Promise<Opened> => (opened = await openParts(settings, options, why));
  if (options.late) {
    try {
      precheckApiConfig(locateApiConfig(options.env));
    } catch (err) {
      throw apiConfigError(why, err);
    }
  } else {
    opening = Promise.resolve(await open());
  }
  // Late, what the cheap check could not see is logged, and the guard stays not set.
  const ready = () =>
    (opening ??= open().catch((err: unknown) => {
      options.logger.error('the guard cannot be set: its Kubernetes API configuration cannot be read', { error: err });
      return undefined;
    }));
  // Readiness and metrics read the hold's series from the start, held false.
  const notSet: GuardReport = { set: false, objectsHeld: 0, errors: 0, ...(settings.hold && { hold: { held: false, released: {} } }) };
  return {
    start: () =>
      void ready().then((o) => {
        o?.guard.start();
        o?.hold?.start();
      }),
    release: async (deadline) => {
      const o = await ready();
      await o?.hold?.stop();
      await o?.guard.release(deadline);
    },
    report: () => (opened ? reportOf(opened) : notSet),
  };
}

async function openParts({ hold, ...settings }: GuardSettings, options: OpenGuardOptions, why: string): Promise<Opened> {
  const [{ openClient }, { Guard }] = await Promise.all([import('../kube/open.ts'), import('./guard.ts')]);
  const { logger, clock } = options;
  const client = await openClient(options.env, logger, why);
  const guard = new Guard({ ...settings, client, logger, clock, onReleaseFailed: options.onReleaseFailed });
  if (!hold) return { guard };
  const { Hold } = await import('../hold/hold.ts');
  return { guard, hold: new Hold({ ...hold, pod: settings.pod, client, guard, logger, clock, onReleased: options.onHoldReleased }) };
}

function reportOf({ guard, hold }: Opened): GuardReport {
  const g = guard.report();
  if (!hold) return g;
  const h = hold.report();
  // Readiness waits for the Deployment to be found and held as for any guarded object.
  return { ...g, set: g.set && h.settled, hold: { held: h.held, released: h.released } };
}
