// The object store, as etcd is to kube-apiserver: objects by storage key,
// one resourceVersion counter for everything, and a history of changes for
// watches that resume from a resourceVersion (older ones are expired, 410).

import { EventEmitter } from 'node:events';

export type KubeObject = Record<string, any> & { metadata: Record<string, any> };

export type ChangeType = 'ADDED' | 'MODIFIED' | 'DELETED';

export interface Change {
  readonly type: ChangeType;
  /** The storage key of the object's resource (resources.ts `storage`). */
  readonly storage: string;
  /** The object as stored after the change; for DELETED, its last state with the deletion's resourceVersion. */
  readonly object: KubeObject;
  /** The object before the change (MODIFIED and DELETED), for watches whose selector it matched. */
  readonly previous?: KubeObject;
  readonly rv: number;
}

/** How many changes a watch can resume across. */
const HISTORY = 50_000;

const keyOf = (storage: string, namespace: string | undefined, name: string) => `${storage}\u0000${namespace ?? ''}\u0000${name}`;

export class Store extends EventEmitter<{ change: [Change] }> {
  readonly #objects = new Map<string, KubeObject>();
  readonly #history: Change[] = [];
  #rv: number;

  constructor(firstRv = 100) {
    super();
    this.setMaxListeners(0);
    this.#rv = firstRv;
  }

  /** The latest resourceVersion (a list's). */
  get rv(): number {
    return this.#rv;
  }

  get(storage: string, namespace: string | undefined, name: string): KubeObject | undefined {
    const o = this.#objects.get(keyOf(storage, namespace, name));
    return o && structuredClone(o);
  }

  /** Every object of a resource, in one namespace or in all, sorted by namespace and name as etcd's keys are. */
  list(storage: string, namespace?: string): KubeObject[] {
    const prefix = namespace === undefined ? `${storage}\u0000` : `${storage}\u0000${namespace}\u0000`;
    return [...this.#objects.entries()]
      .filter(([k]) => k.startsWith(prefix))
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([, o]) => structuredClone(o));
  }

  /** Every stored object with its resource's storage key (for the garbage collector's graph). */
  *entries(): Generator<{ storage: string; object: KubeObject }> {
    for (const [k, o] of this.#objects) yield { storage: k.slice(0, k.indexOf('\u0000')), object: o };
  }

  create(storage: string, obj: KubeObject): KubeObject {
    const key = keyOf(storage, obj.metadata.namespace, obj.metadata.name);
    if (this.#objects.has(key)) throw new Error(`store: ${key} exists`);
    return this.#write('ADDED', storage, key, obj);
  }

  update(storage: string, obj: KubeObject): KubeObject {
    const key = keyOf(storage, obj.metadata.namespace, obj.metadata.name);
    if (!this.#objects.has(key)) throw new Error(`store: ${key} does not exist`);
    return this.#write('MODIFIED', storage, key, obj);
  }

  remove(storage: string, namespace: string | undefined, name: string): KubeObject {
    const key = keyOf(storage, namespace, name);
    const old = this.#objects.get(key);
    if (!old) throw new Error(`store: ${key} does not exist`);
    this.#objects.delete(key);
    const last = structuredClone(old);
    last.metadata.resourceVersion = String(++this.#rv);
    this.#record({ type: 'DELETED', storage, object: last, previous: old, rv: this.#rv });
    return structuredClone(last);
  }

  #write(type: ChangeType, storage: string, key: string, obj: KubeObject): KubeObject {
    const previous = this.#objects.get(key);
    const stored = structuredClone(obj);
    stored.metadata.resourceVersion = String(++this.#rv);
    this.#objects.set(key, stored);
    this.#record({ type, storage, object: structuredClone(stored), ...(previous && { previous }), rv: this.#rv });
    return structuredClone(stored);
  }

  #record(change: Change): void {
    this.#history.push(change);
    if (this.#history.length > HISTORY) this.#history.splice(0, this.#history.length - HISTORY);
    this.emit('change', change);
  }

  /** The changes after `rv`, oldest first; undefined when `rv` is older than the history keeps. */
  since(rv: number): Change[] | undefined {
    const oldest = this.#history[0]?.rv ?? this.#rv + 1;
    if (rv < oldest - 1 && rv < this.#rv) return undefined;
    let i = this.#history.length;
    while (i > 0 && this.#history[i - 1]!.rv > rv) i--;
    return this.#history.slice(i);
  }

  /** The oldest resourceVersion a watch can still start from. */
  get oldestRv(): number {
    return (this.#history[0]?.rv ?? this.#rv + 1) - 1;
  }
}
