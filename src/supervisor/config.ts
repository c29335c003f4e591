// The resolved configuration of the supervising commands (run, sidecar):
// every default filled in and every rule that spans settings checked up front.

import type { PodRef } from '../kube/pod.ts';
import { checkFit, defaultDrainTimeout } from '../config/grace-rule.ts';
import { type PrestopToken, resolvePrestopToken } from '../config/prestop-token.ts';
import { ConfigError } from '../errors.ts';
import { type GuardTarget, parseGuardList } from '../config/guard-list.ts';
import type { HoldKind } from '../config/hold-list.ts';
import type { LeaderLeaseSetting } from '../config/options.ts';
import { type ParsedArgs, setting } from '../config/load.ts';
import type { LogFormat, LogLevel } from '../log/logger.ts';

export type SignalTarget = 'group' | 'child';

export interface SupervisorConfig {
  /** undefined in wrap mode without --socket: a fresh private path is made at start. */
  readonly socket?: string;
  /** Where the socket path came from (--socket or DRAINGUARD_SOCKET), for messages about it. */
  readonly socketSource?: string;
  readonly gracePeriodMs: number;
  /** Where the grace period came from (--grace-period, DRAINGUARD_GRACE_PERIOD, or the default), for the log. */
  readonly gracePeriodSource: string;
  readonly drainTimeoutMs: number;
  /** False when the drain timeout was derived from the grace period (it may then be re-derived from the Pod). */
  readonly drainTimeoutExplicit: boolean;
  readonly stopSignal: NodeJS.Signals;
  readonly stopTimeoutMs: number;
  readonly signalTarget: SignalTarget;
  readonly guard: readonly GuardTarget[];
  /** The custom resource kinds the hold waits for; empty: no hold. */
  readonly hold: readonly HoldKind[];
  readonly holdTimeoutMs: number;
  readonly holdSettleMs: number;
  /** How long the holder Lease stays valid without renewal. */
  readonly leaseDurationMs: number;
  readonly pod: Partial<PodRef>;
  readonly httpAddr?: { readonly host: string; readonly port: number };
  /** Sidecar mode: the operator's containers, whose termination the API must report before the release. */
  readonly operatorContainers: readonly string[];
  /** Sidecar mode: turns on the httpGet preStop route. */
  readonly prestopToken?: PrestopToken;
  /** The operator's controller-runtime metrics, for a drain without a protocol client. */
  readonly idleMetrics?: URL;
  /** DRAINGUARD_LEADER_LEASE: the operator's leader Lease, emptied once it has exited (leader/). */
  readonly leaderLease: LeaderLeaseSetting;
  readonly logLevel: LogLevel;
  readonly logFormat?: LogFormat;
}

export function resolveSupervisorConfig(args: ParsedArgs): SupervisorConfig {
  const v = args.values;
  const src = (key: string, fallback: string) => args.sources[key] ?? fallback;
  const gracePeriodMs = setting(args, 'gracePeriodMs')!;
  const stopTimeoutMs = setting(args, 'stopTimeoutMs')!;
  const drainTimeoutExplicit = v.drainTimeoutMs !== undefined;
  const misfit = checkFit({ gracePeriodMs, stopTimeoutMs, drainTimeoutMs: v.drainTimeoutMs }, { stop: src('stopTimeoutMs', 'DRAINGUARD_STOP_TIMEOUT'), drain: src('drainTimeoutMs', 'DRAINGUARD_DRAIN_TIMEOUT') });
  if (misfit !== undefined) throw new ConfigError('DG_CONFIG_TIMEOUTS', misfit);
  const drainTimeoutMs = v.drainTimeoutMs ?? defaultDrainTimeout(gracePeriodMs, stopTimeoutMs);

  const guard = v.guard === undefined ? [] : parseGuardList(v.guard, src('guard', 'DRAINGUARD_GUARD'));
  const pod: Partial<PodRef> = Object.freeze({ name: v.podName, namespace: v.podNamespace, uid: v.podUid });
  const hold = setting(args, 'hold')!;
  // The guard and the hold both write the pod's holder finalizer and Lease.
  const needsPod = guard.length > 0 ? src('guard', 'DRAINGUARD_GUARD') : hold.length > 0 ? src('hold', 'DRAINGUARD_HOLD') : undefined;
  if (needsPod !== undefined) {
    const missing = [
      ['DRAINGUARD_POD_NAME', pod.name],
      ['DRAINGUARD_POD_NAMESPACE', pod.namespace],
      ['DRAINGUARD_POD_UID', pod.uid],
    ]
      .filter(([, value]) => value === undefined)
      .map(([name]) => name);
    if (missing.length > 0) {
      throw new ConfigError(
        'DG_CONFIG_POD_MISSING',
        `${needsPod} is set, so drainguard needs to know its pod: set ${missing.join(', ')} from the downward API (metadata.name, metadata.namespace, metadata.uid)`,
      );
    }
  }

  return Object.freeze({
    socket: setting(args, 'socket'),
    socketSource: src('socket', 'DRAINGUARD_SOCKET'),
    gracePeriodMs,
    gracePeriodSource: args.sources.gracePeriodMs ?? 'default',
    drainTimeoutMs,
    drainTimeoutExplicit,
    stopSignal: setting(args, 'stopSignal')!,
    stopTimeoutMs,
    signalTarget: setting(args, 'signalTarget')!,
    guard: Object.freeze(guard),
    hold,
    holdTimeoutMs: setting(args, 'holdTimeoutMs')!,
    holdSettleMs: setting(args, 'holdSettleMs')!,
    leaseDurationMs: setting(args, 'leaseDurationMs')!,
    operatorContainers: Object.freeze([...(v.operatorContainer ?? [])]),
    prestopToken: resolvePrestopToken(v, args.sources),
    idleMetrics: v.idleMetrics,
    leaderLease: setting(args, 'leaderLease')!,
    pod,
    httpAddr: setting(args, 'httpAddr'),
    logLevel: setting(args, 'logLevel')!,
    logFormat: v.logFormat,
  });
}
