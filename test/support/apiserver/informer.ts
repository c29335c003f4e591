// An informer's view of the store: what kube-apiserver's authorizer and
// authenticators read. It sees the changes in order, each `lagMs` after it was
// made (a watch event's way to an informer): a deleted role or binding grants,
// and a deleted pod's token is accepted, for that long after the delete.
// kubernetes-facts.md saw the permission gone within 0.1-0.2 s, calls refused
// 55-75 ms after Helm's DELETE, on a loaded machine where each request took
// tens of milliseconds: the lag is a few requests long, not a fixed time.

import type { Change, KubeObject, Store } from './store.ts';

const keyOf = (namespace: string | undefined, name: string) => `${namespace ?? ''}\u0000${name}`;

export class InformerView {
  readonly #objects = new Map<string, Map<string, KubeObject>>();
  readonly #lagMs: number;
  readonly #queue: { change: Change; due: number }[] = [];
  #timer?: NodeJS.Timeout;
  readonly #onChange: (c: Change) => void;
  readonly #store: Store;

  constructor(store: Store, storages: readonly string[], lagMs: number) {
    this.#store = store;
    this.#lagMs = lagMs;
    for (const s of storages) {
      const m = new Map<string, KubeObject>();
      for (const o of store.list(s)) m.set(keyOf(o.metadata.namespace, o.metadata.name), o);
      this.#objects.set(s, m);
    }
    this.#onChange = (c) => {
      if (!this.#objects.has(c.storage)) return;
      const last = this.#queue.at(-1)?.due ?? 0;
      this.#queue.push({ change: c, due: Math.max(last, performance.now() + this.#lagMs) });
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
