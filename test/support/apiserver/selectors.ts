// Label and field selectors of list and watch requests. Field selectors are
// honoured only on the fields each type supports, as in kube-apiserver; any
// other field is a 400 naming it.

import { ApiError } from './errors.ts';
import type { ResourceType } from './resources.ts';
import type { KubeObject } from './store.ts';

export type Selector = (obj: KubeObject) => boolean;
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

function requirement(text: string): Requirement {
  let m = /^(\S+?)\s+(in|notin)\s+\(([^)]*)\)$/.exec(text);
  if (m) {
    const [, key, op, list] = m;
    const values = list!.split(',').map((v) => v.trim());
    return op === 'in' ? (l) => key! in l && values.includes(l[key!]!) : (l) => !(key! in l) || !values.includes(l[key!]!);
  }
  m = /^([^\s!=]+)\s*(==|=|!=)\s*([^\s,]*)$/.exec(text);
  if (m) {
    const [, key, op, value] = m;
    return op === '!=' ? (l) => l[key!] !== value : (l) => l[key!] === value;
  }
  m = /^(!?)([^\s!=(),]+)$/.exec(text);
  if (m) return m[1] ? (l) => !(m![2]! in l) : (l) => m![2]! in l;
  throw new ApiError(400, `unable to parse requirement: found '${text}', expected: identifier`);
}

export function labelSelector(text: string | undefined): Selector {
  if (!text) return () => true;
  const reqs = splitTopLevel(text).map(requirement);
  return (obj) => reqs.every((r) => r(obj.metadata.labels ?? {}));
}

/** The field selectors each type supports beyond metadata.name and metadata.namespace. */
const FIELDS: Record<string, readonly string[]> = {
  '/pods': ['spec.nodeName', 'spec.restartPolicy', 'spec.schedulerName', 'spec.serviceAccountName', 'spec.hostNetwork', 'status.phase', 'status.podIP', 'status.nominatedNodeName'],
  events: ['involvedObject.kind', 'involvedObject.namespace', 'involvedObject.name', 'involvedObject.uid', 'involvedObject.apiVersion', 'involvedObject.resourceVersion', 'involvedObject.fieldPath', 'reason', 'reportingComponent', 'source', 'type'],
  '/secrets': ['type'],
  '/namespaces': ['status.phase'],
  '/nodes': ['spec.unschedulable'],
  '/services': ['spec.clusterIP', 'spec.type'],
  'batch/jobs': ['status.successful'],
  'apps/replicasets': ['status.replicas'],
};

const fieldValue = (obj: KubeObject, path: string): string => {
  // The source field of an Event is its source.component.
  const actual = path === 'source' ? obj.source?.component : path.split('.').reduce<any>((o, k) => (o == null ? undefined : o[k]), obj);
  return actual === undefined || actual === null ? '' : String(actual);
};

/** A field selector; an unsupported field is a 400 naming it (kubectl adds "Unable to find ..." itself). */
export function fieldSelector(text: string | undefined, type: ResourceType): Selector {
  if (!text) return () => true;
  const supported = ['metadata.name', 'metadata.namespace', ...(FIELDS[type.storage] ?? [])];
  const reqs = splitTopLevel(text).map((part) => {
    const m = /^([^=!\s]+)\s*(==|=|!=)\s*(.*)$/.exec(part);
    if (!m) throw new ApiError(400, `invalid selector: '${text}'; can't understand '${part}'`);
    const [, path, op, value] = m;
    if (!supported.includes(path!)) throw new ApiError(400, `field label not supported: ${path}`);
    return (obj: KubeObject) => (op === '!=' ? fieldValue(obj, path!) !== value : fieldValue(obj, path!) === value);
  });
  return (obj) => reqs.every((r) => r(obj));
}

/** A metav1.LabelSelector (matchLabels and matchExpressions) against an object's labels; an empty one selects everything. */
export function matchesLabelSelector(selector: { matchLabels?: Record<string, string>; matchExpressions?: { key: string; operator: string; values?: string[] }[] }, labels: Record<string, string>): boolean {
  const byLabel = Object.entries(selector.matchLabels ?? {}).every(([k, v]) => labels[k] === v);
  return byLabel && (selector.matchExpressions ?? []).every(({ key, operator, values = [] }) => {
    switch (operator) {
      case 'In':
        return key in labels && values.includes(labels[key]!);
      case 'NotIn':
        return !(key in labels) || !values.includes(labels[key]!);
      case 'Exists':
        return key in labels;
      case 'DoesNotExist':
        return !(key in labels);
      default:
        return false;
    }
  });
}
