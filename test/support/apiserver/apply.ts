// Server-side apply (application/apply-patch+yaml), as far as helm and kubectl
// use it: the applied configuration merged into the object (lists by their
// merge keys, maps field by field, the rest replaced), the fields a manager
// applied before and applies no more removed unless another applier holds
// them, and each applier's field set kept in managedFields (FieldsV1).
// Conflicts between managers are not detected: every apply acts as forced.

import { ApiError, badRequest, notFound } from './errors.ts';
import type { Caller, Registry } from './registry.ts';
import { type ResourceType, apiVersionOf } from './resources.ts';
import { type FieldSchema, schemaOf } from './schema.ts';
import type { KubeObject } from './store.ts';
import { timestamp } from './strategies.ts';

type FieldSet = Record<string, any>;

const isMap = (x: unknown): x is Record<string, any> => x !== null && typeof x === 'object' && !Array.isArray(x);
const keyOf = (key: string, element: Record<string, any>) => `k:${JSON.stringify({ [key]: element[key] })}`;

/** The FieldsV1 set of what `value` sets. */
function fieldsOf(value: unknown, schema: FieldSchema | undefined): FieldSet {
  if (!isMap(value)) return {};
  const out: FieldSet = {};
  for (const [k, v] of Object.entries(value)) {
    const field = schema?.fields?.[k];
    if (Array.isArray(v) && field?.mergeKey !== undefined) {
      const list: FieldSet = {};
      for (const e of v) {
        if (field.mergeKey === '') list[`v:${JSON.stringify(e)}`] = {};
        else if (isMap(e)) list[keyOf(field.mergeKey, e)] = { '.': {}, ...fieldsOf(e, field.element) };
      }
      out[`f:${k}`] = list;
    } else if (isMap(v) && Object.keys(v).length > 0) out[`f:${k}`] = fieldsOf(v, field);
    else out[`f:${k}`] = {};
  }
  return out;
}

function union(a: FieldSet, b: FieldSet): FieldSet {
  const out: FieldSet = { ...a };
  for (const [k, v] of Object.entries(b)) out[k] = k in out ? union(out[k], v) : v;
  return out;
}

/** Removes from `obj` the leaves of `gone` that neither `kept` (the new apply) nor `others` name. */
function removeFields(obj: Record<string, any>, gone: FieldSet, kept: FieldSet, others: FieldSet, schema: FieldSchema | undefined): void {
  for (const [k, sub] of Object.entries(gone)) {
    if (!k.startsWith('f:')) continue;
    const name = k.slice(2);
    const field = schema?.fields?.[name];
    const keepHere = kept[k];
    const otherHere = others[k];
    const leaf = Object.keys(sub).length === 0;
    if (keepHere === undefined && otherHere === undefined) {
      if (leaf || !(name in obj)) {
        delete obj[name];
        continue;
      }
    }
    const value = obj[name];
    if (Array.isArray(value) && field?.mergeKey !== undefined) {
      obj[name] = value.filter((e) => {
        const id = field.mergeKey === '' ? `v:${JSON.stringify(e)}` : isMap(e) ? keyOf(field.mergeKey!, e) : '';
        if (!(id in sub)) return true;
        if (keepHere?.[id] !== undefined || otherHere?.[id] !== undefined) {
          if (isMap(e)) removeFields(e, sub[id], keepHere?.[id] ?? {}, otherHere?.[id] ?? {}, field.element);
          return true;
        }
        return false;
      });
    } else if (isMap(value)) {
      if (keepHere === undefined && otherHere === undefined) delete obj[name];
      else removeFields(value, sub, keepHere ?? {}, otherHere ?? {}, field);
    }
  }
}

/** The applied configuration merged over `obj`. */
function merge(obj: unknown, applied: unknown, schema: FieldSchema | undefined): unknown {
  if (!isMap(applied)) return structuredClone(applied);
  const out: Record<string, any> = isMap(obj) ? { ...obj } : {};
  for (const [k, v] of Object.entries(applied)) {
    const field = schema?.fields?.[k];
    if (v === null) delete out[k];
    else if (Array.isArray(v) && field?.mergeKey !== undefined && Array.isArray(out[k])) {
      const list = [...out[k]];
      for (const e of v) {
        const at = field.mergeKey === '' ? list.findIndex((x) => JSON.stringify(x) === JSON.stringify(e)) : list.findIndex((x) => isMap(x) && isMap(e) && JSON.stringify(x[field.mergeKey!]) === JSON.stringify(e[field.mergeKey!]));
        if (at === -1) list.push(structuredClone(e));
        else if (field.mergeKey !== '') list[at] = merge(list[at], e, field.element);
      }
      out[k] = list;
    } else if (isMap(v)) out[k] = merge(out[k], v, field);
    else out[k] = structuredClone(v);
  }
  return out;
}

export function applyPatch(registry: Registry, type: ResourceType, namespace: string | undefined, name: string, patch: unknown, caller: Caller, subresource?: string): KubeObject {
  const manager = caller.fieldManager;
  if (!manager) throw new ApiError(422, 'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch');
  if (!isMap(patch)) throw badRequest('the apply configuration must be an object');
  if (patch.apiVersion !== apiVersionOf(type) || patch.kind !== type.kind) {
    throw badRequest(`the API version in the data (${patch.apiVersion}) does not match the expected API version (${apiVersionOf(type)})`);
  }
  const applied = structuredClone(patch) as KubeObject;
  applied.metadata = { ...(applied.metadata ?? {}) };
  if (applied.metadata.name !== undefined && applied.metadata.name !== name) throw badRequest(`the name of the object (${applied.metadata.name}) does not match the name on the URL (${name})`);
  if (applied.metadata.managedFields !== undefined) throw badRequest('metadata.managedFields must be nil');
  const schema = type.crd ? { fields: { metadata: schemaOf('').fields!.metadata! } } : schemaOf(type.kind);
  const content = omit(applied, ['metadata', 'apiVersion', 'kind']);
  const fields = fieldsOf({ ...content, metadata: omit(applied.metadata, ['name', 'namespace', 'resourceVersion']) }, schema);
  const entry = { manager, operation: 'Apply', apiVersion: apiVersionOf(type), time: timestamp(registry.now()), fieldsType: 'FieldsV1', fieldsV1: fields, ...(subresource && { subresource }) };
  const existing = registry.find(type, namespace, name);
  if (!existing) {
    if (subresource) throw notFound({ resource: type.resource, group: type.group, name });
    return registry.create(type, namespace, { ...applied, metadata: { ...applied.metadata, name, managedFields: [entry] } }, caller);
  }
  const managed: any[] = existing.metadata.managedFields ?? [];
  const mine = managed.find((m) => m.manager === manager && m.operation === 'Apply' && (m.subresource ?? '') === (subresource ?? ''));
  const others = managed.filter((m) => m !== mine && m.operation === 'Apply').reduce((s, m) => union(s, m.fieldsV1 ?? {}), {} as FieldSet);
  const next = structuredClone(existing);
  if (mine) removeFields(next, mine.fieldsV1 ?? {}, fields, others, schema);
  const merged = merge(next, applied, schema) as KubeObject;
  merged.metadata.managedFields = [...managed.filter((m) => m !== mine), entry];
  merged.metadata.resourceVersion = applied.metadata.resourceVersion ?? existing.metadata.resourceVersion;
  return registry.update(type, namespace, name, merged, caller, subresource);
}

function omit(o: Record<string, any>, keys: string[]): Record<string, any> {
  const out = { ...o };
  for (const k of keys) delete out[k];
  return out;
}
