import { type SupervisorConfig, resolveSupervisorConfig } from '../supervisor/config.ts';
import { lateGuard } from '../guard/late.ts';
import { createLogger } from '../log/logger.ts';
import { combineObservers } from '../supervisor/observer.ts';
import { holdTerminationSignals } from '../supervisor/signals.ts';
import { WrapSupervisor } from '../supervisor/wrap.ts';
import { laterPodEvents } from '../telemetry/pod-events.ts';
import type { PodApi } from '../kube/pod.ts';
import type { CommandDef } from './command.ts';

export const runCommand: CommandDef<{ supervisor: SupervisorConfig; command: readonly string[] }> = {
  name: 'run',
  summary: 'start COMMAND as a child and supervise it (local wrapper, or the container entrypoint)',
  usage: 'drainguard run [OPTIONS] -- COMMAND [ARGS...]',
  description: `Starts COMMAND with DRAINGUARD_SOCKET in its environment and passes signals on to it.
On the first SIGTERM or SIGINT it tells connected clients to drain, and passes the stop
signal on once they all said drained, the operator exited, or the drain timeout passed;
a second SIGTERM or SIGINT passes it on at once. SIGKILL follows after the stop timeout.`,
  stopAtPositional: true,
  resolve: (args) => ({ supervisor: resolveSupervisorConfig(args), command: args.positionals }),
  async run({ supervisor: config, command }, io) {
    const logger = createLogger({ level: config.logLevel, format: config.logFormat, stream: io.stderr });
    // In a pod (DRAINGUARD_POD_NAME set): Events on it, once its API is open.
    const events = config.pod.name !== undefined ? laterPodEvents(logger) : undefined;
    // With DRAINGUARD_GUARD: the Kubernetes client is loaded once the operator started.
    const guard =
      config.guard.length > 0 ? lateGuard(config, { env: io.env, logger, onReleaseFailed: (objects, fix) => events?.guardReleaseFailed(objects, fix) }) : undefined;
    // The listener (and prom-client with it) is loaded only when DRAINGUARD_HTTP_ADDR is set.
    const telemetry =
      config.httpAddr && (await (await import('../telemetry/telemetry.ts')).startTelemetry({ addr: config.httpAddr, logger, guard: guard && (() => guard.report()) }));
    const openPod = async () => {
      // After the operator started: it must not wait for the Kubernetes client to load.
      const { openPodApi, readPodGracePeriod } = await import('../kube/pod.ts');
      const api = await openPodApi(config.pod, [], io.env, logger).catch((err: unknown): PodApi => {
        logger.warn('cannot reach the Kubernetes API about this pod: no Events on it, and the grace period stays as configured', { error: err });
        return {};
      });
      events?.connect(api.recordEvent);
      readPodGracePeriod(api, logger, (ms) => supervisor.adoptPodGracePeriod(ms));
    };
    const untilIdle = config.idleMetrics && (await import('../idle/until-idle.ts')).untilIdle(config.idleMetrics, logger);
    const supervisor: WrapSupervisor = new WrapSupervisor(config, {
      untilIdle,
      env: io.env,
      logger,
      guard,
      observer: combineObservers(telemetry?.observer, events, { phase: (phase) => phase === 'running' && events && void openPod() }),
      onServer: telemetry?.attach,
      flush: async (deadline) => events?.flush(deadline),
    });
    try {
      return await supervisor.run(command);
    } finally {
      holdTerminationSignals();
      await telemetry?.close();
    }
  },
};
