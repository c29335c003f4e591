// The patch formats of PATCH: JSON merge patch (RFC 7386), JSON patch
// (RFC 6902) and strategic merge patch (built-in types only), with the
// messages kube-apiserver answers when one cannot be applied.

import { isDeepStrictEqual } from 'node:util';
import { ApiError } from './errors.ts';
import type { FieldSchema } from './schema.ts';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

export const MERGE_PATCH = 'application/merge-patch+json';
export const JSON_PATCH = 'application/json-patch+json';
export const STRATEGIC_PATCH = 'application/strategic-merge-patch+json';
export const APPLY_PATCH = 'application/apply-patch+yaml';

const isMap = (x: unknown): x is Record<string, any> => x !== null && typeof x === 'object' && !Array.isArray(x);

export function unsupportedPatch(custom: boolean): ApiError {
  const types = custom ? [JSON_PATCH, MERGE_PATCH, APPLY_PATCH] : [JSON_PATCH, MERGE_PATCH, APPLY_PATCH, STRATEGIC_PATCH];
  return new ApiError(415, `the body of the request was in an unknown format - accepted media types include: ${types.join(', ')}`);
}

export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isMap(patch)) return structuredClone(patch);
  const out: Record<string, unknown> = isMap(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key];
    else out[key] = mergePatch(out[key], value);
  }
  return out;
}

// ---- strategic merge patch ------------------------------------------------

const DELETE_PRIMITIVES = '$deleteFromPrimitiveList/';
const ELEMENT_ORDER = '$setElementOrder/';
const RETAIN_KEYS = '$retainKeys';
const PATCH_DIRECTIVE = '$patch';

/** Applies a strategic merge patch to `original` with the type's list strategies. */
export function strategicMergePatch(original: unknown, patch: unknown, schema: FieldSchema): unknown {
  if (!isMap(patch)) throw new ApiError(400, 'the strategic merge patch must be a JSON object');
  return mergeMap(isMap(original) ? original : {}, patch, schema);
}

function mergeMap(original: Record<string, any>, patch: Record<string, any>, schema: FieldSchema | undefined): Record<string, any> | undefined {
  const directive = patch[PATCH_DIRECTIVE];
  if (directive === 'delete') return undefined;
  if (directive === 'replace') {
    return structuredClone(stripDirectives(patch)) as Record<string, any>;
  }
  if (directive !== undefined && directive !== 'merge') throw new ApiError(400, `Unknown patch type: ${directive} in map: ${JSON.stringify(patch)}`);
  const out: Record<string, any> = { ...original };
  const orders: [string, unknown[]][] = [];
  for (const [key, value] of Object.entries(patch)) {
    if (key === PATCH_DIRECTIVE || key === RETAIN_KEYS) continue;
    if (key.startsWith(DELETE_PRIMITIVES)) {
      const field = key.slice(DELETE_PRIMITIVES.length);
      if (!Array.isArray(value)) throw new ApiError(400, `invalid patch: ${key} must be a list`);
      if (Array.isArray(out[field])) out[field] = (out[field] as unknown[]).filter((v) => !value.some((d) => isDeepStrictEqual(d, v)));
      continue;
    }
    if (key.startsWith(ELEMENT_ORDER)) {
      if (!Array.isArray(value)) throw new ApiError(400, `invalid patch: ${key} must be a list`);
      orders.push([key.slice(ELEMENT_ORDER.length), value]);
      continue;
    }
    const field = schema?.fields?.[key];
    if (value === null) delete out[key];
    else if (isMap(value)) {
      const merged = mergeMap(isMap(out[key]) ? out[key] : {}, value, field);
      if (merged === undefined) delete out[key];
      else out[key] = merged;
    } else if (Array.isArray(value)) out[key] = mergeList(Array.isArray(out[key]) ? out[key] : [], value, field);
    else out[key] = value;
  }
  for (const [field, order] of orders) if (Array.isArray(out[field])) out[field] = reorder(out[field], order, schema?.fields?.[field]?.mergeKey);
  const retain = patch[RETAIN_KEYS];
  if (Array.isArray(retain)) for (const key of Object.keys(out)) if (!retain.includes(key)) delete out[key];
  return out;
}

function mergeList(original: unknown[], patch: unknown[], schema: FieldSchema | undefined): unknown[] {
  if (schema?.mergeKey === undefined) return structuredClone(stripDirectives(patch)) as unknown[];
  if (patch.some((e) => isMap(e) && e[PATCH_DIRECTIVE] === 'replace')) return structuredClone(stripDirectives(patch.filter((e) => !(isMap(e) && e[PATCH_DIRECTIVE] === 'replace')))) as unknown[];
  const key = schema.mergeKey;
  if (key === '') {
    const out = [...original];
    for (const v of patch) if (!out.some((o) => isDeepStrictEqual(o, v))) out.push(v);
    return out;
  }
  const out = [...original];
  for (const element of patch) {
    if (!isMap(element)) throw new ApiError(400, `invalid patch: the list elements must be maps with the key ${key}`);
    const at = out.findIndex((o) => isMap(o) && isDeepStrictEqual(o[key], element[key]));
    if (element[PATCH_DIRECTIVE] === 'delete') {
      if (at !== -1) out.splice(at, 1);
      continue;
    }
    if (at === -1) out.push(structuredClone(stripDirectives(element)));
    else out[at] = mergeMap(out[at] as Record<string, any>, element, schema.element) ?? out[at];
  }
  return out;
}

/** `$setElementOrder`: the listed elements in that order, the others after them as they were. */
function reorder(list: unknown[], order: unknown[], key: string | undefined): unknown[] {
  const id = (e: unknown) => (key && isMap(e) ? e[key] : e);
  const wanted = order.map((o) => (key && isMap(o) ? o[key] : o));
  const rank = (e: unknown) => {
    const i = wanted.findIndex((w) => isDeepStrictEqual(w, id(e)));
    return i === -1 ? wanted.length : i;
  };
  return list.map((e, i) => ({ e, i })).sort((a, b) => rank(a.e) - rank(b.e) || a.i - b.i).map((x) => x.e);
}

function stripDirectives(x: unknown): unknown {
  if (Array.isArray(x)) return x.map(stripDirectives);
  if (!isMap(x)) return x;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(x)) if (!k.startsWith('$')) out[k] = stripDirectives(v);
  return out;
}

// ---- JSON patch -------------------------------------------------------------

interface Op {
  op: string;
  path: string;
  from?: string;
  value?: Json;
}

// kube-apiserver answers a JSON patch it cannot apply with a generic 422 whose cause
// carries evanphx/json-patch's message (apimachinery NewGenericServerResponse).
const patchError = (message: string) =>
  new ApiError(422, 'the server rejected our request due to an error in our request', { details: { causes: [{ reason: 'UnexpectedServerResponse', message }] } });

function pointer(path: unknown): string[] {
  if (typeof path !== 'string') throw patchError('missing path');
  if (path === '') return [];
  if (!path.startsWith('/')) throw patchError(`invalid JSON pointer ${JSON.stringify(path)}`);
  return path.slice(1).split('/').map((s) => s.replaceAll('~1', '/').replaceAll('~0', '~'));
}

function container(doc: any, tokens: string[], path: string): { parent: any; key: string } {
  let node = doc;
  for (const t of tokens.slice(0, -1)) {
    node = node !== null && typeof node === 'object' ? (Array.isArray(node) ? node[Number(t)] : node[t]) : undefined;
    if (node === undefined || node === null) throw patchError(`doc is missing path: "${path}": missing value`);
  }
  if (node === null || typeof node !== 'object') throw patchError(`doc is missing path: "${path}": missing value`);
  return { parent: node, key: tokens[tokens.length - 1]! };
}

function valueAt(doc: any, path: string): any {
  let node = doc;
  for (const t of pointer(path)) {
    if (node === null || typeof node !== 'object') return undefined;
    node = Array.isArray(node) ? node[Number(t)] : node[t];
  }
  return node;
}

function index(arr: unknown[], key: string, forAdd: boolean): number {
  if (forAdd && key === '-') return arr.length;
  if (!/^(0|[1-9]\d*)$/.test(key)) throw patchError(`Unable to access invalid index: ${key}: invalid index referenced`);
  const i = Number(key);
  if (i > arr.length || (!forAdd && i >= arr.length)) throw patchError(`Unable to access invalid index: ${i}: invalid index referenced`);
  return i;
}

function add(doc: any, path: string, value: unknown): any {
  const tokens = pointer(path);
  if (tokens.length === 0) return structuredClone(value);
  const { parent, key } = container(doc, tokens, path);
  if (Array.isArray(parent)) parent.splice(index(parent, key, true), 0, structuredClone(value));
  else parent[key] = structuredClone(value);
  return doc;
}

function remove(doc: any, path: string): unknown {
  const { parent, key } = container(doc, pointer(path), path);
  if (Array.isArray(parent)) return parent.splice(index(parent, key, false), 1)[0];
  if (!(key in parent)) throw patchError(`Unable to remove nonexistent key: ${key}: missing value`);
  const old = parent[key];
  delete parent[key];
  return old;
}

export function jsonPatch(target: unknown, patch: unknown): unknown {
  if (!Array.isArray(patch)) throw new ApiError(400, 'json: cannot unmarshal object into Go value of type jsonpatch.Patch');
  let doc: any = structuredClone(target);
  for (const op of patch as Op[]) {
    switch (op?.op) {
      case 'add':
        doc = add(doc, op.path, op.value);
        break;
      case 'remove':
        remove(doc, op.path);
        break;
      case 'replace': {
        const { parent, key } = container(doc, pointer(op.path), op.path);
        if (!Array.isArray(parent) && !(key in parent)) throw patchError(`replace operation does not apply: doc is missing key: ${op.path}: missing value`);
        remove(doc, op.path);
        doc = add(doc, op.path, op.value);
        break;
      }
      case 'move':
        doc = add(doc, op.path, remove(doc, op.from ?? ''));
        break;
      case 'copy':
        doc = add(doc, op.path, valueAt(doc, op.from ?? ''));
        break;
      case 'test': {
        const actual = valueAt(doc, op.path);
        // evanphx/json-patch: a null value also tests for absence.
        const ok = actual === undefined ? op.value === null : isDeepStrictEqual(actual, op.value);
        if (!ok) throw patchError(`testing value ${op.path} failed: test failed`);
        break;
      }
      default:
        throw patchError(`Unexpected kind: ${String(op?.op)}`);
    }
  }
  return doc;
}
