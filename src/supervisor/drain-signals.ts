// Which signals start the drain: SIGTERM and SIGINT always (spec.md), those
// of DRAINGUARD_DRAIN_SIGNALS, and the container's stop signal once the Pod
// tells it (kube/pod.ts containerStopSignal). The runtime stops a container
// with that signal (the Pod's lifecycle.stopSignal, else the image's
// STOPSIGNAL, else SIGTERM): a stop signal drainguard only passed on would
// reach the operator with no drain before it. A drain signal is never passed
// on; the operator gets DRAINGUARD_STOP_SIGNAL after the drain.

import { CATCHABLE, TERMINATING, canonicalSignal, parseSignal, withoutDrain } from '../config/signals.ts';
import type { ContainerStopSignal } from '../kube/pod.ts';
import type { Logger } from '../log/logger.ts';

export class DrainSignals {
  readonly #signals: NodeJS.Signals[];
  readonly #configured: readonly NodeJS.Signals[];
  readonly #mode: 'wrap' | 'sidecar';

  constructor(configured: readonly NodeJS.Signals[], mode: 'wrap' | 'sidecar') {
    this.#configured = configured;
    this.#mode = mode;
    this.#signals = [...new Set([...TERMINATING, ...configured])];
  }

  /** The drain signals so far. */
  get list(): readonly NodeJS.Signals[] {
    return this.#signals;
  }

  has(sig: NodeJS.Signals): boolean {
    return this.#signals.includes(sig);
  }

  /**
   * Takes what the Pod says of drainguard's container and its stop signal, and
   * says so in one line; returns the signal it made a drain signal, if any.
   */
  adopt(reading: ContainerStopSignal, log: Logger): NodeJS.Signals | undefined {
    const configured = this.#configured.length > 0 ? 'DRAINGUARD_DRAIN_SIGNALS' : 'nothing';
    if (reading.container === undefined) {
      log.info(
        "cannot tell which of the Pod's containers is drainguard's, so not its stop signal either: " +
          `draining on ${this.#signals.join(', ')}; ` +
          'an image STOPSIGNAL or lifecycle.stopSignal besides them needs DRAINGUARD_DRAIN_SIGNALS',
        { containers: reading.containers },
      );
      return undefined;
    }
    if (reading.signal === undefined) {
      // The usual case before ContainerStopSignals (off by default through 1.37): said, but not at info.
      log.debug("the Pod does not say the container's stop signal", {
        container: reading.container,
        drainSignals: this.#signals,
        besidesTermination: configured,
      });
      return undefined;
    }
    const fields = { container: reading.container, stopSignal: reading.signal, from: reading.from };
    const known = parseSignal(reading.signal);
    const sig = known && canonicalSignal(known);
    if (sig !== undefined && this.has(sig)) {
      log.info("the container's stop signal read from the Pod: it starts the drain", { ...fields, drainSignals: this.#signals });
      return undefined;
    }
    if (sig === undefined || !CATCHABLE.includes(sig)) {
      log.warn(
        `the container's stop signal is ${reading.signal}: ${withoutDrain(reading.signal, this.#mode)}; ` +
          `set the container's lifecycle.stopSignal to SIGTERM`,
        fields,
      );
      return undefined;
    }
    this.#signals.push(sig);
    const instead = this.#mode === 'wrap' ? 'no longer passed on to the operator' : 'no longer ignored';
    log.info(`the container's stop signal read from the Pod: it starts the drain, ${instead}`, {
      ...fields,
      drainSignals: this.#signals,
    });
    return sig;
  }
}
