// The rule between the grace period and the timeouts: drain + stop + margin ≤
// grace. A rule between settings, so it lives with them (below supervisor/,
// which turns it into moments in shutdown.ts): the defaults are made
// to it (defaultDrainTimeout), the resolved config is held to its limit
// (checkFit), `drainguard check` holds manifests to it, the help texts name its
// margin, and the library chart computes with the margin generated from here.

import { formatDuration } from './duration.ts';

/** Kept between the end of the stop timeout and the end of the grace period. */
export const GRACE_MARGIN_MS = 2000;

/** The least drain a grace period must leave when the drain timeout is the default: less is no drain at all. */
export const MIN_DRAIN_MS = 1000;

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
  return Math.max(0, gracePeriodMs - graceNeeded(0, stopTimeoutMs));
}

/**
 * The limit below that rule, checked once the settings are known: the drain and
 * the stop timeout must fit in the grace period, or the kubelet kills the
 * operator first (a drain given explicitly may eat the margin). Returns what is
 * wrong, or undefined.
 */
export function checkFit(
  settings: { readonly gracePeriodMs: number; readonly stopTimeoutMs: number; readonly drainTimeoutMs?: number },
  sources: { readonly stop: string; readonly drain: string },
): string | undefined {
  const { gracePeriodMs: grace, stopTimeoutMs: stop, drainTimeoutMs: drain } = settings;
  if (stop >= grace && grace > 0) {
    return (
      `${sources.stop}: the stop timeout (${formatDuration(stop)}) must be shorter than the grace period (${formatDuration(grace)}); ` +
      'lower it or raise DRAINGUARD_GRACE_PERIOD'
    );
  }
  if (drain !== undefined && drain + stop > grace) {
    return (
      `${sources.drain}: the drain timeout (${formatDuration(drain)}) plus the stop timeout (${formatDuration(stop)}) ` +
      `must fit in the grace period (${formatDuration(grace)}), or the kubelet kills the operator first; ` +
      `lower it to at most ${formatDuration(Math.max(0, grace - stop))}`
    );
  }
  return undefined;
}
