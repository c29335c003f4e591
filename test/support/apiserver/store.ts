// The object store and the controllers that act on it: finalizers and
// deletionTimestamp, graceful Pod deletion, the garbage collector, the
// namespace lifecycle and CustomResourceDefinitions, as a real cluster does.

import { randomBytes, randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { isDeepStrictEqual } from 'node:util';
import { ApiError, alreadyExists, conflict, invalid, notFound } from './errors.ts';
import { type ResourceType, ResourceTypes, apiVersionOf, groupOf, storageKey } from './resources.ts';

export type KubeObject = Record<string, any> & { metadata: Record<string, any> };

export interface Clock {
  now(): number;
}

export type ChangeType = 'ADDED' | 'MODIFIED' | 'DELETED';
export interface Change {
  readonly type: ChangeType;
  readonly resource: ResourceType;
  readonly object: KubeObject;
}

export interface DeleteOptions {
  propagationPolicy?: 'Background' | 'Foreground' | 'Orphan';
  gracePeriodSeconds?: number;
  preconditions?: { uid?: string; resourceVersion?: string };
}

/** metav1.Time: RFC 3339 with whole seconds. */
export const timestamp = (ms: number): string => new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');

const STANDARD_FINALIZERS = new Set(['kubernetes', 'orphan', 'foregroundDeletion']);
const QUALIFIED = /^(?=.{1,253}\/)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const NAME = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;
const CRD_CLEANUP = 'customresourcecleanup.apiextensions.k8s.io';

const qualifiedKind = (type: ResourceType): string => (type.group ? `${type.kind}.${type.group}` : type.kind);
const clone = <T>(x: T): T => structuredClone(x);

export interface StoreOptions {
  readonly clock: Clock;
  /** How long the controllers (garbage collector, namespace, CRD) take to react to a change. */
  readonly controllerDelayMs?: number;
}

export class Store extends EventEmitter<{ change: [Change] }> {
  readonly types = new ResourceTypes();
  readonly #objects = new Map<string, KubeObject>();
  readonly #clock: Clock;
  readonly #controllerDelayMs: number;
  #rv = 1000;
  #timer?: NodeJS.Timeout;

  constructor({ clock, controllerDelayMs = 20 }: StoreOptions) {
    super();
    this.setMaxListeners(0);
    this.#clock = clock;
    this.#controllerDelayMs = controllerDelayMs;
  }

  get resourceVersion(): string {
    return String(this.#rv);
  }

  #key(type: ResourceType, namespace: string | undefined, name: string): string {
    return `${storageKey(type)}/${type.namespaced ? (namespace ?? '') : ''}/${name}`;
  }

  /** The object as served at `type`'s version (a copy). */
  #view(type: ResourceType, obj: KubeObject): KubeObject {
    const copy = clone(obj);
    copy.apiVersion = apiVersionOf(type);
    copy.kind = type.kind;
    return copy;
  }

  get(type: ResourceType, namespace: string | undefined, name: string): KubeObject | undefined {
    const obj = this.#objects.get(this.#key(type, namespace, name));
    return obj && this.#view(type, obj);
  }

  mustGet(type: ResourceType, namespace: string | undefined, name: string): KubeObject {
    const obj = this.get(type, namespace, name);
    if (!obj) throw notFound(type.resource, type.group, name);
    return obj;
  }

  /** Objects of a type, in one namespace or (undefined) all, sorted by namespace and name. */
  list(type: ResourceType, namespace?: string): KubeObject[] {
    const prefix = `${storageKey(type)}/${namespace === undefined ? '' : `${namespace}/`}`;
    return [...this.#objects.entries()]
      .filter(([key]) => key.startsWith(prefix))
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([, obj]) => this.#view(type, obj));
  }

  findByUid(uid: string): { type: ResourceType; object: KubeObject } | undefined {
    for (const obj of this.#objects.values()) {
      if (obj.metadata.uid !== uid) continue;
      const type = this.#typeOf(obj);
      if (type) return { type, object: this.#view(type, obj) };
    }
    return undefined;
  }

  #typeOf(obj: KubeObject): ResourceType | undefined {
    return this.types.byGroupKind(groupOf(obj.apiVersion), obj.kind);
  }

  #nextRv(): string {
    return String(++this.#rv);
  }

  #emit(type: ChangeType, resource: ResourceType, object: KubeObject): void {
    this.emit('change', { type, resource, object: this.#view(resource, object) });
    this.#schedule();
  }

  create(type: ResourceType, namespace: string | undefined, body: KubeObject): KubeObject {
    if (!body || typeof body !== 'object' || Array.isArray(body)) throw new ApiError(400, 'the request body must be a JSON object');
    const obj = clone(body) as KubeObject;
    obj.metadata = { ...(obj.metadata ?? {}) };
    const meta = obj.metadata;
    if (obj.apiVersion !== undefined && obj.apiVersion !== apiVersionOf(type)) {
      throw new ApiError(400, `the API version in the data (${obj.apiVersion}) does not match the expected API version (${apiVersionOf(type)})`);
    }
    if (obj.kind !== undefined && obj.kind !== type.kind) {
      throw new ApiError(400, `the kind in the data (${obj.kind}) does not match the expected kind (${type.kind})`);
    }
    if (type.namespaced) {
      if (meta.namespace !== undefined && meta.namespace !== namespace) {
        throw new ApiError(400, 'the namespace of the provided object does not match the namespace sent on the request');
      }
      meta.namespace = namespace;
      this.#admitNamespace(type, namespace!);
    } else {
      delete meta.namespace;
    }
    if (!meta.name && meta.generateName) meta.name = `${meta.generateName}${randomBytes(4).toString('hex').slice(0, 5)}`;
    const name = meta.name;
    if (!name) throw invalid(qualifiedKind(type), type.group, '', [{ field: 'metadata.name', message: 'Required value: name or generateName is required', reason: 'FieldValueRequired' }]);
    if (type.resource !== 'events' && !NAME.test(name) && !type.group.startsWith('rbac.')) {
      throw invalid(qualifiedKind(type), type.group, name, [{ field: 'metadata.name', message: `Invalid value: "${name}": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.'`, reason: 'FieldValueInvalid' }]);
    }
    if (this.#objects.has(this.#key(type, namespace, name))) throw alreadyExists(type.resource, type.group, name);
    if (type.crd && this.#isTerminating(this.types.byGroupKind('apiextensions.k8s.io', 'CustomResourceDefinition')!, undefined, type.crd)) {
      throw new ApiError(405, `create not allowed while custom resource definition is terminating`, { reason: 'MethodNotAllowed' });
    }
    this.#validateFinalizers(type, name, meta.finalizers ?? []);
    meta.uid = randomUUID();
    meta.resourceVersion = this.#nextRv();
    meta.creationTimestamp = timestamp(this.#clock.now());
    delete meta.deletionTimestamp;
    delete meta.deletionGracePeriodSeconds;
    if (meta.finalizers?.length === 0) delete meta.finalizers;
    obj.apiVersion = apiVersionOf(type);
    obj.kind = type.kind;
    this.#defaults(type, obj);
    this.#objects.set(this.#key(type, namespace, name), obj);
    this.#emit('ADDED', type, obj);
    if (type.resource === 'customresourcedefinitions' && type.group === 'apiextensions.k8s.io') this.#registerCrd(obj);
    return this.#view(type, obj);
  }

  #admitNamespace(type: ResourceType, namespace: string): void {
    const nsType = this.types.find('', 'v1', 'namespaces')!;
    const ns = this.#objects.get(this.#key(nsType, undefined, namespace));
    if (!ns) throw notFound('namespaces', '', namespace);
    if (ns.metadata.deletionTimestamp && type.resource !== 'events') {
      throw new ApiError(403, `${type.resource}${type.group ? `.${type.group}` : ''} is forbidden: unable to create new content in namespace ${namespace} because it is being terminated`, {
        details: { group: type.group, kind: type.resource },
      });
    }
  }

  #defaults(type: ResourceType, obj: KubeObject): void {
    if (type.group === '' && type.resource === 'pods') {
      obj.spec ??= {};
      obj.spec.terminationGracePeriodSeconds ??= 30;
      obj.status ??= { phase: 'Pending' };
    }
    if (type.group === '' && type.resource === 'namespaces') {
      obj.spec = { finalizers: ['kubernetes'], ...obj.spec };
      obj.status = { phase: 'Active' };
    }
    if (type.group === 'rbac.authorization.k8s.io' && (type.resource === 'clusterroles' || type.resource === 'roles')) obj.rules ??= [];
  }

  #validateFinalizers(type: ResourceType, name: string, finalizers: unknown[]): void {
    finalizers.forEach((f, i) => {
      if (typeof f !== 'string' || (!STANDARD_FINALIZERS.has(f) && !QUALIFIED.test(f))) {
        throw invalid(qualifiedKind(type), type.group, name, [
          { field: `metadata.finalizers[${i}]`, message: `Invalid value: ${JSON.stringify(f)}: name is neither a standard finalizer name nor is it fully qualified`, reason: 'FieldValueInvalid' },
        ]);
      }
    });
  }

  /**
   * Writes a new version of an existing object (PUT, and PATCH after the patch
   * was applied). `next.metadata.resourceVersion`, when set, is a precondition.
   * `statusOnly`: the status subresource, which changes nothing but status.
   */
  update(type: ResourceType, namespace: string | undefined, name: string, next: KubeObject, { statusOnly = false } = {}): KubeObject {
    const key = this.#key(type, namespace, name);
    const old = this.#objects.get(key);
    if (!old) throw notFound(type.resource, type.group, name);
    if (!next || typeof next !== 'object' || typeof next.metadata !== 'object' || next.metadata === null) {
      throw new ApiError(400, 'the request body must be an object with metadata');
    }
    const meta = next.metadata;
    if (meta.name !== undefined && meta.name !== name) {
      throw new ApiError(400, `the name of the object (${meta.name}) does not match the name on the URL (${name})`);
    }
    if (meta.resourceVersion !== undefined && meta.resourceVersion !== '' && meta.resourceVersion !== old.metadata.resourceVersion) {
      throw conflict(type.resource, type.group, name);
    }
    if (meta.uid !== undefined && meta.uid !== '' && meta.uid !== old.metadata.uid) {
      throw invalid(qualifiedKind(type), type.group, name, [{ field: 'metadata.uid', message: `Invalid value: ${JSON.stringify(meta.uid)}: field is immutable`, reason: 'FieldValueInvalid' }]);
    }
    let obj: KubeObject;
    if (statusOnly) {
      obj = clone(old);
      obj.status = clone(next.status);
    } else {
      obj = clone(next);
      obj.metadata = { ...meta };
      // Fields the server owns: what the client sent is ignored.
      for (const f of ['uid', 'creationTimestamp', 'deletionTimestamp', 'deletionGracePeriodSeconds', 'namespace', 'name']) {
        if (old.metadata[f] === undefined) delete obj.metadata[f];
        else obj.metadata[f] = old.metadata[f];
      }
      if (type.group === 'rbac.authorization.k8s.io' && type.resource.endsWith('bindings') && !isDeepStrictEqual(obj.roleRef, old.roleRef)) {
        throw invalid(qualifiedKind(type), type.group, name, [{ field: 'roleRef', message: `Invalid value: ${JSON.stringify(obj.roleRef)}: cannot change roleRef`, reason: 'FieldValueInvalid' }]);
      }
      if (type.resource === 'namespaces' || type.resource === 'pods' || type.resource === 'customresourcedefinitions') obj.status = clone(old.status);
    }
    obj.apiVersion = old.apiVersion;
    obj.kind = old.kind;
    const finalizers: string[] = obj.metadata.finalizers ?? [];
    this.#validateFinalizers(type, name, finalizers);
    if (old.metadata.deletionTimestamp) {
      const added = finalizers.filter((f) => !(old.metadata.finalizers ?? []).includes(f));
      if (added.length > 0) {
        throw invalid(qualifiedKind(type), type.group, name, [
          {
            field: 'metadata.finalizers',
            message: `Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{${added.map((f) => JSON.stringify(f)).join(', ')}}`,
            reason: 'FieldValueForbidden',
          },
        ]);
      }
    }
    if (finalizers.length === 0) delete obj.metadata.finalizers;
    obj.metadata.resourceVersion = old.metadata.resourceVersion;
    if (isDeepStrictEqual(obj, old)) return this.#view(type, old);
    obj.metadata.resourceVersion = this.#nextRv();
    this.#objects.set(key, obj);
    this.#emit('MODIFIED', type, obj);
    this.#removeIfDone(type, key, obj);
    return this.#view(type, obj);
  }

  /** DELETE: the object is removed at once, or kept with a deletionTimestamp while finalizers or a graceful Pod termination hold it. */
  delete(type: ResourceType, namespace: string | undefined, name: string, options: DeleteOptions = {}): { object: KubeObject; gone: boolean } {
    const key = this.#key(type, namespace, name);
    const old = this.#objects.get(key);
    if (!old) throw notFound(type.resource, type.group, name);
    const pre = options.preconditions ?? {};
    if (pre.uid !== undefined && pre.uid !== old.metadata.uid) {
      throw new ApiError(409, `Precondition failed: UID in precondition: ${pre.uid}, UID in object meta: ${old.metadata.uid}`, { details: { name, group: type.group, kind: type.resource } });
    }
    if (pre.resourceVersion !== undefined && pre.resourceVersion !== old.metadata.resourceVersion) {
      throw new ApiError(409, `Precondition failed: ResourceVersion in precondition: ${pre.resourceVersion}, ResourceVersion in object meta: ${old.metadata.resourceVersion}`, { details: { name, group: type.group, kind: type.resource } });
    }
    const obj = clone(old);
    const meta = obj.metadata;
    let finalizers: string[] = [...(meta.finalizers ?? [])];
    const policy = options.propagationPolicy;
    // An explicit policy replaces the GC finalizers set in advance; without one they take effect.
    if (policy === 'Background') finalizers = finalizers.filter((f) => f !== 'foregroundDeletion' && f !== 'orphan');
    if (policy === 'Foreground') finalizers = [...finalizers.filter((f) => f !== 'orphan'), ...(finalizers.includes('foregroundDeletion') ? [] : ['foregroundDeletion'])];
    if (policy === 'Orphan') finalizers = [...finalizers.filter((f) => f !== 'foregroundDeletion'), ...(finalizers.includes('orphan') ? [] : ['orphan'])];

    const now = this.#clock.now();
    const isPod = type.group === '' && type.resource === 'pods';
    if (isPod) {
      // An unscheduled or finished Pod has no kubelet to wait for: it goes at once.
      const running = obj.spec?.nodeName && !['Succeeded', 'Failed'].includes(obj.status?.phase);
      let grace = options.gracePeriodSeconds ?? obj.spec?.terminationGracePeriodSeconds ?? 30;
      if (!running) grace = 0;
      if (meta.deletionTimestamp && meta.deletionGracePeriodSeconds !== undefined) grace = Math.min(grace, meta.deletionGracePeriodSeconds);
      if (!meta.deletionTimestamp || grace < meta.deletionGracePeriodSeconds) {
        meta.deletionTimestamp = timestamp(now + grace * 1000);
        meta.deletionGracePeriodSeconds = grace;
      }
    } else if (!meta.deletionTimestamp) {
      meta.deletionTimestamp = timestamp(now);
      meta.deletionGracePeriodSeconds = 0;
    }
    if (finalizers.length > 0) meta.finalizers = finalizers;
    else delete meta.finalizers;
    if (type.resource === 'namespaces' && type.group === '') obj.status = { ...obj.status, phase: 'Terminating' };

    const held = finalizers.length > 0 || (isPod && meta.deletionGracePeriodSeconds > 0) || this.#namespaceHeld(type, obj);
    if (!held) {
      this.#objects.delete(key);
      this.#emit('DELETED', type, old);
      return { object: this.#view(type, obj), gone: true };
    }
    if (!isDeepStrictEqual(obj, old)) {
      meta.resourceVersion = this.#nextRv();
      this.#objects.set(key, obj);
      this.#emit('MODIFIED', type, obj);
    }
    return { object: this.#view(type, obj), gone: false };
  }

  /** The kubelet confirms a terminating Pod's containers stopped (a delete with grace 0). */
  finishPodTermination(namespace: string, name: string): void {
    const type = this.types.find('', 'v1', 'pods')!;
    const pod = this.mustGet(type, namespace, name);
    if (!pod.metadata.deletionTimestamp) throw new Error(`pod ${namespace}/${name} is not terminating`);
    this.delete(type, namespace, name, { gracePeriodSeconds: 0 });
  }

  #namespaceHeld(type: ResourceType, obj: KubeObject): boolean {
    return type.group === '' && type.resource === 'namespaces' && (obj.spec?.finalizers ?? []).length > 0;
  }

  #isTerminating(type: ResourceType, namespace: string | undefined, name: string): boolean {
    return Boolean(this.#objects.get(this.#key(type, namespace, name))?.metadata.deletionTimestamp);
  }

  /** After a write: an object being deleted whose last finalizer went is gone. */
  #removeIfDone(type: ResourceType, key: string, obj: KubeObject): void {
    const meta = obj.metadata;
    if (!meta.deletionTimestamp || (meta.finalizers ?? []).length > 0) return;
    if (type.group === '' && type.resource === 'pods' && meta.deletionGracePeriodSeconds > 0) return;
    if (this.#namespaceHeld(type, obj)) return;
    this.#objects.delete(key);
    this.#emit('DELETED', type, obj);
  }

  // ---- controllers -------------------------------------------------------

  #schedule(): void {
    if (this.#timer) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#reconcile();
    }, this.#controllerDelayMs);
    this.#timer.unref();
  }

  /** Stops the controllers (the server is closing). */
  stop(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #reconcile(): void {
    for (const [key, obj] of [...this.#objects.entries()]) {
      if (!this.#objects.has(key)) continue;
      const type = this.#typeOf(obj);
      if (!type) continue;
      try {
        this.#collectGarbage(type, obj);
        if (type.group === '' && type.resource === 'namespaces') this.#finalizeNamespace(type, obj);
        if (type.group === 'apiextensions.k8s.io' && type.resource === 'customresourcedefinitions') this.#finalizeCrd(type, obj);
      } catch (err) {
        if (!(err instanceof ApiError && err.code === 404)) throw err;
      }
    }
  }

  /** The owner an ownerReference names, if it exists with that uid; `unresolvable` for a namespaced owner of a cluster-scoped object. */
  #owner(dependent: KubeObject, ref: Record<string, any>): KubeObject | undefined | 'unresolvable' {
    const ownerType = this.types.byGroupKind(groupOf(ref.apiVersion ?? ''), ref.kind);
    if (!ownerType) return 'unresolvable';
    const depNamespaced = dependent.metadata.namespace !== undefined;
    if (ownerType.namespaced && !depNamespaced) return 'unresolvable';
    const owner = this.#objects.get(this.#key(ownerType, dependent.metadata.namespace, ref.name));
    return owner && owner.metadata.uid === ref.uid ? owner : undefined;
  }

  #collectGarbage(type: ResourceType, obj: KubeObject): void {
    const { name, namespace } = obj.metadata;
    const refs: Record<string, any>[] = obj.metadata.ownerReferences ?? [];
    if (refs.length > 0) {
      const owners = refs.map((ref) => ({ ref, owner: this.#owner(obj, ref) }));
      if (owners.some((o) => o.owner === 'unresolvable')) return;
      const absent = owners.filter((o) => o.owner === undefined);
      const orphaning = owners.filter((o) => typeof o.owner === 'object' && o.owner.metadata.deletionTimestamp && (o.owner.metadata.finalizers ?? []).includes('orphan'));
      if (absent.length === refs.length) {
        if (!obj.metadata.deletionTimestamp) this.delete(type, namespace, name, { propagationPolicy: 'Background' });
      } else if (absent.length > 0 || orphaning.length > 0) {
        const drop = new Set([...absent, ...orphaning].map((o) => o.ref.uid));
        const next = clone(obj);
        next.metadata.ownerReferences = refs.filter((r) => !drop.has(r.uid));
        if (next.metadata.ownerReferences.length === 0) delete next.metadata.ownerReferences;
        this.update(type, namespace, name, next);
      } else {
        const deletingOwner = owners.find((o) => typeof o.owner === 'object' && (o.owner.metadata.finalizers ?? []).includes('foregroundDeletion') && o.owner.metadata.deletionTimestamp);
        // Foreground deletion of the owner: its dependents go first.
        if (deletingOwner && !obj.metadata.deletionTimestamp && owners.every((o) => typeof o.owner === 'object' && o.owner.metadata.deletionTimestamp)) {
          this.delete(type, namespace, name, { propagationPolicy: 'Foreground' });
        }
      }
    }
    // An owner being deleted in the foreground or with orphaning: remove the GC finalizer once its work is done.
    const meta = obj.metadata;
    if (!meta.deletionTimestamp) return;
    const current = this.#objects.get(this.#key(type, namespace, name));
    if (!current) return;
    const fins: string[] = current.metadata.finalizers ?? [];
    const dependents = [...this.#objects.values()].filter((o) => (o.metadata.ownerReferences ?? []).some((r: any) => r.uid === meta.uid));
    if (fins.includes('foregroundDeletion') && !dependents.some((d) => (d.metadata.ownerReferences ?? []).some((r: any) => r.uid === meta.uid && r.blockOwnerDeletion === true))) {
      if (dependents.length === 0 || dependents.every((d) => d.metadata.deletionTimestamp)) {
        this.update(type, namespace, name, { ...clone(current), metadata: { ...clone(current.metadata), finalizers: fins.filter((f) => f !== 'foregroundDeletion') } });
        return;
      }
    }
    if (fins.includes('orphan') && dependents.length === 0) {
      this.update(type, namespace, name, { ...clone(current), metadata: { ...clone(current.metadata), finalizers: fins.filter((f) => f !== 'orphan') } });
    }
  }

  #finalizeNamespace(type: ResourceType, ns: KubeObject): void {
    if (!ns.metadata.deletionTimestamp) return;
    const name = ns.metadata.name;
    let remaining = 0;
    for (const [key, obj] of [...this.#objects.entries()]) {
      if (obj.metadata.namespace !== name) continue;
      remaining++;
      const t = this.#typeOf(obj);
      if (t && !obj.metadata.deletionTimestamp) this.delete(t, name, obj.metadata.name, { propagationPolicy: 'Background' });
      if (!this.#objects.has(key)) remaining--;
    }
    if (remaining === 0 && (ns.spec?.finalizers ?? []).includes('kubernetes')) {
      const next = clone(this.#objects.get(this.#key(type, undefined, name))!);
      next.spec.finalizers = next.spec.finalizers.filter((f: string) => f !== 'kubernetes');
      const key = this.#key(type, undefined, name);
      next.metadata.resourceVersion = this.#nextRv();
      this.#objects.set(key, next);
      this.#emit('MODIFIED', type, next);
      this.#removeIfDone(type, key, next);
    }
  }

  #crdTypes(crd: KubeObject): ResourceType[] {
    const spec = crd.spec ?? {};
    const names = spec.names ?? {};
    return (spec.versions ?? [])
      .filter((v: any) => v.served !== false)
      .map((v: any) => ({
        group: spec.group,
        version: v.name,
        resource: names.plural,
        kind: names.kind,
        singular: names.singular ?? String(names.kind).toLowerCase(),
        namespaced: spec.scope !== 'Cluster',
        shortNames: names.shortNames,
        subresources: v.subresources?.status ? ['status'] : [],
        crd: crd.metadata.name,
      }));
  }

  #registerCrd(crd: KubeObject): void {
    const type = this.types.find('apiextensions.k8s.io', 'v1', 'customresourcedefinitions')!;
    const spec = crd.spec ?? {};
    const expected = `${spec.names?.plural}.${spec.group}`;
    if (!spec.group || !spec.names?.plural || !spec.names?.kind || crd.metadata.name !== expected || !(spec.versions?.length > 0)) {
      this.#objects.delete(this.#key(type, undefined, crd.metadata.name));
      throw invalid(qualifiedKind(type), type.group, crd.metadata.name, [
        { field: 'metadata.name', message: `Invalid value: ${JSON.stringify(crd.metadata.name)}: must be spec.names.plural+"."+spec.group, with spec.names.kind and spec.versions set`, reason: 'FieldValueInvalid' },
      ]);
    }
    for (const t of this.#crdTypes(crd)) this.types.add(t);
    const stored = this.#objects.get(this.#key(type, undefined, crd.metadata.name))!;
    stored.metadata.finalizers = [...(stored.metadata.finalizers ?? []), CRD_CLEANUP];
    stored.status = {
      conditions: [
        { type: 'NamesAccepted', status: 'True', reason: 'NoConflicts', lastTransitionTime: timestamp(this.#clock.now()) },
        { type: 'Established', status: 'True', reason: 'InitialNamesAccepted', lastTransitionTime: timestamp(this.#clock.now()) },
      ],
      acceptedNames: spec.names,
      storedVersions: [(spec.versions.find((v: any) => v.storage) ?? spec.versions[0]).name],
    };
    stored.metadata.resourceVersion = this.#nextRv();
    this.#emit('MODIFIED', type, stored);
  }

  #finalizeCrd(type: ResourceType, crd: KubeObject): void {
    if (!crd.metadata.deletionTimestamp || !(crd.metadata.finalizers ?? []).includes(CRD_CLEANUP)) return;
    const [first] = this.#crdTypes(crd);
    let remaining = 0;
    if (first) {
      for (const obj of this.list(first)) {
        remaining++;
        if (!obj.metadata.deletionTimestamp) {
          if (this.delete(first, obj.metadata.namespace, obj.metadata.name, { propagationPolicy: 'Background' }).gone) remaining--;
        }
      }
    }
    if (remaining > 0) return;
    this.types.removeCrd(crd.metadata.name);
    const current = this.#objects.get(this.#key(type, undefined, crd.metadata.name))!;
    this.update(type, undefined, crd.metadata.name, { ...clone(current), metadata: { ...clone(current.metadata), finalizers: current.metadata.finalizers.filter((f: string) => f !== CRD_CLEANUP) } });
  }
}
