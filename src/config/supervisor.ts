// The resolved configuration of the supervising commands (run, sidecar):
// every default filled in and every rule that spans settings checked up front.

import type { PodRef } from '../kube/pod.ts';
import { checkFit, defaultDrainTimeout } from './grace-rule.ts';
import { type PrestopToken, resolvePrestopToken } from './prestop-token.ts';
import { ConfigError } from '../errors.ts';
import { type GuardTarget, parseGuardList } from './guard-list.ts';
import { type KeyOf, type OptionValues, keysOf } from './options.ts';
import { type ParsedArgs, type Settings, settings, sourceOf } from './load.ts';

export type SignalTarget = OptionValues['signalTarget'];

/** The supervisors' options that resolveSupervisorConfig resolves itself (below); it takes every other one as given. */
const RESOLVED = [
  'drainTimeoutMs',
  'guard',
  'podName',
  'podNamespace',
  'podUid',
  'operatorContainer',
  'prestopToken',
  'prestopTokenFile',
] as const;

type AsGiven = Exclude<KeyOf<'run' | 'sidecar'>, (typeof RESOLVED)[number]>;

/** The options of run and sidecar (the options table says which) taken as they are given, else as the table defaults them. */
const AS_GIVEN = keysOf('run', 'sidecar').filter((key): key is AsGiven => !(RESOLVED as readonly string[]).includes(key));

/**
 * The options taken as given (socket is undefined in wrap mode without --socket: a
 * fresh private path is made at start) and what is resolved from the others.
 */
export interface SupervisorConfig extends Settings<AsGiven[]> {
  /** Where the socket path came from (--socket or DRAINGUARD_SOCKET), for messages about it. */
  readonly socketSource: string;
  /** Where the grace period came from (--grace-period, DRAINGUARD_GRACE_PERIOD, or the default), for the log. */
  readonly gracePeriodSource: string;
  /** As given, else what the grace period leaves after the stop timeout (shutdown.ts). */
  readonly drainTimeoutMs: number;
  /** False when the drain timeout was derived from the grace period (it may then be re-derived from the Pod). */
  readonly drainTimeoutExplicit: boolean;
  readonly guard: readonly GuardTarget[];
  readonly pod: Partial<PodRef>;
  /** Sidecar mode: the operator's containers, whose termination the API must report before the release. */
  readonly operatorContainers: readonly string[];
  /** Sidecar mode: turns on the httpGet preStop route. */
  readonly prestopToken?: PrestopToken;
}

export function resolveSupervisorConfig(args: ParsedArgs): SupervisorConfig {
  const v = args.values;
  const src = (key: keyof OptionValues) => sourceOf(args, key);
  const given = settings(args, AS_GIVEN);
  const { gracePeriodMs, stopTimeoutMs, hold } = given;
  const drainTimeoutExplicit = v.drainTimeoutMs !== undefined;
  const misfit = checkFit(
    { gracePeriodMs, stopTimeoutMs, drainTimeoutMs: v.drainTimeoutMs },
    { stop: src('stopTimeoutMs'), drain: src('drainTimeoutMs') },
  );
  if (misfit !== undefined) throw new ConfigError('DG_CONFIG_TIMEOUTS', misfit);
  const drainTimeoutMs = v.drainTimeoutMs ?? defaultDrainTimeout(gracePeriodMs, stopTimeoutMs);

  const guard = v.guard === undefined ? [] : parseGuardList(v.guard, src('guard'));
  const pod: Partial<PodRef> = Object.freeze({ name: v.podName, namespace: v.podNamespace, uid: v.podUid });
  // The guard and the hold both write the pod's holder finalizer and Lease.
  const needsPod = guard.length > 0 ? src('guard') : hold.length > 0 ? src('hold') : undefined;
  if (needsPod !== undefined) {
    const missing = (['podName', 'podNamespace', 'podUid'] as const).filter((key) => v[key] === undefined).map(src);
    if (missing.length > 0) {
      throw new ConfigError(
        'DG_CONFIG_POD_MISSING',
        `${needsPod} is set, so drainguard needs to know its pod: ` +
          `set ${missing.join(', ')} from the downward API (metadata.name, metadata.namespace, metadata.uid)`,
      );
    }
  }

  return Object.freeze({
    ...given,
    socketSource: src('socket'),
    gracePeriodSource: args.sources.gracePeriodMs ?? 'default',
    drainTimeoutMs,
    drainTimeoutExplicit,
    guard: Object.freeze(guard),
    pod,
    operatorContainers: Object.freeze([...(v.operatorContainer ?? [])]),
    prestopToken: resolvePrestopToken(v, { token: src('prestopToken'), file: src('prestopTokenFile') }),
  });
}
