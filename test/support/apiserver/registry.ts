// The generic REST semantics of kube-apiserver's registry (k8s.io/apiserver
// pkg/registry/generic/registry/store.go) over the store: create, update,
// patch, delete with preconditions, finalizers and deletionTimestamp,
// graceful deletion of pods, the garbage collector's propagation finalizers,
// status subresources, generation, and no-op writes that change nothing.

import { randomUUID } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { type AdmissionRequest, PolicyAdmission } from './admission.ts';
import { applyPatch as serverSideApply } from './apply.ts';
import { crdWrite, pruneCustomResource } from './crd.ts';
import { ApiError, MODIFIED, alreadyExists, badRequest, conflict, forbidden, invalid, notFound } from './errors.ts';
import { fromEventsV1, toEventsV1 } from './events.ts';
import { APPLY_PATCH, JSON_PATCH, MERGE_PATCH, STRATEGIC_PATCH, jsonPatch, mergePatch, strategicMergePatch, unsupportedPatch } from './patch.ts';
import type { RbacView, UserInfo } from './rbac.ts';
import { type ResourceType, type ResourceTypes, apiVersionOf } from './resources.ts';
import { schemaOf } from './schema.ts';
import { fieldSelector, labelSelector } from './selectors.ts';
import type { KubeObject, Store } from './store.ts';
import { type WriteContext, finalizerErrors, nameErrors, normalizeTimes, randomSuffix, strategyOf, timestamp } from './strategies.ts';

export interface Caller {
  readonly user: UserInfo;
  /** The field manager of a server-side apply, or of an update (defaults from the user agent). */
  readonly fieldManager?: string;
  readonly force?: boolean;
}

export interface DeleteOptions {
  propagationPolicy?: 'Background' | 'Foreground' | 'Orphan';
  orphanDependents?: boolean;
  gracePeriodSeconds?: number;
  preconditions?: { uid?: string; resourceVersion?: string };
}

export interface ListQuery {
  labelSelector?: string;
  fieldSelector?: string;
}

const CRD_CLEANUP = 'customresourcecleanup.apiextensions.k8s.io';
const IMMORTAL = new Set(['default', 'kube-system', 'kube-public']);
/** Fields of metadata only the server sets. */
const SERVER_META = ['uid', 'creationTimestamp', 'deletionTimestamp', 'deletionGracePeriodSeconds', 'generation', 'selfLink'];

const subjectOf = (type: ResourceType, name?: string) => ({ resource: type.resource, group: type.group, name });
const isPod = (type: ResourceType) => type.storage === '/pods';
const isNamespace = (type: ResourceType) => type.storage === '/namespaces';
const isCrd = (type: ResourceType) => type.storage === 'apiextensions.k8s.io/customresourcedefinitions';

export class Registry {
  readonly store: Store;
  readonly types: ResourceTypes;
  readonly #now: () => number;
  readonly #rbac: () => RbacView;
  readonly #policies: PolicyAdmission;

  constructor(store: Store, types: ResourceTypes, now: () => number, rbac: () => RbacView) {
    this.store = store;
    this.types = types;
    this.#now = now;
    this.#rbac = rbac;
    this.#policies = new PolicyAdmission(store);
  }

  now(): number {
    return this.#now();
  }

  // ---- reading ----------------------------------------------------------------

  /** The object as `type`'s version serves it. */
  served(type: ResourceType, stored: KubeObject): KubeObject {
    let o = structuredClone(stored);
    if (type.group === 'events.k8s.io') o = toEventsV1(o);
    o.apiVersion = apiVersionOf(type);
    o.kind = type.kind;
    return o;
  }

  get(type: ResourceType, namespace: string | undefined, name: string): KubeObject {
    const o = this.store.get(type.storage, type.namespaced ? namespace : undefined, name);
    if (!o) throw notFound(subjectOf(type, name));
    return this.served(type, o);
  }

  find(type: ResourceType, namespace: string | undefined, name: string): KubeObject | undefined {
    const o = this.store.get(type.storage, type.namespaced ? namespace : undefined, name);
    return o && this.served(type, o);
  }

  list(type: ResourceType, namespace: string | undefined, query: ListQuery = {}): { items: KubeObject[]; resourceVersion: string } {
    const byLabel = labelSelector(query.labelSelector);
    const byField = fieldSelector(query.fieldSelector, type);
    const items = this.store.list(type.storage, type.namespaced ? namespace : undefined).map((o) => this.served(type, o)).filter((o) => byLabel(o) && byField(o));
    return { items, resourceVersion: String(this.store.rv) };
  }

  /** Validating admission by policies: after the type's own checks, before storage (the store's create/update/deleteValidation). */
  #admit(request: Omit<AdmissionRequest, 'object' | 'oldObject'>, object: KubeObject | undefined, old: KubeObject | undefined): void {
    const { type } = request;
    if (!this.#policies.applies(type)) return;
    this.#policies.admit({ ...request, object: object ? this.served(type, object) : null, oldObject: old ? this.served(type, old) : null });
  }

  #context(type: ResourceType, caller: Caller): WriteContext {
    return { type, user: caller.user, now: this.#now(), rbac: this.#rbac(), get: (storage, ns, name) => this.store.get(storage, ns, name) };
  }

  // ---- create -------------------------------------------------------------------

  create(type: ResourceType, namespace: string | undefined, body: unknown, caller: Caller): KubeObject {
    if (body === null || typeof body !== 'object' || Array.isArray(body)) throw badRequest(`the body of the request was not a ${type.kind} object`);
    let obj = structuredClone(body) as KubeObject;
    if (obj.apiVersion !== undefined && obj.apiVersion !== apiVersionOf(type)) throw badRequest(`the API version in the data (${obj.apiVersion}) does not match the expected API version (${apiVersionOf(type)})`);
    if (obj.kind !== undefined && obj.kind !== type.kind) throw badRequest(`the kind in the data (${obj.kind}) does not match the expected kind (${type.kind})`);
    if (type.group === 'events.k8s.io') obj = fromEventsV1(obj);
    obj.metadata = { ...(obj.metadata ?? {}) };
    const meta = obj.metadata;
    if (type.namespaced) {
      if (meta.namespace !== undefined && meta.namespace !== '' && meta.namespace !== namespace) throw badRequest('the namespace of the provided object does not match the namespace sent on the request');
      meta.namespace = namespace;
    } else delete meta.namespace;
    if (!meta.name && meta.generateName) meta.name = `${meta.generateName}${randomSuffix()}`;
    const requestName = meta.name ?? '';
    if (type.namespaced) this.#admitNamespace(type, namespace!, meta.name);
    const errors = [...nameErrors(type, meta.name ?? ''), ...finalizerErrors(meta.finalizers)];
    if (errors.length) throw invalid(type.kind, type.group, meta.name ?? '', errors);
    if (this.store.get(type.storage, meta.namespace, meta.name)) throw alreadyExists(subjectOf(type, meta.name));
    if (type.crd) this.#crdServing(type);
    for (const f of SERVER_META) delete meta[f];
    delete meta.resourceVersion;
    meta.uid = randomUUID();
    meta.creationTimestamp = timestamp(this.#now());
    if (type.generation) meta.generation = 1;
    dropEmpty(meta);
    // Status is the controllers' to write: a create sets none for types with a status subresource.
    if (type.subresources.status && !type.crd) delete obj.status;
    if (type.crd) {
      if (type.subresources.status) delete obj.status;
      obj = pruneCustomResource(type, obj);
    } else normalizeTimes(obj, type.kind);
    strategyOf(type).create?.(obj, this.#context(type, caller));
    if (isCrd(type)) crdWrite(obj, undefined);
    obj.apiVersion = apiVersionOf(type);
    obj.kind = type.kind;
    if (type.group === 'events.k8s.io') {
      obj.apiVersion = 'v1';
    }
    this.#admit({ operation: 'CREATE', type, name: requestName, namespace: meta.namespace, user: caller.user }, obj, undefined);
    return this.served(type, this.store.create(type.storage, obj));
  }

  /** NamespaceLifecycle admission: objects go only into namespaces that exist and are not terminating. */
  #admitNamespace(type: ResourceType, namespace: string, name: string | undefined): void {
    const ns = this.store.get('/namespaces', undefined, namespace);
    if (!ns) throw notFound({ resource: 'namespaces', group: '', name: namespace });
    if (ns.status?.phase === 'Terminating') {
      const e = forbidden(subjectOf(type, name), `unable to create new content in namespace ${namespace} because it is being terminated`);
      e.details!.causes = [{ reason: 'NamespaceTerminating', message: `namespace ${namespace} is being terminated`, field: 'metadata.namespace' }];
      throw e;
    }
  }

  /** Custom resources of a CRD being deleted may not be created (apiextensions-apiserver's handler). */
  #crdServing(type: ResourceType): void {
    const crd = this.store.get('apiextensions.k8s.io/customresourcedefinitions', undefined, type.crd!);
    if (crd?.metadata.deletionTimestamp) throw new ApiError(405, 'create not allowed while custom resource definition is terminating', { details: {} });
  }

  // ---- update ---------------------------------------------------------------------

  /**
   * PUT (and PATCH once the patch is applied): `body` replaces the object, or
   * only its status on the status subresource. A resourceVersion or uid in it
   * is a precondition.
   */
  update(type: ResourceType, namespace: string | undefined, name: string, body: unknown, caller: Caller, subresource?: string): KubeObject {
    const ns = type.namespaced ? namespace : undefined;
    const stored = this.store.get(type.storage, ns, name);
    if (!stored) throw notFound(subjectOf(type, name));
    if (body === null || typeof body !== 'object' || Array.isArray(body)) throw badRequest(`the body of the request was not a ${type.kind} object`);
    let next = structuredClone(body) as KubeObject;
    if (type.group === 'events.k8s.io') next = fromEventsV1(next);
    if (next.metadata === null || typeof next.metadata !== 'object') next.metadata = {};
    next.metadata = { ...next.metadata };
    const meta = next.metadata;
    if (meta.name !== undefined && meta.name !== '' && meta.name !== name) throw badRequest(`the name of the object (${meta.name}) does not match the name on the URL (${name})`);
    if (type.namespaced && meta.namespace !== undefined && meta.namespace !== '' && meta.namespace !== namespace) throw badRequest('the namespace of the provided object does not match the namespace sent on the request');
    if (meta.resourceVersion !== undefined && meta.resourceVersion !== '' && meta.resourceVersion !== stored.metadata.resourceVersion) throw conflict(subjectOf(type, name), MODIFIED);
    if (meta.uid !== undefined && meta.uid !== '' && meta.uid !== stored.metadata.uid) {
      throw conflict(subjectOf(type, name), `Precondition failed: UID in precondition: ${meta.uid}, UID in object meta: ${stored.metadata.uid}`);
    }
    let obj: KubeObject;
    if (subresource === 'status') {
      obj = structuredClone(stored);
      if (next.status === undefined) delete obj.status;
      else obj.status = next.status;
    } else if (subresource === 'finalize') {
      obj = structuredClone(stored);
      obj.spec = { ...obj.spec, finalizers: next.spec?.finalizers ?? [] };
    } else {
      obj = next;
      for (const f of SERVER_META) {
        if (stored.metadata[f] === undefined) delete meta[f];
        else meta[f] = stored.metadata[f];
      }
      meta.name = name;
      if (type.namespaced) meta.namespace = namespace;
      else delete meta.namespace;
      if (type.subresources.status) {
        if (stored.status === undefined) delete obj.status;
        else obj.status = structuredClone(stored.status);
      }
      if (type.crd) obj = pruneCustomResource(type, obj);
      else normalizeTimes(obj, type.kind);
      const finalizers = obj.metadata.finalizers;
      const errors = finalizerErrors(finalizers);
      if (errors.length) throw invalid(type.kind, type.group, name, errors);
      if (stored.metadata.deletionTimestamp) {
        const added = (Array.isArray(finalizers) ? finalizers : []).filter((f: string) => !(stored.metadata.finalizers ?? []).includes(f));
        if (added.length > 0) {
          throw invalid(type.kind, type.group, name, [
            { field: 'metadata.finalizers', message: `Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{${added.map((f) => JSON.stringify(f)).join(', ')}}`, reason: 'FieldValueForbidden' },
          ]);
        }
      }
      strategyOf(type).update?.(obj, stored, this.#context(type, caller));
      if (isCrd(type)) crdWrite(obj, stored);
    }
    if (!type.crd) normalizeTimes(obj, type.kind);
    dropEmpty(obj.metadata);
    obj.apiVersion = stored.apiVersion;
    obj.kind = stored.kind;
    if (type.crd) obj.apiVersion = apiVersionOf(type);
    obj.metadata.resourceVersion = stored.metadata.resourceVersion;
    if (type.generation && this.#specChanged(type, obj, stored)) obj.metadata.generation = (stored.metadata.generation ?? 1) + 1;
    // Admitted before the no-op check: a write that changes nothing is still a request (store.go Update).
    this.#admit({ operation: 'UPDATE', type, subresource, name, namespace: ns, user: caller.user }, obj, stored);
    // A write that changes nothing is no write: the resourceVersion stays, no watch event.
    if (isDeepStrictEqual(obj, stored)) return this.served(type, stored);
    // The last finalizer of an object being deleted gone: it is deleted instead of written. The watch
    // sees only DELETED, with the stored object; the caller gets what it wrote (registry Store.Update).
    if (this.#finishedDeleting(type, obj, stored)) {
      this.store.remove(type.storage, ns, name);
      return this.served(type, obj);
    }
    return this.served(type, this.store.update(type.storage, obj));
  }

  #specChanged(type: ResourceType, obj: KubeObject, old: KubeObject): boolean {
    const rest = (o: KubeObject) => {
      const r: Record<string, any> = { ...o };
      delete r.metadata;
      // A custom resource without a status subresource counts its status too.
      if (type.subresources.status || !type.crd) delete r.status;
      return r;
    };
    return !isDeepStrictEqual(rest(obj), rest(old));
  }

  /** ShouldDeleteDuringUpdate: no finalizer left on an object being deleted whose grace period is over (0 or none). */
  #finishedDeleting(type: ResourceType, o: KubeObject, old: KubeObject): boolean {
    if (!old.metadata.deletionTimestamp || (o.metadata.finalizers ?? []).length > 0) return false;
    if (isNamespace(type) && (o.spec?.finalizers ?? []).length > 0) return false;
    return (old.metadata.deletionGracePeriodSeconds ?? 0) === 0;
  }

  patch(type: ResourceType, namespace: string | undefined, name: string, patch: unknown, contentType: string, caller: Caller, subresource?: string): KubeObject {
    if (contentType === APPLY_PATCH) return serverSideApply(this, type, namespace, name, patch, caller, subresource);
    const stored = this.store.get(type.storage, type.namespaced ? namespace : undefined, name);
    if (!stored) throw notFound(subjectOf(type, name));
    const current = this.served(type, stored);
    let next: unknown;
    switch (contentType) {
      case MERGE_PATCH:
        if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) throw badRequest('json: cannot unmarshal array into Go value of type map[string]interface {}');
        next = mergePatch(current, patch);
        break;
      case JSON_PATCH:
        next = jsonPatch(current, patch);
        break;
      case STRATEGIC_PATCH:
        if (type.crd) throw unsupportedPatch(true);
        next = strategicMergePatch(current, patch, schemaOf(type.kind));
        break;
      default:
        throw unsupportedPatch(Boolean(type.crd));
    }
    return this.update(type, namespace, name, next, caller, subresource);
  }

  // ---- delete -----------------------------------------------------------------------

  delete(type: ResourceType, namespace: string | undefined, name: string, options: DeleteOptions, caller: Caller): { object: KubeObject; deleted: boolean } {
    const ns = type.namespaced ? namespace : undefined;
    const stored = this.store.get(type.storage, ns, name);
    if (!stored) throw notFound(subjectOf(type, name));
    // rest.BeforeDelete checks the preconditions first, naming the kind.
    const pre = options.preconditions ?? {};
    const byKind = { resource: type.kind, group: type.group, name };
    if (pre.uid && pre.uid !== stored.metadata.uid) throw conflict(byKind, `the UID in the precondition (${pre.uid}) does not match the UID in record (${stored.metadata.uid}). The object might have been deleted and then recreated`);
    if (pre.resourceVersion && pre.resourceVersion !== stored.metadata.resourceVersion) {
      throw conflict(byKind, `the ResourceVersion in the precondition (${pre.resourceVersion}) does not match the ResourceVersion in record (${stored.metadata.resourceVersion}). The object might have been modified`);
    }
    if (isNamespace(type) && IMMORTAL.has(name)) throw forbidden(subjectOf(type, name), 'this namespace may not be deleted');
    this.#admit({ operation: 'DELETE', type, name, namespace: ns, user: caller.user }, undefined, stored);
    const now = this.#now();
    const obj = structuredClone(stored);
    const meta = obj.metadata;
    const write = () => (isDeepStrictEqual(obj, stored) ? stored : this.store.update(type.storage, obj));

    // Namespaces and CRDs: the first delete only marks them; their controllers finish the rest.
    if (isNamespace(type) && !meta.deletionTimestamp) {
      meta.deletionTimestamp = timestamp(now);
      obj.status = { ...obj.status, phase: 'Terminating' };
      this.#setFinalizers(meta, this.#propagationFinalizers(meta.finalizers ?? [], options));
      return { object: this.served(type, write()), deleted: false };
    }
    if (isNamespace(type) && (obj.spec?.finalizers ?? []).length > 0) return { object: this.served(type, stored), deleted: false };
    if (isCrd(type) && !meta.deletionTimestamp) {
      meta.deletionTimestamp = timestamp(now);
      if (!(meta.finalizers ?? []).includes(CRD_CLEANUP)) meta.finalizers = [...(meta.finalizers ?? []), CRD_CLEANUP];
      crdTerminating(obj, now);
      return { object: this.served(type, write()), deleted: false };
    }

    // Graceful deletion (pods only): rest.BeforeDelete.
    let graceful = false;
    let grace = 0;
    if (isPod(type)) {
      const requested = options.gracePeriodSeconds === undefined ? undefined : Math.max(options.gracePeriodSeconds, options.gracePeriodSeconds < 0 ? 1 : 0);
      const pending = meta.deletionGracePeriodSeconds;
      if (meta.deletionTimestamp) {
        if (pending !== undefined && pending > 0) {
          // Already being deleted: only a shorter grace period changes anything, counted from the first delete.
          if (requested === undefined || requested >= pending) return { object: this.served(type, stored), deleted: false };
          meta.deletionTimestamp = timestamp(Date.parse(meta.deletionTimestamp) - pending * 1000 + requested * 1000);
          meta.deletionGracePeriodSeconds = requested;
          graceful = true;
          grace = requested;
        }
      } else {
        // A pod that never ran on a node, or has finished, has no kubelet to wait for (pod strategy CheckGracefulDelete).
        grace = requested ?? obj.spec?.terminationGracePeriodSeconds ?? 30;
        if (!obj.spec?.nodeName || ['Succeeded', 'Failed'].includes(obj.status?.phase)) grace = 0;
        meta.deletionTimestamp = timestamp(now + grace * 1000);
        meta.deletionGracePeriodSeconds = grace;
        if (meta.generation > 0) meta.generation++;
        graceful = true;
      }
    }
    this.#setFinalizers(meta, this.#propagationFinalizers(meta.finalizers ?? [], options));
    const pendingFinalizers = (meta.finalizers ?? []).length > 0;
    if (!graceful && pendingFinalizers) {
      // markAsDeleting
      if (!meta.deletionTimestamp && meta.generation > 0) meta.generation++;
      if (!meta.deletionTimestamp || Date.parse(meta.deletionTimestamp) > now) meta.deletionTimestamp = timestamp(now);
      meta.deletionGracePeriodSeconds = 0;
    }
    if (graceful || pendingFinalizers) {
      const written = write();
      if (pendingFinalizers || grace > 0) return { object: this.served(type, written), deleted: false };
    }
    const last = this.store.remove(type.storage, ns, name);
    if (isPod(type) || isNamespace(type) || type.storage === '/services') return { object: this.served(type, last), deleted: true };
    return { object: successStatus(type, name, stored.metadata.uid), deleted: true };
  }

  #setFinalizers(meta: Record<string, any>, finalizers: string[]): void {
    if (finalizers.length > 0) meta.finalizers = finalizers;
    else delete meta.finalizers;
  }

  /** The garbage collector's finalizers as the propagation policy says (deletionFinalizersForGarbageCollection): an explicit policy replaces those set in advance. */
  #propagationFinalizers(finalizers: string[], options: DeleteOptions): string[] {
    let policy = options.propagationPolicy;
    if (options.orphanDependents !== undefined) policy = options.orphanDependents ? 'Orphan' : 'Background';
    if (policy === undefined) return [...finalizers];
    const rest = finalizers.filter((f) => f !== 'orphan' && f !== 'foregroundDeletion');
    const wanted = policy === 'Orphan' ? [...rest, 'orphan'] : policy === 'Foreground' ? [...rest, 'foregroundDeletion'] : rest;
    const same = wanted.length === new Set(finalizers).size && wanted.every((f) => finalizers.includes(f));
    return same ? [...finalizers] : wanted;
  }

  deleteCollection(type: ResourceType, namespace: string | undefined, options: DeleteOptions, query: ListQuery, caller: Caller): KubeObject {
    const { items } = this.list(type, namespace, query);
    for (const o of items) {
      try {
        this.delete(type, o.metadata.namespace, o.metadata.name, options, caller);
      } catch (err) {
        if (!(err instanceof ApiError && err.code === 404)) throw err;
      }
    }
    return { kind: `${type.kind}List`, apiVersion: apiVersionOf(type), metadata: { resourceVersion: String(this.store.rv) }, items: [] } as unknown as KubeObject;
  }

  // ---- for controllers ------------------------------------------------------------------

  /** Reads, changes and writes an object as a controller does, again on a conflict; undefined when it is gone. */
  mutate(type: ResourceType, namespace: string | undefined, name: string, change: (o: KubeObject) => boolean | void, caller: Caller, subresource?: string): KubeObject | undefined {
    const current = this.find(type, namespace, name);
    if (!current) return undefined;
    if (change(current) === false) return current;
    try {
      return this.update(type, namespace, name, current, caller, subresource);
    } catch (err) {
      if (err instanceof ApiError && err.code === 404) return undefined;
      throw err;
    }
  }
}

/** Empty lists and maps of metadata are left out, as Go's omitempty does. */
function dropEmpty(meta: Record<string, any>): void {
  for (const f of ['finalizers', 'ownerReferences', 'managedFields']) if (Array.isArray(meta[f]) && meta[f].length === 0) delete meta[f];
  for (const f of ['labels', 'annotations']) if (meta[f] && typeof meta[f] === 'object' && Object.keys(meta[f]).length === 0) delete meta[f];
}

function successStatus(type: ResourceType, name: string, uid: string): KubeObject {
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', details: { name, ...(type.group && { group: type.group }), kind: type.resource, uid } } as unknown as KubeObject;
}

/** The CRD's Terminating condition on its first delete (apiextensions customresourcedefinition/etcd.go). */
function crdTerminating(crd: KubeObject, now: number): void {
  const conditions: any[] = (crd.status ??= {}).conditions ?? [];
  if (conditions.some((c) => c.type === 'Terminating')) return;
  crd.status.conditions = [
    ...conditions,
    { type: 'Terminating', status: 'True', lastTransitionTime: timestamp(now), reason: 'InstanceDeletionPending', message: 'CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon' },
  ];
}

