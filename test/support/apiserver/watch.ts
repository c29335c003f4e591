// Watches as kube-apiserver's watch cache serves them: the synthetic ADDED
// events of the current state (no resourceVersion, or sendInitialEvents with
// its closing bookmark), or the changes after a resourceVersion (410 Expired
// when it is older than the history); an object that starts or stops
// matching the selectors is ADDED or DELETED for that watch; bookmarks.

import type { ServerResponse } from 'node:http';
import { ApiError } from './errors.ts';
import type { Registry } from './registry.ts';
import { type ResourceType, apiVersionOf } from './resources.ts';
import { type Selector, fieldSelector, labelSelector } from './selectors.ts';
import type { Change, KubeObject } from './store.ts';

const BOOKMARK_MS = 30_000;

export interface WatchQuery {
  readonly resourceVersion?: string;
  readonly resourceVersionMatch?: string;
  readonly allowWatchBookmarks?: string;
  readonly sendInitialEvents?: string;
  readonly timeoutSeconds?: string;
  readonly labelSelector?: string;
  readonly fieldSelector?: string;
}

/** Streams the watch on `res` until the client goes, `timeoutSeconds` pass, or the server stops (the response is destroyed). */
export function serveWatch(registry: Registry, type: ResourceType, namespace: string | undefined, query: WatchQuery, res: ServerResponse): void {
  const byLabel = labelSelector(query.labelSelector);
  const byField = fieldSelector(query.fieldSelector, type);
  const matches: Selector = (o) => (namespace === undefined || o.metadata.namespace === namespace) && byLabel(o) && byField(o);
  const bookmarks = query.allowWatchBookmarks === 'true' || query.allowWatchBookmarks === '1';
  const initial = query.sendInitialEvents === 'true';
  if (initial && (query.resourceVersionMatch !== 'NotOlderThan' || !bookmarks)) {
    throw new ApiError(422, 'ListOptions.meta.k8s.io "" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is allowed only with allowWatchBookmarks=true and resourceVersionMatch=NotOlderThan');
  }
  const store = registry.store;
  const rv = query.resourceVersion;
  res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-cache, private', 'transfer-encoding': 'chunked' });
  const send = (type: string, object: unknown) => {
    if (!res.destroyed) res.write(`${JSON.stringify({ type, object })}\n`);
  };
  const view = (o: KubeObject) => registry.served(type, o);
  const bookmark = (extra: Record<string, string> = {}) =>
    send('BOOKMARK', { kind: type.kind, apiVersion: apiVersionOf(type), metadata: { resourceVersion: String(store.rv), ...(Object.keys(extra).length > 0 && { annotations: extra }) } });

  const onChange = (c: Change) => {
    if (c.storage !== type.storage) return;
    for (const [kind, object] of filtered(c, matches)) send(kind, view(object));
  };
  if (!rv || rv === '0' || initial) {
    for (const o of store.list(type.storage, namespace)) if (matches(o)) send('ADDED', view(o));
    if (initial) bookmark({ 'k8s.io/initial-events-end': 'true' });
  } else {
    const from = Number(rv);
    const missed = Number.isFinite(from) ? store.since(from) : undefined;
    if (!missed) {
      send('ERROR', { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: `too old resource version: ${rv} (${store.oldestRv})`, reason: 'Expired', code: 410 });
      res.end();
      return;
    }
    for (const c of missed) onChange(c);
  }
  store.on('change', onChange);
  const timers: NodeJS.Timeout[] = [];
  if (bookmarks) timers.push(setInterval(() => bookmark(), BOOKMARK_MS));
  if (query.timeoutSeconds) timers.push(setTimeout(() => res.end(), Number(query.timeoutSeconds) * 1000));
  const stop = () => {
    store.off('change', onChange);
    for (const t of timers) clearTimeout(t);
  };
  res.on('close', stop);
}

/** What one change is for a watch with these selectors (the watch cache's convertToWatchEvent). */
function filtered(c: Change, matches: Selector): [string, KubeObject][] {
  const now = c.type !== 'DELETED' && matches(c.object);
  const before = c.previous !== undefined && matches(c.previous);
  if (now && !before) return [['ADDED', c.object]];
  if (now && before) return [['MODIFIED', c.object]];
  if (!now && before) return [['DELETED', { ...c.previous!, metadata: { ...c.previous!.metadata, resourceVersion: String(c.rv) } }]];
  return [];
}
