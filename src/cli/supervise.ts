// The composition root of the supervising commands, `run` and `sidecar`: the
// logger, the pod's API (Events, its grace period, its stop signal, its deletion), the guard and the HTTP
// listener are built first and handed to the stop procedure, which asks them
// for what it needs; observers only report.
//
// In wrap mode nothing of Kubernetes is loaded before the operator has
// started (it must not wait for the client): the guard and the pod's API are
// opened when the procedure reaches `running`. A sidecar has no operator to
// keep waiting and needs the API from the start (DRAINGUARD_OPERATOR_CONTAINER).

import { type Clock, systemClock } from '../clock.ts';
import { type OpenGuardOptions, type SupervisedGuard, openGuard } from '../guard/open.ts';
import type { ContainerStopSignal, PodApi, PodDeletion } from '../kube/pod.ts';
import { leaderRelease } from '../leader/open.ts';
import { namespaceFinalizer } from '../namespace/open.ts';
import { type Logger, createLogger } from '../log/logger.ts';
import type { SupervisorConfig } from '../config/supervisor.ts';
import type { DrainTicket } from '../supervisor/drain.ts';
import { type SupervisorObserver, combineObservers } from '../supervisor/observer.ts';
import { SidecarMode } from '../supervisor/sidecar-mode.ts';
import { holdCaughtSignals } from '../supervisor/signals.ts';
import { type Mode, StopProcedure, type StopProcedureOptions } from '../supervisor/stop-procedure.ts';
import { WrapMode } from '../supervisor/wrap-mode.ts';
import { type DrainEventObserver, laterPodEvents } from '../telemetry/pod-events.ts';
import type { CliIO } from './command.ts';

/**
 * The one clock of a supervising command: the stop procedure's (with its socket
 * server's), the guard's, the hold's, the Events', the idle wait's, the leader
 * release's, the namespace finalizing's and the log's.
 */
const clock: Clock = systemClock;

/** What the stop procedure gets of the pod's API. */
interface PodLink {
  /** Events on the pod; undefined outside a pod. */
  readonly events?: DrainEventObserver;
  /** Opens the API if it is not yet, and reads the Pod's grace period (ms; undefined when it cannot be read). */
  gracePeriod(): Promise<number | undefined>;
  /** The Pod's deletion, within `timeoutMs`; undefined outside a pod. */
  readonly deletion?: (timeoutMs: number) => Promise<PodDeletion>;
  /** drainguard's container's stop signal, as the Pod tells it; undefined where no API can be asked. */
  stopSignal(signal: AbortSignal): Promise<ContainerStopSignal | undefined>;
}

/** `drainguard run -- COMMAND` */
export async function supervise(config: SupervisorConfig, io: CliIO, command: readonly string[]): Promise<number> {
  const logger = createLogger({ level: config.logLevel, format: config.logFormat, stream: io.stderr, clock });
  const mode = new WrapMode(command, io.env);
  const pod = laterPodLink(config, io.env, logger);
  // The Kubernetes client is loaded once the operator started (late: at the guard's start()).
  const guard = await guardOf(config, { env: io.env, logger, clock, late: true, events: () => pod.events });
  return superviseWith(
    config,
    logger,
    mode,
    pod,
    guard,
    leaderRelease({ setting: config.leaderLease, pod: config.pod, env: io.env, logger, clock, operator: 'exited' }),
    io.env,
  );
}

/** `drainguard sidecar` */
export async function superviseSidecar(config: SupervisorConfig, io: CliIO): Promise<number> {
  const logger = createLogger({ level: config.logLevel, format: config.logFormat, stream: io.stderr, clock });
  // The guard first: its configuration errors are the ones a sidecar shows. It reports to the pod's Events, connected next.
  const events = laterPodEvents(logger, clock);
  const guard = await guardOf(config, { env: io.env, logger, clock, late: false, events: () => events });
  const { openPodApi } = await import('../kube/pod.ts');
  const api = await openPodApi(config.pod, config.operatorContainers, io.env, logger, {
    readNode: config.nodeShutdownGraceMs !== undefined,
  });
  events.connect(api.recordEvent);
  const pod: PodLink = {
    events: api.recordEvent && events,
    gracePeriod: () => readGracePeriod(api, logger),
    deletion: api.readDeletion && ((ms) => readDeletion(api, ms)),
    stopSignal: async (signal) => api.readStopSignal?.(signal),
  };
  // The leader Lease is given up only once the API reports the operator container terminated.
  const leader = leaderRelease({
    setting: config.leaderLease,
    pod: config.pod,
    env: io.env,
    logger,
    clock,
    operator: api.operatorStopped ?? 'unknown',
  });
  return superviseWith(config, logger, new SidecarMode({ operatorStopped: api.operatorStopped }), pod, guard, leader, io.env);
}

async function superviseWith(
  config: SupervisorConfig,
  logger: Logger,
  mode: Mode,
  pod: PodLink,
  guard: SupervisedGuard | undefined,
  releaseLeader: StopProcedureOptions['releaseLeader'],
  env: NodeJS.ProcessEnv,
): Promise<number> {
  const untilIdle = config.idleMetrics && (await import('../idle/until-idle.ts')).untilIdle(config.idleMetrics, logger, { clock });
  const procedure = new StopProcedure(config, mode, {
    logger,
    clock,
    guard,
    untilIdle,
    flushEvents: async (deadline) => pod.events?.flush(deadline),
    podGracePeriod: () => pod.gracePeriod(),
    podStopSignal: (signal) => pod.stopSignal(signal),
    podDeletion: pod.deletion,
    releaseLeader,
    beforeDrain: namespaceFinalizer({ kinds: config.hold, namespace: config.pod.namespace, env, logger, clock }),
  });
  // The listener (and prom-client with it) is loaded only when DRAINGUARD_HTTP_ADDR is set.
  const telemetry =
    config.httpAddr &&
    (await (
      await import('../telemetry/telemetry.ts')
    ).startTelemetry({
      addr: config.httpAddr,
      logger,
      guard: guard && (() => guard.report()),
      prestop:
        config.prestopToken === undefined || !mode.takesDrainRequests
          ? undefined
          : { token: config.prestopToken, startDrain: () => procedure.startDrain('http') },
    }));
  // In the same turn as the run's own handlers (signals reach them from the event loop, not
  // before): when the run removes those at its end, these stay, with no moment in between.
  holdCaughtSignals();
  try {
    // The listener watches the run: it is started before it, on the procedure (the preStop route).
    const evictions = evictionResponder(config, env, logger, () => procedure.startDrain('eviction'));
    return await procedure.run({ observer: combineObservers(telemetry?.observer, pod.events, evictions), onServer: telemetry?.attach });
  } finally {
    await telemetry?.close();
  }
}

/**
 * The EvictionRequest responder (kube/eviction-request.ts), in a pod known by name and namespace unless
 * DRAINGUARD_EVICTION_RESPONDER=off: started once the operator runs (the Kubernetes client is loaded
 * then), ended once it has exited.
 */
function evictionResponder(
  config: SupervisorConfig,
  env: NodeJS.ProcessEnv,
  logger: Logger,
  startDrain: () => DrainTicket,
): SupervisorObserver | undefined {
  const { name, namespace, uid } = config.pod;
  if (config.evictionResponder === 'off' || name === undefined || namespace === undefined) return undefined;
  const stop = new AbortController();
  const respond = async () => {
    const [{ respondToEvictions }, { openOptionalClient }] = await Promise.all([
      import('../kube/eviction-request.ts'),
      import('../kube/open.ts'),
    ]);
    const client = await openOptionalClient(env, logger);
    if (client && !stop.signal.aborted)
      await respondToEvictions({ client, pod: { name, namespace, uid }, logger, clock, startDrain, signal: stop.signal });
  };
  return {
    phase: (phase) => {
      if (phase === 'running') respond().catch((err: unknown) => logger.warn('cannot respond to eviction requests', { error: err }));
      else if (phase === 'releasing' || phase === 'exited') stop.abort();
    },
  };
}

/**
 * The guard, when DRAINGUARD_GUARD or DRAINGUARD_HOLD is set (the Kubernetes client and hold/ are
 * loaded only then): the RBAC objects of the list, and the hold's Deployment (with the Lease for it
 * alone when the list is empty). The pod's identity is checked complete when the config is resolved.
 */
async function guardOf(
  config: SupervisorConfig,
  {
    events,
    ...options
  }: Pick<OpenGuardOptions, 'env' | 'logger' | 'clock' | 'late'> & { readonly events: () => DrainEventObserver | undefined },
): Promise<SupervisedGuard | undefined> {
  if (config.guard.length === 0 && config.hold.length === 0) return undefined;
  const { name, namespace, uid } = config.pod;
  const hold = config.hold.length > 0 ? { kinds: config.hold, timeoutMs: config.holdTimeoutMs, settleMs: config.holdSettleMs } : undefined;
  return openGuard(
    { targets: config.guard, pod: { name: name!, namespace: namespace!, uid: uid! }, leaseDurationMs: config.leaseDurationMs, hold },
    {
      ...options,
      onReleaseFailed: (objects, fix) => events()?.guardReleaseFailed(objects, fix),
      onHoldReleased: (reason, message) => events()?.holdReleased(reason, message),
    },
  );
}

/** The pod's API of wrap mode, opened at the first question (once the operator has started); Events wait for it. */
function laterPodLink(config: SupervisorConfig, env: NodeJS.ProcessEnv, logger: Logger): PodLink {
  // In a pod (DRAINGUARD_POD_NAME set): Events on it, once its API is open.
  const events = config.pod.name !== undefined ? laterPodEvents(logger, clock) : undefined;
  let opened: Promise<PodApi> | undefined;
  const open = () =>
    (opened ??= import('../kube/pod.ts').then(async ({ openPodApi }) => {
      const api = await openPodApi(config.pod, [], env, logger, { readNode: config.nodeShutdownGraceMs !== undefined }).catch(
        (err: unknown): PodApi => {
          logger.warn('cannot reach the Kubernetes API about this pod: no Events on it, and the grace period stays as configured', {
            error: err,
          });
          return {};
        },
      );
      events?.connect(api.recordEvent);
      return api;
    }));
  // Outside a pod there is nothing to ask, and the Kubernetes client is never loaded.
  return {
    events,
    gracePeriod: async () => (events ? readGracePeriod(await open(), logger) : undefined),
    deletion: events && (async (ms) => readDeletion(await open(), ms)),
    stopSignal: async (signal) => (events ? (await open()).readStopSignal?.(signal) : undefined),
  };
}

/** The Pod's deletion; rejects (the stop then goes by the grace period) where no API tells it. */
function readDeletion(api: PodApi, timeoutMs: number): Promise<PodDeletion> {
  return api.readDeletion?.(timeoutMs) ?? Promise.reject(new Error('no Kubernetes API to read the Pod from'));
}

/** The Pod's terminationGracePeriodSeconds; a failure to read it is logged and leaves the configured one in force. */
async function readGracePeriod(api: PodApi, logger: Logger): Promise<number | undefined> {
  try {
    return await api.readGracePeriodMs?.();
  } catch (err) {
    logger.warn('could not read the grace period from the Pod: going by DRAINGUARD_GRACE_PERIOD', { error: err });
    return undefined;
  }
}
