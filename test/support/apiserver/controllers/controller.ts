// What every controller of the stand-in controller-manager shares: it reacts
// to the store's changes while running, through a queue of keys each synced
// at most once at a time, after a delay (the informer and workqueue latency of
// kube-controller-manager), again later when a sync fails.

import { ApiError } from '../errors.ts';
import type { Caller, Registry } from '../registry.ts';
import type { Change } from '../store.ts';

/** A failed sync is tried again after this long (the workqueue's rate limiter, roughly). */
const RETRY_MS = 200;

export const controllerCaller = (name: string): Caller => ({
  user: { name: `system:serviceaccount:kube-system:${name}`, groups: ['system:serviceaccounts', 'system:serviceaccounts:kube-system', 'system:authenticated'] },
});

export abstract class Controller {
  protected readonly registry: Registry;
  protected readonly caller: Caller;
  readonly #timers = new Map<string, { timer: NodeJS.Timeout; at: number }>();
  #running = false;

  constructor(registry: Registry, name: string) {
    this.registry = registry;
    this.caller = controllerCaller(name);
    registry.store.on('change', (c) => {
      if (this.#running) this.changed(c);
    });
  }

  get running(): boolean {
    return this.#running;
  }

  start(): void {
    if (this.#running) return;
    this.#running = true;
    this.resync();
  }

  stop(): void {
    this.#running = false;
    for (const { timer } of this.#timers.values()) clearTimeout(timer);
    this.#timers.clear();
  }

  /** Syncs `key` after `delayMs`, or sooner if it is already due sooner. */
  protected enqueue(key: string, delayMs = 0): void {
    if (!this.#running) return;
    const at = Date.now() + delayMs;
    const pending = this.#timers.get(key);
    if (pending && pending.at <= at) return;
    if (pending) clearTimeout(pending.timer);
    const timer = setTimeout(() => {
      this.#timers.delete(key);
      if (!this.#running) return;
      try {
        this.sync(key);
      } catch (err) {
        if (err instanceof ApiError && err.code === 404) return;
        if (!(err instanceof ApiError && err.code === 409)) process.stderr.write(`stand-in ${this.constructor.name} ${key}: ${(err as Error)?.stack ?? err}\n`);
        this.enqueue(key, RETRY_MS);
      }
    }, delayMs);
    timer.unref?.();
    this.#timers.set(key, { timer, at });
  }

  /** A change of the store while running. */
  protected abstract changed(c: Change): void;
  /** Everything queued again (at start, as informers list). */
  protected abstract resync(): void;
  protected abstract sync(key: string): void;
}
