// The EvictionRequest responder (KEP-4563, lifecycle.k8s.io/v1alpha1, the
// EvictionRequestAPI gate, alpha in 1.37 and 1.38). A requester creates an
// EvictionRequest for a pod; the evictionrequest-controller turns it into an
// Eviction whose status.targetResponders come from the Pod's
// spec.evictionResponders (plus imperative-eviction.k8s.io/evictor, priority
// 100, which calls the pod's eviction subresource last) and makes them Active
// one at a time, highest priority first. A Pod that names EVICTION_RESPONDER
// there gets its drain started when drainguard's turn comes, before any
// SIGTERM: drainguard heartbeats its status.responders[] entry while the drain
// runs and sets completionTime once it has ended, which hands the eviction on
// to the next responder. Loaded only in a pod, once its operator runs.
//
// On a cluster without the API (discovery 404), or a Pod that does not name
// the responder, nothing is watched and one debug line says why.

import type { Clock } from '../clock.ts';
import type { Logger } from '../log/logger.ts';
import type { KubeClient } from './client.ts';
import { isNotFound, isStatus } from './errors.ts';
import { type KubeObject, type ResourceRef, RESOURCES, pathOf } from './objects.ts';

/** The responder name a Pod lists in spec.evictionResponders for drainguard to drain at an eviction request. */
export const EVICTION_RESPONDER = 'drainguard.dev/drain';

const EVICTIONS: ResourceRef = {
  group: 'lifecycle.k8s.io',
  version: 'v1alpha1',
  resource: 'evictions',
  kind: 'Eviction',
  namespaced: true,
};

/**
 * Between heartbeats while the drain runs: the API asks for no more than one each 20 s, and
 * passes the eviction on to the next responder after 20 minutes without one.
 */
export const HEARTBEAT_MS = 60_000;
/** A watch's length before it is opened again; after a failure, the wait before the next list. */
const WATCH_SECONDS = 300;
const RETRY_MS = 5_000;

/** What the responder needs of a drain: its deadline (the expected completion) and its end. */
export interface EvictionDrain {
  readonly deadline: number;
  readonly ended: Promise<{ readonly outcome: string }>;
}

export interface EvictionResponderUse {
  readonly client: KubeClient;
  /** This pod; without its UID (DRAINGUARD_POD_UID), the Pod's own is read. */
  readonly pod: { readonly name: string; readonly namespace: string; readonly uid?: string };
  readonly logger: Logger;
  readonly clock: Clock;
  /** Starts drainguard's drain, or joins the one under way. */
  readonly startDrain: () => EvictionDrain;
  /** Ends the watch and the heartbeats (the operator has exited). */
  readonly signal: AbortSignal;
}

interface ResponderStatus {
  readonly name?: string;
  readonly startTime?: string;
  readonly completionTime?: string;
}

interface Eviction extends KubeObject {
  readonly spec?: { readonly target?: { readonly pod?: { readonly name?: string; readonly uid?: string } } };
  readonly status?: {
    readonly targetResponders?: readonly { readonly name?: string; readonly state?: string }[];
    readonly responders?: readonly ResponderStatus[];
    readonly requesters?: readonly { readonly name?: string; readonly intent?: string }[];
  };
}

/** Why drainguard does not respond here (no API, the Pod does not name the responder), else the Pod's UID. */
async function podToRespondFor(
  client: KubeClient,
  pod: EvictionResponderUse['pod'],
  signal: AbortSignal,
): Promise<{ readonly not: string } | { readonly uid: string }> {
  try {
    const list = await client.request<{ resources?: { name?: string }[] }>('GET', '/apis/lifecycle.k8s.io/v1alpha1', { signal });
    if (!list.resources?.some((r) => r.name === 'evictions/status')) return { not: 'lifecycle.k8s.io/v1alpha1 serves no evictions/status' };
  } catch (err) {
    if (isNotFound(err)) return { not: 'the API server serves no lifecycle.k8s.io/v1alpha1 (the EvictionRequestAPI gate is off)' };
    throw err;
  }
  const current = await client.get<KubeObject & { spec?: { evictionResponders?: { name?: string }[] } }>(
    { ...RESOURCES.pod, name: pod.name, namespace: pod.namespace },
    { signal },
  );
  if (!current.spec?.evictionResponders?.some((r) => r.name === EVICTION_RESPONDER))
    return { not: `the Pod's spec.evictionResponders does not name ${EVICTION_RESPONDER}` };
  return { uid: pod.uid ?? current.metadata.uid ?? '' };
}

/** A metav1.Time: whole seconds, never before `floor` (the responder's startTime, which the API requires it to follow). */
function apiTime(ms: number, floor?: string): string {
  const at = Math.max(Math.floor(ms / 1000) * 1000, floor ? Date.parse(floor) : 0);
  return new Date(at).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** Responds to this pod's Evictions until `signal` aborts; never throws. */
export async function respondToEvictions(use: EvictionResponderUse): Promise<void> {
  const { client, pod, logger, signal } = use;
  let uid: string;
  try {
    const found = await podToRespondFor(client, pod, signal);
    if ('not' in found) {
      logger.debug('not responding to eviction requests', { reason: found.not });
      return;
    }
    uid = found.uid;
  } catch (err) {
    if (!signal.aborted) logger.warn('cannot tell whether to respond to eviction requests: not responding', { error: err });
    return;
  }
  logger.info('responding to eviction requests', { responder: EVICTION_RESPONDER });
  await watchEvictions(use, uid);
}

/** Lists and watches the namespace's Evictions that name the responder (the controller labels them so), and answers this pod's. */
async function watchEvictions(use: EvictionResponderUse, uid: string): Promise<void> {
  const { client, pod, logger, clock, signal } = use;
  const answered = new Map<string, AbortController>();
  const consider = (eviction: Eviction) => {
    if (eviction.spec?.target?.pod?.uid !== uid) return;
    const key = eviction.metadata.uid ?? eviction.metadata.name;
    const state = eviction.status?.targetResponders?.find((r) => r.name === EVICTION_RESPONDER)?.state;
    const own = eviction.status?.responders?.find((r) => r.name === EVICTION_RESPONDER);
    const under = answered.get(key);
    if (under && state !== 'Active' && !under.signal.aborted) {
      // Withdrawn or passed on: the entry is no longer drainguard's to write. A drain cannot be undone: it goes on.
      logger.info('eviction no longer waits on drainguard: heartbeats stopped', { eviction: eviction.metadata.name, state });
      under.abort();
    }
    if (under || state !== 'Active' || !own?.startTime || own.completionTime) return;
    const done = new AbortController();
    answered.set(key, done);
    // Once answered (completed, or given up), its later states (Completed) are not a withdrawal.
    void respond(use, eviction, own.startTime, AbortSignal.any([signal, done.signal])).finally(() => done.abort());
  };
  let resourceVersion: string | undefined;
  const query = { labelSelector: EVICTION_RESPONDER };
  while (!signal.aborted) {
    try {
      if (resourceVersion === undefined) {
        const list = await client.list<Eviction>(EVICTIONS, pod.namespace, { query, signal });
        list.items.forEach(consider);
        resourceVersion = list.metadata?.resourceVersion;
      }
      await client.watch<Eviction>(
        EVICTIONS,
        pod.namespace,
        { ...query, resourceVersion, allowWatchBookmarks: 'true', timeoutSeconds: String(WATCH_SECONDS) },
        (event) => {
          resourceVersion = event.object.metadata.resourceVersion ?? resourceVersion;
          if (event.type === 'ADDED' || event.type === 'MODIFIED') consider(event.object);
        },
        { signal },
      );
    } catch (err) {
      if (signal.aborted) return;
      if (isStatus(err, 403)) {
        logger.warn('may not watch Evictions: not responding to eviction requests', {
          error: err,
          fix: `grant list and watch on evictions.lifecycle.k8s.io, and patch on evictions/status, in namespace ${pod.namespace}`,
        });
        return;
      }
      // 410 Gone: the resourceVersion is too old. Anything else: listed again after a pause.
      if (!isStatus(err, 410)) {
        logger.debug('watch of Evictions failed: listing again', { error: err });
        await clock.sleep(RETRY_MS, signal).catch(() => {});
      }
      resourceVersion = undefined;
    }
  }
}

/** drainguard's turn on one Eviction: the drain, heartbeats while it runs, then completionTime. */
async function respond(use: EvictionResponderUse, eviction: Eviction, startTime: string, signal: AbortSignal): Promise<void> {
  const { client, pod, logger, clock } = use;
  const name = eviction.metadata.name;
  const path = `${pathOf(EVICTIONS, pod.namespace, name)}/status`;
  const report = async (fields: Record<string, string>) => {
    const body = { status: { responders: [{ name: EVICTION_RESPONDER, ...fields }] } };
    await client.request('PATCH', path, { body, contentType: 'application/strategic-merge-patch+json', what: `eviction/${name}/status` });
  };
  const ticket = use.startDrain();
  logger.info('eviction requested: draining', {
    eviction: name,
    requesters: (eviction.status?.requesters ?? []).filter((r) => r.intent === 'Eviction').map((r) => r.name),
    deadline: new Date(ticket.deadline).toISOString(),
  });
  let beats = 0;
  const beat = async (extra: Record<string, string> = {}) => {
    try {
      await report({ heartbeatTime: apiTime(clock.now(), startTime), ...extra });
      beats++;
    } catch (err) {
      logger.warn('cannot report to the Eviction', { eviction: name, error: err });
    }
  };
  // A drain joined after its deadline (a preStop's, over) expects nothing: the API refuses a past expectedCompletionTime.
  const expected: Record<string, string> =
    ticket.deadline > clock.now() ? { expectedCompletionTime: apiTime(ticket.deadline, startTime) } : {};
  await beat({ ...expected, message: 'draining the operator' });
  const ended = ticket.ended.then((r) => r.outcome);
  for (;;) {
    const tick = clock.sleep(HEARTBEAT_MS, signal).then(
      () => undefined,
      () => 'aborted',
    );
    const outcome = await Promise.race([ended, tick]);
    if (outcome === 'aborted') return;
    if (outcome !== undefined) {
      const at = apiTime(clock.now(), startTime);
      try {
        await report({ heartbeatTime: at, completionTime: at, message: `operator drained (${outcome})` });
        logger.info('eviction: drain over, completion reported', { eviction: name, outcome, heartbeats: beats });
      } catch (err) {
        logger.warn('cannot report the completion to the Eviction', { eviction: name, error: err });
      }
      return;
    }
    await beat();
  }
}
