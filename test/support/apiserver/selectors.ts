// Label and field selectors, as kubectl sends them.

import { ApiError } from './errors.ts';
import type { KubeObject } from './store.ts';

type Requirement = (labels: Record<string, string>) => boolean;

function splitTopLevel(text: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let current = '';
  for (const ch of text) {
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (ch === ',' && depth === 0) {
      parts.push(current);
      current = '';
    } else current += ch;
  }
  parts.push(current);
  return parts.map((p) => p.trim()).filter(Boolean);
}

function parseRequirement(text: string): Requirement {
  let m = /^([^\s!=]+)\s+(in|notin)\s+\(([^)]*)\)$/.exec(text);
  if (m) {
    const [, key, op, list] = m;
    const values = list!.split(',').map((v) => v.trim());
    return op === 'in' ? (l) => key! in l && values.includes(l[key!]!) : (l) => !(key! in l) || !values.includes(l[key!]!);
  }
  m = /^([^\s!=]+)\s*(==|=|!=)\s*([^\s]*)$/.exec(text);
  if (m) {
    const [, key, op, value] = m;
    return op === '!=' ? (l) => l[key!] !== value : (l) => l[key!] === value;
  }
  m = /^(!?)([^\s!=(),]+)$/.exec(text);
  if (m) return m[1] ? (l) => !(m![2]! in l) : (l) => m![2]! in l;
  throw new ApiError(400, `unable to parse requirement: ${JSON.stringify(text)}`);
}

export function labelSelector(text: string | null): (obj: KubeObject) => boolean {
  if (!text) return () => true;
  const reqs = splitTopLevel(text).map(parseRequirement);
  return (obj) => reqs.every((r) => r(obj.metadata.labels ?? {}));
}

export function fieldSelector(text: string | null): (obj: KubeObject) => boolean {
  if (!text) return () => true;
  const reqs = splitTopLevel(text).map((part) => {
    const m = /^([\w.]+)\s*(==|=|!=)\s*(.*)$/.exec(part);
    if (!m) throw new ApiError(400, `invalid field selector: ${JSON.stringify(part)}`);
    const [, path, op, value] = m;
    return (obj: KubeObject) => {
      const actual = path!.split('.').reduce<any>((o, k) => (o == null ? undefined : o[k]), obj);
      const text = actual === undefined || actual === null ? '' : String(actual);
      return op === '!=' ? text !== value : text === value;
    };
  });
  return (obj) => reqs.every((r) => r(obj));
}
