// The drain budget of one pod: its grace period against drainguard's drain and
// stop timeouts, as the kubelet and drainguard will each hold them.

import { formatDuration, parseDuration } from '../config/duration.ts';
import { GRACE_MARGIN_MS, MIN_DRAIN_MS, checkFit, defaultDrainTimeout, graceNeeded } from '../config/grace-rule.ts';
import { type Command, EVERY_OPTION, type OptionValues, defaultValue } from '../config/options.ts';
import type { Found } from './finding.ts';
import { type Container, type Placement, type PodSpec, settingOf } from './pod.ts';

/** Kubernetes' default terminationGracePeriodSeconds. */
const POD_DEFAULT_GRACE_S = 30;

/** drainguard's default for option KEY in COMMAND, from the options table. */
export const optionDefault = <K extends keyof OptionValues>(key: K, command: Command): OptionValues[K] =>
  defaultValue(
    EVERY_OPTION.find((o) => o.key === key)!,
    command,
  ) as OptionValues[K];

export interface Budget {
  readonly graceS: number;
  readonly drainMs: number;
  readonly stopMs: number;
}

function durationSetting(c: Container, flag: string): number | undefined {
  const raw = settingOf(c, flag);
  return raw === undefined ? undefined : parseDuration(raw);
}

/** The drain and stop timeouts drainguard will go by in this pod. */
export function drainBudget(pod: PodSpec, { mode, supervisor }: Placement): Budget {
  const command: Command = mode === 'wrap' ? 'run' : 'sidecar';
  const graceS = pod.terminationGracePeriodSeconds ?? POD_DEFAULT_GRACE_S;
  const stopMs = durationSetting(supervisor, 'stop-timeout') ?? optionDefault('stopTimeoutMs', command);
  return { graceS, stopMs, drainMs: durationSetting(supervisor, 'drain-timeout') ?? defaultDrainTimeout(graceS * 1000, stopMs) };
}

const TEXT = {
  'timeouts-refused': (where: string, refused: string, graceS: number, configuredGraceMs: number) => ({
    message: `drainguard exits at start (status 2), the pod never runs: ${refused}`,
    fix:
      configuredGraceMs < graceS * 1000
        ? `set DRAINGUARD_GRACE_PERIOD=${graceS}s (the pod's terminationGracePeriodSeconds) in ${where}: ` +
          `without it drainguard holds its timeouts to ${formatDuration(configuredGraceMs)}`
        : `lower the timeouts in ${where} to fit the grace period ${formatDuration(configuredGraceMs)}`,
  }),
  'grace-period-too-short': (where: string, { graceS, drainMs, stopMs }: Budget, needS: number) => ({
    message:
      `terminationGracePeriodSeconds ${graceS} is shorter than ` +
      `the drain timeout ${drainMs / 1000}s + stop timeout ${stopMs / 1000}s + ${GRACE_MARGIN_MS / 1000}s margin: ` +
      'the kubelet kills the pod before drainguard releases the guard',
    fix: `set spec.template.spec.terminationGracePeriodSeconds to at least ${needS}, or lower DRAINGUARD_DRAIN_TIMEOUT in ${where}`,
  }),
  'no-time-to-drain': ({ graceS, stopMs }: Budget) => ({
    message:
      `terminationGracePeriodSeconds ${graceS} leaves no time to drain ` +
      `after the stop timeout ${stopMs / 1000}s and the ${GRACE_MARGIN_MS / 1000}s margin`,
    fix: `set spec.template.spec.terminationGracePeriodSeconds to at least ${Math.ceil(graceNeeded(MIN_DRAIN_MS, stopMs) / 1000)}`,
  }),
};

export function checkBudget(pod: PodSpec, placement: Placement): Found[] {
  const out: Found[] = [];
  const { supervisor, mode } = placement;
  const where = `container ${supervisor.name}`;
  const command: Command = mode === 'wrap' ? 'run' : 'sidecar';
  const budget = drainBudget(pod, placement);
  const { graceS, stopMs, drainMs } = budget;
  const drainSetting = durationSetting(supervisor, 'drain-timeout');
  const needS = Math.ceil(graceNeeded(drainMs, stopMs) / 1000);
  // drainguard checks its timeouts against its own grace period before it reads the Pod's.
  const configuredGraceMs = durationSetting(supervisor, 'grace-period') ?? optionDefault('gracePeriodMs', command);
  const refused = checkFit(
    { gracePeriodMs: configuredGraceMs, stopTimeoutMs: stopMs, drainTimeoutMs: drainSetting },
    { stop: `DRAINGUARD_STOP_TIMEOUT in ${where}`, drain: `DRAINGUARD_DRAIN_TIMEOUT in ${where}` },
  );
  if (refused !== undefined) {
    out.push({ code: 'timeouts-refused', severity: 'error', ...TEXT['timeouts-refused'](where, refused, graceS, configuredGraceMs) });
  }
  if (drainSetting !== undefined && needS > graceS) {
    out.push({ code: 'grace-period-too-short', severity: 'error', ...TEXT['grace-period-too-short'](where, budget, needS) });
  } else if (drainSetting === undefined && drainMs < MIN_DRAIN_MS) {
    out.push({ code: 'grace-period-too-short', severity: 'error', ...TEXT['no-time-to-drain'](budget) });
  }
  return out;
}
