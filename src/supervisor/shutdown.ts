// The stop, in both modes: the termination state (the first SIGTERM or SIGINT
// drains, the second cuts it short, later ones change nothing) and Deadlines,
// the only code that turns grace periods and timeouts into moments.
//
//   SIGTERM ──drain──▶ drain deadline ──stop signal──▶ kill time (SIGKILL)
//      └────────────────── grace period ───────────────────▶ the kubelet's SIGKILL
//                                     release deadline ◀─ margin ─┘

import { formatDuration } from '../config/duration.ts';
import type { Logger } from '../log/logger.ts';

/** Kept between the end of the stop timeout and the end of the grace period. */
export const GRACE_MARGIN_MS = 2000;
/**
 * Kept between the end of the release and the kubelet's SIGKILL: enough to exit. The kubelet
 * counts the grace period from when it saw the deletion, at or after the Pod's
 * deletionTimestamp minus the grace period, so both moments below are early, not late.
 */
export const RELEASE_MARGIN_MS = 500;
/** Kept for the release itself out of the sidecar's wait for the operator. */
const RELEASE_BUDGET_MS = 2000;
/** How long Events still on their way may hold up the exit. */
const EVENT_FLUSH_MS = 1000;

export type TerminationStep = 'drain' | 'cut-short' | 'ignored';

/** The termination signals seen so far, and what each one means. */
export class Termination {
  #count = 0;
  #at?: number;
  #onRequested = (): void => {};
  #onCutShort = (): void => {};
  /** Resolves at the first termination signal. */
  readonly requested = new Promise<void>((r) => (this.#onRequested = r));
  /** Resolves at the second. */
  readonly cutShort = new Promise<void>((r) => (this.#onCutShort = r));
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  /** When the first signal came (epoch ms); the kubelet's grace period runs from about then. */
  get at(): number | undefined {
    return this.#at;
  }

  get count(): number {
    return this.#count;
  }

  /** Counts a termination signal; says what it means. */
  signal(): TerminationStep {
    this.#count++;
    if (this.#count === 1) {
      this.#at = this.#now();
      this.#onRequested();
      return 'drain';
    }
    if (this.#count === 2) {
      this.#onCutShort();
      return 'cut-short';
    }
    // The stop signal goes out once: operators such as controller-runtime exit hard on a second one.
    return 'ignored';
  }
}

export interface DeadlineSettings {
  readonly gracePeriodMs: number;
  /** Where the grace period came from: the flag or variable, or 'default'. */
  readonly gracePeriodSource: string;
  readonly drainTimeoutMs: number;
  /** False when the drain timeout is derived from the grace period in force (the Pod's, once read). */
  readonly drainTimeoutExplicit: boolean;
  readonly stopTimeoutMs: number;
}

export interface GracePeriod {
  readonly ms: number;
  /** 'pod', or the flag or variable it was configured with, or 'default'. */
  readonly from: string;
}

/**
 * The grace period a drain and a stop need for the guard to be released in it:
 * drain + stop + margin ≤ grace is the rule the defaults are made to, that
 * `drainguard check` and the chart hold manifests to.
 */
export function graceNeeded(drainTimeoutMs: number, stopTimeoutMs: number): number {
  return drainTimeoutMs + stopTimeoutMs + GRACE_MARGIN_MS;
}

/** The drain timeout a grace period leaves by that rule: grace − stop timeout − margin. */
export function defaultDrainTimeout(gracePeriodMs: number, stopTimeoutMs: number): number {
  return Math.max(0, gracePeriodMs - stopTimeoutMs - GRACE_MARGIN_MS);
}

/**
 * The limit below that rule, checked once the settings are known: the drain and
 * the stop timeout must fit in the grace period, or the kubelet kills the
 * operator first (a drain given explicitly may eat the margin). Returns what is
 * wrong, or undefined.
 */
export function checkFit(
  settings: Omit<DeadlineSettings, 'gracePeriodSource' | 'drainTimeoutExplicit' | 'drainTimeoutMs'> & { readonly drainTimeoutMs?: number },
  sources: { readonly stop: string; readonly drain: string },
): string | undefined {
  const { gracePeriodMs: grace, stopTimeoutMs: stop, drainTimeoutMs: drain } = settings;
  if (stop >= grace && grace > 0) {
    return `${sources.stop}: the stop timeout (${formatDuration(stop)}) must be shorter than the grace period (${formatDuration(grace)}); lower it or raise DRAINGUARD_GRACE_PERIOD`;
  }
  if (drain !== undefined && drain + stop > grace) {
    return `${sources.drain}: the drain timeout (${formatDuration(drain)}) plus the stop timeout (${formatDuration(stop)}) must fit in the grace period (${formatDuration(grace)}), or the kubelet kills the operator first; lower it to at most ${formatDuration(Math.max(0, grace - stop))}`;
  }
  return undefined;
}

/** The moments of a stop, from the configured grace period and, once read, the Pod's. */
export class Deadlines {
  readonly #settings: DeadlineSettings;
  readonly #log: Logger;
  #grace: GracePeriod;

  constructor(settings: DeadlineSettings, logger: Logger) {
    this.#settings = settings;
    this.#log = logger;
    this.#grace = { ms: settings.gracePeriodMs, from: settings.gracePeriodSource };
  }

  get gracePeriod(): GracePeriod {
    return this.#grace;
  }

  get stopTimeoutMs(): number {
    return this.#settings.stopTimeoutMs;
  }

  /**
   * Takes the Pod's terminationGracePeriodSeconds. The kubelet kills at it
   * whatever drainguard was told, so it wins over the configured grace period,
   * except over an explicit one that is shorter (a budget the user chose).
   * A drain already under way keeps its deadline.
   */
  adoptPodGracePeriod(podMs: number): void {
    const { gracePeriodMs, gracePeriodSource } = this.#settings;
    const explicit = gracePeriodSource !== 'default';
    if (explicit && podMs >= gracePeriodMs) {
      this.#log.info(`grace period read from the Pod; ${gracePeriodSource} is shorter and stays`, { gracePeriodMs, podGracePeriodMs: podMs });
      return;
    }
    if (explicit) {
      this.#log.warn(`${gracePeriodSource} is longer than the Pod's terminationGracePeriodSeconds, and the kubelet kills at the Pod's: going by the Pod's`, {
        gracePeriodMs: podMs,
        configuredMs: gracePeriodMs,
      });
    }
    this.#grace = { ms: podMs, from: 'pod' };
    const { stopTimeoutMs } = this.#settings;
    this.#log.info('grace period read from the Pod', { gracePeriodMs: podMs, drainTimeoutMs: this.drainTimeoutMs() });
    if (this.#settings.drainTimeoutExplicit && this.#settings.drainTimeoutMs + stopTimeoutMs > podMs) {
      this.#log.warn("the drain timeout plus the stop timeout exceed the Pod's grace period: the drain is cut to fit, or the kubelet would kill the operator before it stopped", {
        gracePeriodMs: podMs,
        drainTimeoutMs: this.drainTimeoutMs(),
        configuredDrainTimeoutMs: this.#settings.drainTimeoutMs,
        stopTimeoutMs,
      });
    }
  }

  /** The drain timeout in force: the configured one, cut to fit the grace period, or derived from it. */
  drainTimeoutMs(): number {
    const fit = defaultDrainTimeout(this.#grace.ms, this.#settings.stopTimeoutMs);
    const { drainTimeoutMs: given, drainTimeoutExplicit } = this.#settings;
    // A given one was checked against the configured grace period; the Pod's may be shorter.
    return drainTimeoutExplicit ? Math.min(given, Math.max(0, this.#grace.ms - this.#settings.stopTimeoutMs)) : fit;
  }

  /** The moment the drain ends whatever the clients do. */
  drainDeadline(startedAt: number): number {
    return startedAt + this.drainTimeoutMs();
  }

  /** SIGKILL, once the stop signal went out at `stopAt`. */
  killTime(stopAt: number): number {
    return stopAt + this.#settings.stopTimeoutMs;
  }

  /**
   * When the pod's termination began, as the kubelet counts it: a sidecar's
   * preStop drain request when one came shortly before its signal (a native
   * sidecar gets SIGTERM only after the operator has stopped), else the signal.
   */
  terminationStart(signalAt: number, drainRequestedAt: number | undefined): number {
    const d = drainRequestedAt;
    return d !== undefined && d <= signalAt && signalAt - d < this.#grace.ms ? d : signalAt;
  }

  /** By when the release must be over: the kubelet's clock started at `terminatedAt`. */
  releaseDeadline(terminatedAt: number): number {
    return terminatedAt + Math.max(0, this.#grace.ms - RELEASE_MARGIN_MS);
  }

  /** How long Events may still be waited for at `now`, never past the release deadline. */
  eventFlushDeadline(now: number, terminatedAt: number | undefined): number {
    const limit = now + EVENT_FLUSH_MS;
    return terminatedAt === undefined ? limit : Math.min(limit, this.releaseDeadline(terminatedAt));
  }

  /** How long a sidecar may wait for the operator to stop, leaving time for the release. */
  operatorWaitDeadline(terminatedAt: number, now: number): number {
    const release = this.releaseDeadline(terminatedAt);
    return Math.max(now, release - Math.min(RELEASE_BUDGET_MS, this.#grace.ms / 4));
  }
}
