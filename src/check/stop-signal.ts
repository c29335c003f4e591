// The signal the kubelet's runtime stops drainguard's container with: the
// container's lifecycle.stopSignal (KEP-4960, alpha behind ContainerStopSignals
// in 1.33-1.37), else the image's STOPSIGNAL, else SIGTERM. drainguard drains
// on SIGTERM, SIGINT, DRAINGUARD_DRAIN_SIGNALS and the stop signal it reads
// from its Pod (which needs the pod's name and namespace, and get on pods). What
// the manifests show that cannot work:
//   - a lifecycle.stopSignal without spec.os.name: the API server refuses the
//     pod where the gate is on ("may not be set for containers with empty
//     spec.os.name"), and drops the field where it is off;
//   - drainguard's container stopped by a signal it cannot drain on (SIGKILL,
//     SIGSTOP, SIGSEGV, SIGRTMIN+1, ...), or by one it could, but neither
//     reads from its Pod nor is told in DRAINGUARD_DRAIN_SIGNALS;
//   - a DRAINGUARD_DRAIN_SIGNALS drainguard refuses at start.
// What it cannot tell: an image's STOPSIGNAL (check reads no image), which
// the Pod reports only with the gate on and a runtime that says it.

import { EVERY_OPTION } from '../config/options.ts';
import { CATCHABLE, canonicalSignal, parseSignal, withoutDrain } from '../config/signals.ts';
import type { Found } from './finding.ts';
import { type Container, type Placement, type PodSpec, settingOf } from './pod.ts';

const DRAIN_SIGNALS = EVERY_OPTION.find((o) => o.key === 'drainSignals')!;

const TEXT = {
  needsOs: (where: string, signal: string) => ({
    message:
      `${where} sets lifecycle.stopSignal ${signal} but the pod has no spec.os.name: ` +
      'an API server with ContainerStopSignals on refuses the pod ("may not be set for containers with empty `spec.os.name`"), ' +
      "one without it drops the field and the container is stopped by its image's STOPSIGNAL or SIGTERM",
    fix: 'set spec.template.spec.os.name: linux',
  }),
  uncatchable: (where: string, signal: string, what: string) => ({
    message: `${where} is stopped by lifecycle.stopSignal ${signal}: ${what}`,
    fix: `set lifecycle.stopSignal of ${where} to SIGTERM, or remove it`,
  }),
  unread: (where: string, signal: string, what: string, { why, remedy }: Unreadable) => ({
    message: `${where} is stopped by lifecycle.stopSignal ${signal}, and drainguard cannot read it from its Pod (${why}): ${what}`,
    fix: `add ${signal} to DRAINGUARD_DRAIN_SIGNALS in ${where}, which needs no API; or ${remedy}`,
  }),
  invalid: (problem: string) => ({
    message: `drainguard exits at start (status 2), the pod never runs: ${problem}`,
    fix: 'write DRAINGUARD_DRAIN_SIGNALS as signal names separated by commas, such as SIGQUIT, each one drainguard can catch',
  }),
};

const stopSignalOf = (c: Container): string | undefined => {
  const s: unknown = c.lifecycle?.stopSignal;
  return typeof s === 'string' && s !== '' ? s : undefined;
};

/** Why drainguard cannot read its own Pod, and what gives it the means. */
export interface Unreadable {
  readonly why: string;
  readonly remedy: string;
}

/** `unreadable`: undefined when drainguard can read its Pod (its name and namespace given, get on pods granted). */
export function checkStopSignal(pod: PodSpec, placement: Placement, unreadable: Unreadable | undefined): Found[] {
  const out: Found[] = [];
  const os = pod.os?.name;
  for (const c of [...(pod.initContainers ?? []), ...pod.containers]) {
    const signal = stopSignalOf(c);
    if (signal !== undefined && !os)
      out.push({ code: 'stop-signal-needs-os', severity: 'error', ...TEXT.needsOs(`container ${c.name}`, signal) });
  }

  const { supervisor, mode } = placement;
  const where = `container ${supervisor.name}`;
  const raw = settingOf(supervisor, 'drain-signals');
  let configured: readonly NodeJS.Signals[] = [];
  try {
    configured =
      raw === undefined || raw === '' ? [] : (DRAIN_SIGNALS.parse(raw, `DRAINGUARD_DRAIN_SIGNALS in ${where}`) as NodeJS.Signals[]);
  } catch (err) {
    out.push({ code: 'drain-signals-invalid', severity: 'error', ...TEXT.invalid((err as Error).message) });
  }

  const signal = stopSignalOf(supervisor);
  const what = signal && withoutDrain(signal, mode === 'wrap' ? 'wrap' : 'sidecar');
  if (signal === undefined || what === undefined) return out;
  const known = parseSignal(signal);
  const sig = known && canonicalSignal(known);
  if (sig === undefined || !CATCHABLE.includes(sig)) {
    out.push({ code: 'stop-signal-not-drained', severity: 'error', ...TEXT.uncatchable(where, signal, what) });
  } else if (!configured.includes(sig) && unreadable !== undefined) {
    out.push({ code: 'stop-signal-not-drained', severity: 'error', ...TEXT.unread(where, signal, what, unreadable) });
  }
  return out;
}
