// The graces a pod's stops can have, against what drainguard needs in them
// (drain + stop timeout + margin, src/config/grace-rule.ts). The drain and stop
// timeouts against the Pod's own grace are budget.ts's; these are the others:
//   - DRAINGUARD_NODE_SHUTDOWN_GRACE or _NODE_PRESSURE_GRACE longer than the
//     Pod's grace: the kubelet never gives a pod more than its spec's, so the
//     budget says nothing;
//   - a liveness (or startup) probe of drainguard's container whose own
//     terminationGracePeriodSeconds leaves no time to drain: the kubelet kills
//     the container with the probe's grace, with no deletion;
//   - a preStop hook of its own in drainguard's wrap-mode container: the kubelet
//     runs it inside the grace, before the stop signal, and drainguard counts the
//     grace from its signal; a hook whose length is known and leaves no drain
//     is an error, any other one needs DRAINGUARD_GRACE_PERIOD set to what is left.

import { formatDuration, parseDuration } from '../config/duration.ts';
import { MIN_DRAIN_MS, graceNeeded } from '../config/grace-rule.ts';
import type { Found } from './finding.ts';
import { type Budget } from './budget.ts';
import { type Container, type Handler, type Placement, settingOf } from './pod.ts';

interface ProbeShape {
  readonly terminationGracePeriodSeconds?: number;
}
type Probed = Container & { readonly livenessProbe?: ProbeShape; readonly startupProbe?: ProbeShape };

/** What the kubelet's config calls the grace each budget stands for. */
const KUBELET_SETTING: Record<string, string> = {
  'a node shutdown': 'shutdownGracePeriod less shutdownGracePeriodCriticalPods',
  'a soft node-pressure eviction': 'its evictionMaxPodGracePeriod',
};

const TEXT = {
  'budget-invalid': (variable: string, where: string, raw: string) => ({
    message: `${variable} in ${where} is ${JSON.stringify(raw)}, not a duration: drainguard exits at start (status 2)`,
    fix: `write ${variable} in ${where} as a duration (8s, 1m)`,
  }),
  'budget-too-long': (variable: string, kubelet: string, where: string, ms: number, graceS: number) => ({
    message:
      `${variable} ${formatDuration(ms)} in ${where} is longer than the pod's terminationGracePeriodSeconds ${graceS}: ` +
      `the kubelet never gives a pod more than its own grace in ${kubelet}, so drainguard goes by the Pod's and the budget says nothing`,
    fix:
      `set ${variable} in ${where} to what the kubelet gives (${KUBELET_SETTING[kubelet]}), ` +
      `at most ${graceS}s, or raise terminationGracePeriodSeconds to it`,
  }),
  'probe-grace-no-drain': (where: string, probe: string, seconds: number, needS: number) => ({
    message:
      `the ${probe} of ${where} sets terminationGracePeriodSeconds ${seconds}: when it fails the kubelet kills the container ` +
      `with that grace, not the Pod's, and ${seconds} s leave no time to drain (drainguard needs ${needS} s for a drain, ` +
      'its stop timeout and its margin): the operator is stopped with its work in flight',
    fix: `raise the ${probe}'s terminationGracePeriodSeconds of ${where} to at least ${needS}, or remove it (the Pod's grace then applies)`,
  }),
  'prestop-eats-grace': (where: string, hook: string, leftS: number, needS: number, graceS: number) => ({
    message:
      `the preStop hook of ${where} (${hook}) runs inside the pod's terminationGracePeriodSeconds ${graceS}, before drainguard's signal: ` +
      `it leaves ${leftS} s, and drainguard needs ${needS} s for a drain, its stop timeout and its margin`,
    fix:
      `shorten or remove the preStop hook of ${where} (drainguard's drain replaces a sleep), ` +
      `or raise terminationGracePeriodSeconds to at least ${graceS - leftS + needS}`,
  }),
  'prestop-grace-unknown': (where: string, hook: string, graceS: number, leftS?: number) => ({
    message:
      `the preStop hook of ${where} (${hook}) runs inside the pod's terminationGracePeriodSeconds ${graceS}, before drainguard's signal, ` +
      "and drainguard counts the grace from its signal: it plans its release for after the kubelet's SIGKILL" +
      (leftS === undefined ? '' : ` (the hook leaves ${leftS} s)`),
    fix:
      `set DRAINGUARD_GRACE_PERIOD in ${where} to the grace less the hook's longest run` +
      (leftS === undefined ? '' : ` (${leftS}s)`) +
      ', or remove the hook (drainguard drains at the signal)',
  }),
};

/** How long a preStop hook runs when its handler says it (a sleep action, an exec of sleep N), in whole seconds. */
export function hookSeconds(h: Handler): number | undefined {
  if (typeof h.sleep?.seconds === 'number') return h.sleep.seconds;
  const words = h.exec?.command ?? [];
  const line = /(^|\/)(sh|bash|ash|dash)$/.test(words[0] ?? '') && words[1] === '-c' ? (words[2] ?? '').trim().split(/\s+/) : words;
  if (line.length === 2 && /(^|\/)sleep$/.test(line[0]!) && /^\d+$/.test(line[1]!)) return Number(line[1]);
  return undefined;
}

const isDrainguardPrestop = (h: Handler): boolean =>
  (/(^|\/)drainguard$/.test(h.exec?.command?.[0] ?? '') && (h.exec?.command ?? []).includes('prestop')) || h.httpGet?.path === '/prestop';

const describe = (h: Handler): string =>
  h.sleep ? `sleep ${h.sleep.seconds}s` : h.exec ? `exec ${(h.exec.command ?? []).join(' ')}` : h.httpGet ? 'httpGet' : 'tcpSocket';

export function checkGraces(placement: Placement, budget: Budget): Found[] {
  const out: Found[] = [];
  const { supervisor, mode } = placement;
  const where = `container ${supervisor.name}`;
  const { graceS, stopMs } = budget;
  const needS = Math.ceil(graceNeeded(MIN_DRAIN_MS, stopMs) / 1000);

  for (const [flag, kubelet] of [
    ['node-shutdown-grace', 'a node shutdown'],
    ['node-pressure-grace', 'a soft node-pressure eviction'],
  ] as const) {
    const raw = settingOf(supervisor, flag);
    if (raw === undefined || raw === '') continue;
    const variable = `DRAINGUARD_${flag.toUpperCase().replaceAll('-', '_')}`;
    const ms = parseDuration(raw);
    if (ms === undefined) out.push({ code: `${flag}-invalid`, severity: 'error', ...TEXT['budget-invalid'](variable, where, raw) });
    else if (ms > graceS * 1000)
      out.push({ code: `${flag}-too-long`, severity: 'warning', ...TEXT['budget-too-long'](variable, kubelet, where, ms, graceS) });
  }

  // drainguard's container, and in the sidecar modes the operator's, whose preStop drain runs inside the probe's grace.
  for (const c of new Set([supervisor, placement.operator ?? supervisor]) as Set<Probed>) {
    for (const probe of ['livenessProbe', 'startupProbe'] as const) {
      const seconds = c[probe]?.terminationGracePeriodSeconds;
      if (typeof seconds === 'number' && seconds < needS && seconds < graceS)
        out.push({
          code: 'probe-grace-no-drain',
          severity: 'warning',
          ...TEXT['probe-grace-no-drain'](`container ${c.name}`, probe, seconds, needS),
        });
    }
  }

  // In the sidecar modes the operator's preStop is drainguard's own (pairing.ts); in wrap mode drainguard is the stop signal's target.
  const hook = mode === 'wrap' ? supervisor.lifecycle?.preStop : undefined;
  if (hook && !isDrainguardPrestop(hook)) {
    const seconds = hookSeconds(hook);
    const leftS = seconds === undefined ? undefined : Math.max(0, graceS - seconds);
    const configured = settingOf(supervisor, 'grace-period');
    const configuredMs = configured === undefined ? undefined : parseDuration(configured);
    if (leftS !== undefined && leftS < needS)
      out.push({
        code: 'prestop-eats-grace',
        severity: 'error',
        ...TEXT['prestop-eats-grace'](where, describe(hook), leftS, needS, graceS),
      });
    else if (configuredMs === undefined || configuredMs > (leftS ?? graceS - 1) * 1000)
      out.push({ code: 'prestop-eats-grace', severity: 'warning', ...TEXT['prestop-grace-unknown'](where, describe(hook), graceS, leftS) });
  }
  return out;
}
