// An informer's view of the store: what kube-apiserver's authorizer and
// authenticators read. It sees each change a little after it was made
// (kubernetes-facts.md: a deleted role grants for about 0.1-0.2 s more).

import type { Change, KubeObject, Store } from './store.ts';

const keyOf = (namespace: string | undefined, name: string) => `${namespace ?? ''}\u0000${name}`;

export class InformerView {
  readonly #objects = new Map<string, Map<string, KubeObject>>();
  readonly #lagMs: number;
  readonly #timers = new Set<NodeJS.Timeout>();
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
      if (this.#lagMs <= 0) return this.#apply(c);
      const timer = setTimeout(() => {
        this.#timers.delete(timer);
        this.#apply(c);
      }, this.#lagMs);
      this.#timers.add(timer);
    };
    store.on('change', this.#onChange);
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
    for (const t of this.#timers) clearTimeout(t);
  }
}
