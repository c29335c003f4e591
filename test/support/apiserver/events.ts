// core/v1 and events.k8s.io/v1 Events are one resource in two shapes
// (pkg/apis/events/v1 conversion): stored in the core shape, served in
// whichever the request asked for.

import type { KubeObject } from './store.ts';

/** [core field, events.k8s.io field] */
const RENAMED: [string, string][] = [
  ['involvedObject', 'regarding'],
  ['message', 'note'],
  ['source', 'deprecatedSource'],
  ['firstTimestamp', 'deprecatedFirstTimestamp'],
  ['lastTimestamp', 'deprecatedLastTimestamp'],
  ['count', 'deprecatedCount'],
  ['reportingComponent', 'reportingController'],
];

function rename(obj: KubeObject, pairs: [string, string][]): KubeObject {
  const out: KubeObject = { ...obj, metadata: obj.metadata };
  for (const [from, to] of pairs) {
    delete out[from];
    if (obj[from] !== undefined) out[to] = obj[from];
  }
  return out;
}

export const toEventsV1 = (core: KubeObject): KubeObject => rename(core, RENAMED);
export const fromEventsV1 = (v1: KubeObject): KubeObject => rename(v1, RENAMED.map(([a, b]) => [b, a]));
