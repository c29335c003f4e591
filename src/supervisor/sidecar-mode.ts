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

import { EventEmitter } from 'node:events';
import type { ChildExit } from './child.ts';
import { FORWARDED } from './signals.ts';
import type { Mode, ModeContext } from './stop-procedure.ts';

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
  readonly takesDrainRequests = true;
  /** The operator is another container's process: drainguard never sees it exit. */
  readonly exited = new Promise<ChildExit>(() => {});
  readonly #options: SidecarModeOptions;
  /** Fires whenever an operator client comes or goes. */
  readonly #clientsChanged = new EventEmitter().setMaxListeners(0);
  #context?: ModeContext;

  constructor(options: SidecarModeOptions = {}) {
    this.#options = options;
  }

  onOtherSignal(sig: NodeJS.Signals): void {
    this.#context?.log.debug('signal ignored: a sidecar has no child to pass it to', { signal: sig });
  }

  onClientEvent(): void {
    this.#clientsChanged.emit('change');
  }

  attach(context: ModeContext): void {
    this.#context = context;
  }

  async start(): Promise<void> {
    const { log, server, deadlines } = this.#context!;
    log.info('sidecar ready', { socket: server.path, drainTimeoutMs: deadlines.drainTimeoutMs() });
  }

  terminationFields(): Record<string, unknown> {
    return { clients: this.#operators() };
  }

  /** Waits until the operator has stopped, the wait deadline, or a second signal says stop waiting. */
  async stop(): Promise<number> {
    const { log, clock, deadlines, termination } = this.#context!;
    const now = () => clock.now();
    const signalAt = termination.at!;
    const waitDeadline = deadlines.operatorWaitDeadline();
    const stop = new AbortController();
    let cancelDeadline = () => {};
    const deadline = new Promise<'deadline'>((r) => (cancelDeadline = clock.after(waitDeadline - now(), () => r('deadline'))));
    const cutShort = termination.cutShort.then(() => 'cut-short' as const);
    const gone = this.#operatorGone(stop.signal).then(() => 'stopped' as const);
    try {
      const connected = this.#operators();
      const waiting = connected > 0 || this.#options.operatorStopped !== undefined;
      if (waiting) log.info('waiting for the operator to stop', { clients: connected, timeoutMs: Math.max(0, waitDeadline - now()) });
      else log.info('no operator client connected: releasing at once');
      const how = await Promise.race([gone, deadline, cutShort]);
      if (how === 'stopped' && waiting) log.info('operator stopped', { afterSignalMs: now() - signalAt });
      else if (how === 'deadline') log.warn('the operator has not stopped and the grace period is running out: releasing anyway', { clients: this.#operators() });
      else if (how === 'cut-short') log.info('second termination signal: releasing now', { clients: this.#operators() });
    } finally {
      cancelDeadline();
      stop.abort();
    }
    return 0;
  }

  onReleased(): void {
    const { log, clock, termination } = this.#context!;
    log.info('sidecar stopped', { afterSignalMs: clock.now() - termination.at! });
  }

  /** Resolves once no operator client is connected and, where the API hook is given, the operator container has terminated. */
  #operatorGone(signal: AbortSignal): Promise<unknown> {
    const disconnected = new Promise<void>((resolve) => {
      const check = () => {
        if (this.#operators() > 0) return;
        this.#clientsChanged.off('change', check);
        resolve();
      };
      this.#clientsChanged.on('change', check);
      signal.addEventListener('abort', () => this.#clientsChanged.off('change', check), { once: true });
      check();
    });
    const api = this.#options.operatorStopped?.(signal).catch((err: unknown) => {
      if (!signal.aborted) this.#context!.log.warn('cannot tell from the Kubernetes API whether the operator stopped; going by its connections', { error: err });
    });
    return Promise.all([disconnected, api]);
  }

  #operators(): number {
    return this.#context?.server.greetedCount() ?? 0;
  }
}
