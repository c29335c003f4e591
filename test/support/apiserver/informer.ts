// An informer's view of the store: what kube-apiserver's authorizer and
// authenticators read. It sees the changes in order, each a little after it
// was made: a deletion after `deleteLagMs` (kubernetes-facts.md: a deleted role
// or binding grants for about 0.1-0.2 s more, calls were refused 55-75 ms after
// Helm's DELETE), other changes after a few milliseconds.

import type { Change, KubeObject, Store } from './store.ts';

/** How long a watch event takes to reach an informer on loopback. */
const WATCH_DELIVERY_MS = 5;

const keyOf = (namespace: string | undefined, name: string) => `${namespace ?? ''}\u0000${name}`;

export class InformerView {
  readonly #objects = new Map<string, Map<string, KubeObject>>();
  readonly #deleteLagMs: number;
  readonly #queue: { change: Change; due: number }[] = [];
  #timer?: NodeJS.Timeout;
  readonly #onChange: (c: Change) => void;
  readonly #store: Store;

  constructor(store: Store, storages: readonly string[], deleteLagMs: number) {
    this.#store = store;
    this.#deleteLagMs = deleteLagMs;
    for (const s of storages) {
      const m = new Map<string, KubeObject>();
      for (const o of store.list(s)) m.set(keyOf(o.metadata.namespace, o.metadata.name), o);
      this.#objects.set(s, m);
    }
    this.#onChange = (c) => {
      if (!this.#objects.has(c.storage)) return;
      const lag = c.type === 'DELETED' ? this.#deleteLagMs : Math.min(this.#deleteLagMs, WATCH_DELIVERY_MS);
      const last = this.#queue.at(-1)?.due ?? 0;
      this.#queue.push({ change: c, due: Math.max(last, performance.now() + lag) });
      this.#schedule();
    };
    store.on('change', this.#onChange);
  }

  #schedule(): void {
    if (this.#timer || this.#queue.length === 0) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      const now = performance.now();
      while (this.#queue.length > 0 && this.#queue[0]!.due <= now) this.#apply(this.#queue.shift()!.change);
      this.#schedule();
    }, Math.max(0, this.#queue[0]!.due - performance.now()));
  }

  #apply(c: Change): void {
    const m = this.#objects.get(c.storage)!;
    const key = keyOf(c.object.metadata.namespace, c.object.metadata.name);
    if (c.type === 'DELETED') m.delete(key);
    else m.set(key, c.object);
  }

  get(storage: string, namespace: string | undefined, name: string): KubeObject | undefined {
    return this.#objects.get(storage)?.get(keyOf(namespace, name));
  }

  /** As an informer-backed getter with a live fallback: what the informer has not seen yet is read from the store. */
  getOrLive(storage: string, namespace: string | undefined, name: string): KubeObject | undefined {
    return this.get(storage, namespace, name) ?? this.#store.get(storage, namespace, name);
  }

  list(storage: string, namespace?: string): KubeObject[] {
    const all = [...(this.#objects.get(storage)?.values() ?? [])];
    return namespace === undefined ? all : all.filter((o) => o.metadata.namespace === namespace);
  }

  close(): void {
    this.#store.off('change', this.#onChange);
    clearTimeout(this.#timer);
  }
}
