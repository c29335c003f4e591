// `drainguard predelete`: delete custom resources while the operator still runs
// and wait until its finalizers have let them go, stage by stage.

import { type Clock, systemClock } from '../clock.ts';
import { DrainguardError } from '../errors.ts';
import { isNotFound } from '../kube/errors.ts';
import type { KubeClient } from '../kube/client.ts';
import { type KubeObject, type ObjectRef, RESOURCES } from '../kube/objects.ts';
import type { Target } from './resources.ts';

export type Propagation = 'Background' | 'Foreground' | 'Orphan';

export interface PredeleteOptions {
  readonly client: KubeClient;
  /** Each stage is deleted, and waited for, before the next one starts. */
  readonly stages: readonly (readonly Target[])[];
  /** For namespaced types; undefined with allNamespaces. */
  readonly namespace?: string;
  readonly allNamespaces?: boolean;
  readonly propagation: Propagation;
  readonly timeoutMs: number;
  /** Pods that must be ready (the operator) before anything is deleted. */
  readonly requireReady?: { readonly namespace: string; readonly selector: string };
  readonly pollMs?: number;
  /** What the timeout and the polls go by; the wall clock by default. */
  readonly clock?: Clock;
  /** One line of progress for people (the Job's log). */
  readonly say: (line: string) => void;
}

export interface Remaining {
  readonly name: string;
  readonly finalizers: readonly string[];
  readonly deleting: boolean;
}

/** What stopped the run before everything was gone. */
export class PredeleteError extends DrainguardError {
  override name = 'PredeleteError';
  readonly remaining: readonly Remaining[];
  constructor(
    code: 'DG_PREDELETE_NOT_READY' | 'DG_PREDELETE_NAMESPACE' | 'DG_PREDELETE_TIMEOUT',
    message: string,
    remaining: readonly Remaining[] = [],
  ) {
    super(code, message);
    this.remaining = remaining;
  }
}

interface Tracked {
  readonly ref: ObjectRef;
  readonly label: string;
  uid?: string;
  lastState?: string;
}

const clockOf = (options: PredeleteOptions): Clock => options.clock ?? systemClock;

export async function predelete(options: PredeleteOptions): Promise<void> {
  const deadline = clockOf(options).now() + options.timeoutMs;
  if (options.requireReady) await requireReady(options, deadline);
  for (const [index, stage] of options.stages.entries()) {
    const prefix = options.stages.length > 1 ? `stage ${index + 1}/${options.stages.length}: ` : '';
    const objects = (await Promise.all(stage.map((t) => expand(options, t, deadline)))).flat();
    if (objects.length === 0) {
      options.say(`${prefix}nothing to delete (${stage.map((t) => t.text).join(', ')})`);
      continue;
    }
    await Promise.all(objects.map((o) => remove(options, o, deadline, prefix)));
    await waitGone(options, objects, deadline, prefix);
  }
  options.say('all gone');
}

async function requireReady(options: PredeleteOptions, deadline: number): Promise<void> {
  const { namespace, selector } = options.requireReady!;
  const pods = await options.client.list(RESOURCES.pod, namespace, { query: { labelSelector: selector }, deadline });
  const ready = pods.items.filter(
    (p) =>
      !p.metadata.deletionTimestamp && ((p.status as any)?.conditions ?? []).some((c: any) => c.type === 'Ready' && c.status === 'True'),
  );
  if (ready.length === 0) {
    throw new PredeleteError(
      'DG_PREDELETE_NOT_READY',
      `no ready pod matches ${JSON.stringify(selector)} in namespace ${namespace}: ` +
        'without the operator nothing would remove the finalizers, so nothing was deleted',
    );
  }
  options.say(`operator ready: ${ready.map((p) => p.metadata.name).join(', ')}`);
}

async function expand(options: PredeleteOptions, target: Target, deadline: number): Promise<Tracked[]> {
  const r = target.resource;
  const namespace = r.namespaced ? (options.allNamespaces ? undefined : options.namespace) : undefined;
  const label = (o: { name: string; namespace?: string }) =>
    `${r.kind.toLowerCase()}.${r.group || 'core'}/${o.name}${r.namespaced && o.namespace ? ` (namespace ${o.namespace})` : ''}`;
  if (target.name !== undefined) {
    if (r.namespaced && namespace === undefined)
      throw new PredeleteError('DG_PREDELETE_NAMESPACE', `${target.text}: a namespaced object needs -n NAMESPACE, not --all-namespaces`);
    return [{ ref: { ...r, namespace, name: target.name }, label: label({ name: target.name, namespace }) }];
  }
  const list = await options.client.list(r, namespace, { deadline });
  return list.items.map((o: KubeObject) => ({
    ref: { ...r, namespace: o.metadata.namespace, name: o.metadata.name },
    label: label(o.metadata),
    uid: o.metadata.uid,
  }));
}

async function remove(options: PredeleteOptions, o: Tracked, deadline: number, prefix: string): Promise<void> {
  try {
    const result = (await options.client.delete(o.ref, {
      body: { kind: 'DeleteOptions', apiVersion: 'v1', propagationPolicy: options.propagation },
      deadline,
    })) as KubeObject | undefined;
    o.uid ??= result?.metadata?.uid;
    options.say(`${prefix}${o.label} deleted`);
  } catch (err) {
    if (!isNotFound(err)) throw err;
    options.say(`${prefix}${o.label} already gone`);
  }
}

async function waitGone(options: PredeleteOptions, objects: Tracked[], deadline: number, prefix: string): Promise<void> {
  const clock = clockOf(options);
  const started = clock.now();
  let left = objects;
  for (;;) {
    const states = await Promise.all(left.map((o) => state(options, o, deadline)));
    const still: Tracked[] = [];
    states.forEach((s, i) => {
      const o = left[i]!;
      if (s === undefined) {
        options.say(`${prefix}${o.label} gone after ${((clock.now() - started) / 1000).toFixed(1)}s`);
        return;
      }
      const line = s.finalizers.length > 0 ? `held by finalizers ${s.finalizers.join(', ')}` : 'being deleted';
      if (line !== o.lastState) options.say(`${prefix}waiting for ${o.label}: ${line}`);
      o.lastState = line;
      still.push(o);
    });
    left = still;
    if (left.length === 0) return;
    if (clock.now() >= deadline) {
      const remaining = await Promise.all(
        left.map(async (o) => ({
          name: o.label,
          ...((await state(options, o, Infinity).catch(() => undefined)) ?? { finalizers: [], deleting: true }),
        })),
      );
      throw new PredeleteError(
        'DG_PREDELETE_TIMEOUT',
        `timed out with ${left.length} left:\n` +
          remaining
            .map((r) => `  ${r.name}: ${r.finalizers.length ? `finalizers ${r.finalizers.join(', ')}` : 'no finalizers'}`)
            .join('\n'),
        remaining,
      );
    }
    await clock.sleep(Math.min(options.pollMs ?? 250, Math.max(0, deadline - clock.now())));
  }
}

/** The object's state, or undefined once it is gone (or replaced by a new object of the same name). */
async function state(options: PredeleteOptions, o: Tracked, deadline: number): Promise<Omit<Remaining, 'name'> | undefined> {
  try {
    const obj = await options.client.get(o.ref, {
      deadline: Number.isFinite(deadline) ? Math.max(deadline, clockOf(options).now() + 5000) : undefined,
    });
    if (o.uid !== undefined && obj.metadata.uid !== o.uid) return undefined;
    return { finalizers: obj.metadata.finalizers ?? [], deleting: obj.metadata.deletionTimestamp !== undefined };
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}
