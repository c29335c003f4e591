// Sidecar mode: drainguard runs beside the operator container and serves the
// drain socket on a volume both containers mount. The kubelet runs the
// operator's preStop hook (drainguard prestop) before it sends SIGTERM to the
// operator; that hook starts the drain here. The operator is the kubelet's to
// stop: once the drain is over, drainguard waits until it has stopped (its
// connections closed, and where configured the API reports its container
// terminated), by the wait deadline. The stop itself is stop-procedure.ts's.
//
// Which termination order applies needs no setting: at SIGTERM, operator
// clients still connected mean a plain sidecar stopped together with the
// operator, and drainguard waits until they have all disconnected; none
// connected means a native sidecar (stopped after the main containers) or an
// operator already gone, and the release starts at once.

import type { Logger } from '../log/logger.ts';
import { FORWARDED } from '../config/signals.ts';
import type { Mode, StartContext, StartedOperator, StopContext } from './stop-procedure.ts';

export interface SidecarModeOptions {
  /**
   * Resolves once the Kubernetes API reports the operator container terminated.
   * When given, the release waits for it as well as for the operator's
   * connections to close (an operator that never connected is then waited for too).
   */
  readonly operatorStopped?: (signal: AbortSignal) => Promise<void>;
}

export class SidecarMode implements Mode {
  // No child to pass them to; caught all the same, so that a stray SIGHUP or SIGUSR1 (a closed
  // terminal, a shared process namespace) cannot end the sidecar before it released the guard.
  readonly otherSignals = FORWARDED;
  readonly passesSignalsOn = false;
  readonly takesDrainRequests = true;
  // Clients still connected at SIGTERM mean a plain sidecar; none, a native one (see above).
  readonly countsClientsAtTermination = true;
  // The sidecar itself is what stops: its last line comes once the guard is released.
  readonly lastLine = 'sidecar stopped';
  readonly #options: SidecarModeOptions;

  constructor(options: SidecarModeOptions = {}) {
    this.#options = options;
  }

  onOtherSignal(sig: NodeJS.Signals, log: Logger): void {
    log.debug('signal ignored: a sidecar has no child to pass it to', { signal: sig });
  }

  async start(context: StartContext): Promise<StartedOperator> {
    const { log, socketPath, drainTimeoutMs } = context;
    log.info('sidecar ready', { socket: socketPath, drainTimeoutMs });
    // The operator is another container's process: drainguard never sees it exit.
    return { exited: new Promise(() => {}), stop: (stop) => this.#waitForOperator(context, stop) };
  }

  /** Waits until the operator has stopped, the wait deadline, or a second signal says stop waiting. */
  async #waitForOperator(context: StartContext, { signalledAt, cutShort, operatorWaitDeadline }: StopContext): Promise<number> {
    const { log, clock, clients } = context;
    const now = () => clock.now();
    const waitDeadline = operatorWaitDeadline();
    const stop = new AbortController();
    let cancelDeadline = () => {};
    const deadline = new Promise<'deadline'>((r) => (cancelDeadline = clock.after(waitDeadline - now(), () => r('deadline'))));
    const secondSignal = cutShort.then(() => 'cut-short' as const);
    const gone = this.#operatorGone(context, stop.signal).then(() => 'stopped' as const);
    try {
      const connected = clients.count();
      const waiting = connected > 0 || this.#options.operatorStopped !== undefined;
      if (waiting) log.info('waiting for the operator to stop', { clients: connected, timeoutMs: Math.max(0, waitDeadline - now()) });
      else log.info('no operator client connected: releasing at once');
      const how = await Promise.race([gone, deadline, secondSignal]);
      if (how === 'stopped' && waiting) log.info('operator stopped', { afterSignalMs: now() - signalledAt });
      else if (how === 'deadline')
        log.warn('the operator has not stopped and the grace period is running out: releasing anyway', { clients: clients.count() });
      else if (how === 'cut-short') log.info('second termination signal: releasing now', { clients: clients.count() });
    } finally {
      cancelDeadline();
      stop.abort();
    }
    return 0;
  }

  /** Resolves once no operator client is connected and, where the API hook is given, the operator container has terminated. */
  #operatorGone({ log, clients }: StartContext, signal: AbortSignal): Promise<unknown> {
    const disconnected = new Promise<void>((resolve) => {
      const stopWatching = new AbortController();
      signal.addEventListener('abort', () => stopWatching.abort(), { once: true });
      const check = () => {
        if (clients.count() > 0) return;
        stopWatching.abort();
        resolve();
      };
      clients.watch(check, stopWatching.signal);
      check();
    });
    const api = this.#options.operatorStopped?.(signal).catch((err: unknown) => {
      if (!signal.aborted)
        log.warn('cannot tell from the Kubernetes API whether the operator stopped; going by its connections', { error: err });
    });
    return Promise.all([disconnected, api]);
  }
}
