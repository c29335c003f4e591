import { type SupervisorConfig, resolveSupervisorConfig } from '../supervisor/config.ts';
import { drainEventObserver } from '../telemetry/pod-events.ts';
import { combineObservers } from '../supervisor/observer.ts';
import { createLogger } from '../log/logger.ts';
import { openPodApi, readPodGracePeriod } from '../kube/pod.ts';
import { holdTerminationSignals } from '../supervisor/signals.ts';
import { SidecarSupervisor } from '../supervisor/sidecar.ts';
import type { CommandDef } from './command.ts';

/** How long the sidecar stays for Events still being written once it is done. */
const EVENT_FLUSH_MS = 1000;

export const sidecarCommand: CommandDef<SupervisorConfig> = {
  name: 'sidecar',
  summary: 'run beside the operator container in the same pod (native or plain sidecar)',
  usage: 'drainguard sidecar [OPTIONS]',
  description: `Serves the drain socket on a volume shared with the operator container, holds the
guard for the pod, and serves /healthz, /readyz and /metrics on DRAINGUARD_HTTP_ADDR.
The operator container's preStop hook (drainguard prestop, or an httpGet on /prestop
with the token) starts the drain and waits until the operator said drained or the drain
timeout passed; the kubelet's SIGTERM to the operator follows. On its own SIGTERM the
sidecar waits until the operator has disconnected (at once as a native sidecar, which
is stopped after the operator), then releases the guard and exits 0. A second SIGTERM or
SIGINT cuts the drain and the wait short.`,
  resolve: resolveSupervisorConfig,
  async run(config, io) {
    const logger = createLogger({ level: config.logLevel, format: config.logFormat, stream: io.stderr });
    const guard =
      config.guard.length > 0
        ? await (await import('../guard/open.ts')).openGuard(config, { env: io.env, logger, onReleaseFailed: (objects, fix) => events?.guardReleaseFailed(objects, fix) })
        : undefined;
    // No operator to start first: the API is opened now (DRAINGUARD_OPERATOR_CONTAINER needs it from the start).
    const api = await openPodApi(config.pod, config.operatorContainers, io.env, logger);
    const events = api.recordEvent && drainEventObserver(api.recordEvent, logger);
    const token = config.prestopToken;
    const telemetry = config.httpAddr
      ? await (await import('../telemetry/telemetry.ts')).startTelemetry({
          addr: config.httpAddr,
          logger,
          guard: guard && (() => guard.report()),
          prestop: token === undefined ? undefined : { token, requestDrain: () => sidecar.requestDrain('http') },
        })
      : undefined;
    const untilIdle = config.idleMetrics && (await import('../idle/until-idle.ts')).untilIdle(config.idleMetrics, logger);
    const sidecar: SidecarSupervisor = new SidecarSupervisor(config, {
      untilIdle,
      logger,
      guard,
      observer: combineObservers(telemetry?.observer, events),
      onServer: telemetry?.attach,
      operatorStopped: api.operatorStopped,
      flush: async (deadline) => events?.flush(deadline),
    });
    readPodGracePeriod(api, logger, (ms) => sidecar.adoptPodGracePeriod(ms));
    try {
      return await sidecar.run();
    } finally {
      holdTerminationSignals();
      // The last Event (how the drain ended) may still be on its way.
      await events?.flush(Date.now() + EVENT_FLUSH_MS);
      await telemetry?.close();
    }
  },
};
