// The patch formats the API server accepts: JSON merge patch (RFC 7386), JSON
// patch (RFC 6902, with `test`), and strategic merge patch, which for the
// objects served here behaves as a merge patch but for the directive
// `$deleteFromPrimitiveList/FIELD` (used on metadata.finalizers, whose patch
// strategy is merge): the listed values are removed from that list.

import { isDeepStrictEqual } from 'node:util';
import { ApiError } from './errors.ts';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

export const PATCH_TYPES = [
  'application/merge-patch+json',
  'application/json-patch+json',
  'application/strategic-merge-patch+json',
] as const;

export function applyPatch(target: unknown, patch: unknown, contentType: string): unknown {
  if (contentType === 'application/json-patch+json') return applyJsonPatch(target, patch);
  if (contentType === 'application/merge-patch+json' || contentType === 'application/strategic-merge-patch+json') {
    if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) throw new ApiError(400, 'merge patch must be a JSON object');
    return contentType === 'application/strategic-merge-patch+json' ? strategicMergePatch(target, patch) : mergePatch(target, patch);
  }
  throw new ApiError(415, `the body of the request was in an unknown format - accepted media types include: ${PATCH_TYPES.join(', ')}, application/apply-patch+yaml`);
}

export function mergePatch(target: unknown, patch: unknown): unknown {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return structuredClone(patch);
  const out: Record<string, unknown> = target !== null && typeof target === 'object' && !Array.isArray(target) ? { ...(target as object) } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key];
    else out[key] = mergePatch(out[key], value);
  }
  return out;
}

const DELETE_FROM_PRIMITIVE_LIST = '$deleteFromPrimitiveList/';

function strategicMergePatch(target: unknown, patch: unknown): unknown {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return structuredClone(patch);
  const out: Record<string, unknown> = target !== null && typeof target === 'object' && !Array.isArray(target) ? { ...(target as object) } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (key.startsWith(DELETE_FROM_PRIMITIVE_LIST)) {
      const field = key.slice(DELETE_FROM_PRIMITIVE_LIST.length);
      if (!Array.isArray(value)) throw new ApiError(400, `${key}: expected a list`);
      if (Array.isArray(out[field])) out[field] = (out[field] as unknown[]).filter((v) => !value.includes(v as Json));
    } else if (value === null) delete out[key];
    else out[key] = strategicMergePatch(out[key], value);
  }
  return out;
}

interface Op {
  op: string;
  path: string;
  from?: string;
  value?: Json;
}

function pointer(path: string): string[] {
  if (path === '') return [];
  if (!path.startsWith('/')) throw patchError(`invalid JSON pointer ${JSON.stringify(path)}`);
  return path
    .slice(1)
    .split('/')
    .map((s) => s.replaceAll('~1', '/').replaceAll('~0', '~'));
}

// The API server answers a JSON patch that cannot be applied (a failed `test` included) with 422.
const patchError = (message: string) => new ApiError(422, message, { reason: 'Invalid' });

function parentOf(doc: any, tokens: string[], path: string): { parent: any; key: string } {
  let node = doc;
  for (const t of tokens.slice(0, -1)) {
    if (node === null || typeof node !== 'object') throw patchError(`doc is missing path: "${path}": missing value`);
    node = Array.isArray(node) ? node[Number(t)] : node[t];
    if (node === undefined) throw patchError(`doc is missing path: "${path}": missing value`);
  }
  if (node === null || typeof node !== 'object') throw patchError(`doc is missing path: "${path}": missing value`);
  return { parent: node, key: tokens[tokens.length - 1]! };
}

function get(doc: any, path: string): any {
  let node = doc;
  for (const t of pointer(path)) {
    if (node === null || typeof node !== 'object') return undefined;
    node = Array.isArray(node) ? node[Number(t)] : node[t];
  }
  return node;
}

function arrayIndex(arr: unknown[], key: string, path: string, forAdd: boolean): number {
  if (forAdd && key === '-') return arr.length;
  if (!/^(0|[1-9]\d*)$/.test(key)) throw patchError(`invalid array index ${JSON.stringify(key)} in ${path}`);
  const i = Number(key);
  if (i > arr.length || (!forAdd && i >= arr.length)) throw patchError(`Unable to access invalid index: ${i}: invalid index referenced`);
  return i;
}

function add(doc: any, path: string, value: unknown): any {
  const tokens = pointer(path);
  if (tokens.length === 0) return structuredClone(value);
  const { parent, key } = parentOf(doc, tokens, path);
  if (Array.isArray(parent)) parent.splice(arrayIndex(parent, key, path, true), 0, structuredClone(value));
  else parent[key] = structuredClone(value);
  return doc;
}

function remove(doc: any, path: string): unknown {
  const tokens = pointer(path);
  const { parent, key } = parentOf(doc, tokens, path);
  if (Array.isArray(parent)) return parent.splice(arrayIndex(parent, key, path, false), 1)[0];
  if (!(key in parent)) throw patchError(`Unable to remove nonexistent key: ${key}: missing value`);
  const old = parent[key];
  delete parent[key];
  return old;
}

export function applyJsonPatch(target: unknown, patch: unknown): unknown {
  if (!Array.isArray(patch)) throw new ApiError(400, 'json patch must be a JSON array of operations');
  let doc: any = structuredClone(target);
  for (const op of patch as Op[]) {
    switch (op?.op) {
      case 'add':
        doc = add(doc, op.path, op.value);
        break;
      case 'remove':
        remove(doc, op.path);
        break;
      case 'replace':
        remove(doc, op.path);
        doc = add(doc, op.path, op.value);
        break;
      case 'move': {
        const value = remove(doc, op.from ?? '');
        doc = add(doc, op.path, value);
        break;
      }
      case 'copy':
        doc = add(doc, op.path, get(doc, op.from ?? ''));
        break;
      case 'test': {
        const actual = get(doc, op.path);
        // As evanphx/json-patch: a null value tests for absence too.
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
