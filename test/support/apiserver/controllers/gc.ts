// The garbage collector (pkg/controller/garbagecollector): a dependent whose
// owners are all gone is deleted (in the background, or in the foreground when
// an owner waits for it); references to owners that are gone are removed from
// dependents that keep another owner; an owner deleted in the foreground keeps
// its foregroundDeletion finalizer until its blocking dependents are gone, one
// deleted with Orphan has its dependents let go before its orphan finalizer
// goes. An owner that still exists, terminating or not, holds its dependents.

import { ApiError } from '../errors.ts';
import { groupOf } from '../resources.ts';
import type { ResourceType } from '../resources.ts';
import type { Change, KubeObject } from '../store.ts';
import { Controller } from './controller.ts';

/** The collector reacts about this long after a change (kubernetes-facts.md: a Lease went about 0.1 s after its Pod). */
const REACTION_MS = 50;

interface Node {
  readonly type: ResourceType;
  readonly object: KubeObject;
}

type Owner = { state: 'present'; node: Node } | { state: 'absent' } | { state: 'unresolvable' };

export class GarbageCollector extends Controller {
  constructor(registry: ConstructorParameters<typeof Controller>[0]) {
    super(registry, 'generic-garbage-collector');
  }

  protected changed(_c: Change): void {
    this.enqueue('graph', REACTION_MS);
  }

  protected resync(): void {
    this.enqueue('graph', REACTION_MS);
  }

  protected sync(): void {
    const nodes = this.#nodes();
    const byUid = new Map<string, Node>();
    for (const n of nodes) byUid.set(n.object.metadata.uid, n);
    const dependentsOf = new Map<string, Node[]>();
    for (const n of nodes) {
      for (const ref of n.object.metadata.ownerReferences ?? []) {
        const list = dependentsOf.get(ref.uid) ?? [];
        list.push(n);
        dependentsOf.set(ref.uid, list);
      }
    }
    for (const n of nodes) this.#dependent(n, byUid, dependentsOf);
    for (const n of nodes) this.#owner(n, dependentsOf);
  }

  #nodes(): Node[] {
    const out: Node[] = [];
    for (const type of this.registry.types.stored()) for (const object of this.registry.store.list(type.storage)) out.push({ type, object });
    return out;
  }

  #resolve(dependent: Node, ref: Record<string, any>, byUid: Map<string, Node>): Owner {
    const ownerType = this.registry.types.byGroupKind(groupOf(ref.apiVersion ?? ''), ref.kind);
    if (!ownerType) return { state: 'unresolvable' };
    // A cluster-scoped dependent cannot have a namespaced owner.
    if (ownerType.namespaced && !dependent.type.namespaced) return { state: 'unresolvable' };
    const node = byUid.get(ref.uid);
    const namespace = ownerType.namespaced ? dependent.object.metadata.namespace : undefined;
    if (!node || node.type.storage !== ownerType.storage || node.object.metadata.name !== ref.name || node.object.metadata.namespace !== namespace) return { state: 'absent' };
    return { state: 'present', node };
  }

  /** attemptToDeleteItem */
  #dependent(n: Node, byUid: Map<string, Node>, dependentsOf: Map<string, Node[]>): void {
    const meta = n.object.metadata;
    const refs: Record<string, any>[] = meta.ownerReferences ?? [];
    if (refs.length === 0 || meta.deletionTimestamp) return;
    const owners = refs.map((ref) => ({ ref, owner: this.#resolve(n, ref, byUid) }));
    if (owners.some((o) => o.owner.state === 'unresolvable')) return;
    const absent = owners.filter((o) => o.owner.state === 'absent');
    const present = owners.filter((o): o is { ref: any; owner: { state: 'present'; node: Node } } => o.owner.state === 'present');
    const waiting = present.filter((o) => o.owner.node.object.metadata.deletionTimestamp && (o.owner.node.object.metadata.finalizers ?? []).includes('foregroundDeletion'));
    const solid = present.filter((o) => !waiting.includes(o));
    if (solid.length > 0) {
      if (absent.length > 0 || waiting.length > 0) {
        // Only the references to owners that are gone (or waiting for this dependent) go.
        const drop = new Set([...absent, ...waiting].map((o) => o.ref.uid));
        this.#write(n, (o) => {
          o.metadata.ownerReferences = (o.metadata.ownerReferences ?? []).filter((r: any) => !drop.has(r.uid));
        });
      }
      return;
    }
    const hasDependents = (dependentsOf.get(meta.uid) ?? []).length > 0;
    const own: string[] = meta.finalizers ?? [];
    const policy = waiting.length > 0 && hasDependents ? 'Foreground' : own.includes('orphan') ? 'Orphan' : own.includes('foregroundDeletion') ? 'Foreground' : 'Background';
    this.#delete(n, policy);
  }

  /** The owner's part: processDeletingDependentsItem (foreground) and orphanDependents (orphan). */
  #owner(n: Node, dependentsOf: Map<string, Node[]>): void {
    const meta = n.object.metadata;
    if (!meta.deletionTimestamp) return;
    const finalizers: string[] = meta.finalizers ?? [];
    const dependents = dependentsOf.get(meta.uid) ?? [];
    if (finalizers.includes('orphan')) {
      for (const d of dependents) {
        this.#write(d, (o) => {
          o.metadata.ownerReferences = (o.metadata.ownerReferences ?? []).filter((r: any) => r.uid !== meta.uid);
        });
      }
      this.#write(n, (o) => {
        o.metadata.finalizers = (o.metadata.finalizers ?? []).filter((f: string) => f !== 'orphan');
      });
      return;
    }
    if (finalizers.includes('foregroundDeletion')) {
      const blocking = dependents.filter((d) => (d.object.metadata.ownerReferences ?? []).some((r: any) => r.uid === meta.uid && r.blockOwnerDeletion === true));
      if (blocking.length > 0) return;
      this.#write(n, (o) => {
        o.metadata.finalizers = (o.metadata.finalizers ?? []).filter((f: string) => f !== 'foregroundDeletion');
      });
    }
  }

  #write(n: Node, change: (o: KubeObject) => void): void {
    const { namespace, name, uid } = n.object.metadata;
    this.registry.mutate(n.type, namespace, name, (o) => {
      if (o.metadata.uid !== uid) return false;
      change(o);
    }, this.caller);
  }

  #delete(n: Node, propagationPolicy: 'Background' | 'Foreground' | 'Orphan'): void {
    const { namespace, name, uid } = n.object.metadata;
    try {
      this.registry.delete(n.type, namespace, name, { propagationPolicy, preconditions: { uid } }, this.caller);
    } catch (err) {
      if (!(err instanceof ApiError && (err.code === 404 || err.code === 409))) throw err;
    }
  }
}
