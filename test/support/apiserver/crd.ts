// CustomResourceDefinitions as apiextensions-apiserver serves them: their
// validation, the types they add once established, the pruning of unknown
// fields of their objects by the structural schema, and the cleanup of their
// objects when one is deleted (the customresourcecleanup finalizer).

import { ApiError, type FieldError, invalid } from './errors.ts';
import type { Registry } from './registry.ts';
import { type ResourceType, crdTypes } from './resources.ts';
import type { Change, KubeObject } from './store.ts';
import { timestamp } from './strategies.ts';
import type { UserInfo } from './rbac.ts';

export const CRD_STORAGE = 'apiextensions.k8s.io/customresourcedefinitions';
const CLEANUP = 'customresourcecleanup.apiextensions.k8s.io';
const GROUP = 'apiextensions.k8s.io';
const SYSTEM: UserInfo = { name: 'system:apiserver', groups: ['system:masters'] };

/** Validation of a CRD's create or update (pkg/apis/apiextensions/validation), the parts that matter here. */
export function crdWrite(crd: KubeObject, old: KubeObject | undefined): void {
  const spec = crd.spec ?? {};
  const names = spec.names ?? {};
  const errors: FieldError[] = [];
  if (crd.metadata.name !== `${names.plural}.${spec.group}`) errors.push({ field: 'metadata.name', message: `Invalid value: "${crd.metadata.name}": must be spec.names.plural+"."+spec.group` });
  if (!spec.group || !String(spec.group).includes('.')) errors.push({ field: 'spec.group', message: `Invalid value: "${spec.group ?? ''}": should be a domain with at least one dot` });
  if (!names.plural) errors.push({ field: 'spec.names.plural', message: 'Required value', reason: 'FieldValueRequired' });
  if (!names.kind) errors.push({ field: 'spec.names.kind', message: 'Required value', reason: 'FieldValueRequired' });
  if (!['Namespaced', 'Cluster'].includes(spec.scope)) errors.push({ field: 'spec.scope', message: `Unsupported value: "${spec.scope ?? ''}": supported values: "Cluster", "Namespaced"`, reason: 'FieldValueNotSupported' });
  const versions: any[] = spec.versions ?? [];
  if (versions.length === 0) errors.push({ field: 'spec.versions', message: 'Invalid value: null: must have exactly one version marked as storage version' });
  else if (versions.filter((v) => v.storage).length !== 1) errors.push({ field: 'spec.versions', message: 'Invalid value: ...: must have exactly one version marked as storage version' });
  versions.forEach((v, i) => {
    if (!v.schema?.openAPIV3Schema) errors.push({ field: `spec.versions[${i}].schema.openAPIV3Schema`, message: 'Required value: schemas are required', reason: 'FieldValueRequired' });
  });
  if (old && old.spec?.scope !== spec.scope) errors.push({ field: 'spec.scope', message: `Invalid value: "${spec.scope}": field is immutable` });
  if (errors.length) throw invalid('CustomResourceDefinition', GROUP, crd.metadata.name, errors);
  if (!old) {
    spec.names = { ...names, singular: names.singular ?? String(names.kind).toLowerCase(), listKind: names.listKind ?? `${names.kind}List` };
    spec.conversion ??= { strategy: 'None' };
    for (const v of versions) v.storage ??= false;
    crd.status = { acceptedNames: { kind: '', plural: '' }, conditions: [], storedVersions: [versions.find((v) => v.storage).name] };
  }
}

const KEEP_META = ['name', 'generateName', 'namespace', 'uid', 'resourceVersion', 'generation', 'creationTimestamp', 'deletionTimestamp', 'deletionGracePeriodSeconds', 'labels', 'annotations', 'ownerReferences', 'finalizers', 'managedFields', 'selfLink'];

/** Drops what the structural schema does not allow (apiextensions pruning), and metadata fields ObjectMeta has not. */
export function pruneCustomResource(type: ResourceType, obj: KubeObject): KubeObject {
  const schema = type.schema;
  const out: KubeObject = { ...obj, metadata: {} };
  for (const k of KEEP_META) if (obj.metadata?.[k] !== undefined) out.metadata[k] = obj.metadata[k];
  if (!schema || schema['x-kubernetes-preserve-unknown-fields']) return out;
  for (const [k, v] of Object.entries(obj)) {
    if (k === 'apiVersion' || k === 'kind' || k === 'metadata') continue;
    const sub = schema.properties?.[k];
    if (sub) out[k] = prune(v, sub);
    else if (schema.additionalProperties) out[k] = prune(v, schema.additionalProperties === true ? {} : schema.additionalProperties);
    else delete out[k];
  }
  return out;
}

function prune(value: unknown, schema: any): unknown {
  if (schema['x-kubernetes-preserve-unknown-fields'] || schema['x-kubernetes-embedded-resource']) return value;
  if (Array.isArray(value)) return schema.items ? value.map((v) => prune(v, schema.items)) : value;
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    const sub = schema.properties?.[k] ?? (schema.additionalProperties === true ? {} : schema.additionalProperties);
    if (sub) out[k] = prune(v, sub);
  }
  return out;
}

/**
 * The apiextensions controllers that run in the API server: a new CRD's names
 * accepted and its types served (Established), a deleted one's objects
 * deleted before its finalizer goes.
 */
export class CustomResourceController {
  readonly #registry: Registry;
  readonly #pending = new Set<string>();
  #scheduled = false;

  constructor(registry: Registry) {
    this.#registry = registry;
    for (const crd of registry.store.list(CRD_STORAGE)) this.#serve(crd);
    registry.store.on('change', (c) => this.#changed(c));
  }

  #crdType(): ResourceType {
    return this.#registry.types.find(GROUP, 'v1', 'customresourcedefinitions')!;
  }

  #changed(c: Change): void {
    if (c.storage === CRD_STORAGE) this.#enqueue(c.object.metadata.name);
    else if (c.type === 'DELETED') {
      // A custom resource of a CRD being deleted went: look at the CRD again.
      for (const crd of this.#registry.store.list(CRD_STORAGE)) if (crd.metadata.deletionTimestamp && `${crd.spec.group}/${crd.spec.names.plural}` === c.storage) this.#enqueue(crd.metadata.name);
    }
  }

  #enqueue(name: string): void {
    this.#pending.add(name);
    if (this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(() => {
      this.#scheduled = false;
      const names = [...this.#pending];
      this.#pending.clear();
      for (const n of names) this.#sync(n);
    });
  }

  #sync(name: string): void {
    const crd = this.#registry.store.get(CRD_STORAGE, undefined, name);
    if (!crd) return;
    if (crd.metadata.deletionTimestamp) return this.#cleanUp(crd);
    this.#serve(crd);
    const established = (crd.status?.conditions ?? []).some((c: any) => c.type === 'Established' && c.status === 'True');
    if (established) return;
    const now = timestamp(this.#registry.now());
    this.#registry.mutate(this.#crdType(), undefined, name, (o) => {
      o.status = {
        ...o.status,
        acceptedNames: { ...o.spec.names },
        conditions: [
          { type: 'NamesAccepted', status: 'True', lastTransitionTime: now, reason: 'NoConflicts', message: 'no conflicts found' },
          { type: 'Established', status: 'True', lastTransitionTime: now, reason: 'InitialNamesAccepted', message: 'the initial names have been accepted' },
        ],
      };
    }, { user: SYSTEM }, 'status');
  }

  #serve(crd: KubeObject): void {
    const types = this.#registry.types;
    types.removeCrd(crd.metadata.name);
    for (const t of crdTypes(crd)) {
      const version = crd.spec.versions.find((v: any) => v.name === t.version);
      types.add({ ...t, schema: version?.schema?.openAPIV3Schema });
    }
  }

  #cleanUp(crd: KubeObject): void {
    if (!(crd.metadata.finalizers ?? []).includes(CLEANUP)) return;
    const [type] = crdTypes(crd).map((t) => this.#registry.types.find(t.group, t.version, t.resource) ?? t);
    const left = type ? this.#registry.store.list(type.storage) : [];
    for (const o of left) {
      if (o.metadata.deletionTimestamp) continue;
      try {
        this.#registry.delete(type!, o.metadata.namespace, o.metadata.name, {}, { user: SYSTEM });
      } catch (err) {
        if (!(err instanceof ApiError && err.code === 404)) throw err;
      }
    }
    if (type && this.#registry.store.list(type.storage).length > 0) return;
    this.#registry.types.removeCrd(crd.metadata.name);
    this.#registry.mutate(this.#crdType(), undefined, crd.metadata.name, (o) => {
      o.metadata.finalizers = (o.metadata.finalizers ?? []).filter((f: string) => f !== CLEANUP);
    }, { user: SYSTEM });
  }
}
