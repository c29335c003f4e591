import { resolveSupervisorConfig } from '../config/supervisor.ts';
import { createLogger } from '../log/logger.ts';
import { combineObservers } from '../supervisor/observers.ts';
import { drainEventObserver } from '../telemetry/pod-events.ts';
import { adoptPodGracePeriod, openPodApi } from '../kube/pod.ts';
import { holdTerminationSignals } from '../supervisor/signals.ts';
import { runWrapped } from '../supervisor/wrap.ts';

/** How long the last Event (how the drain ended) may still take at exit. */
const EVENT_FLUSH_MS = 1000;
import type { CommandDef } from './command.ts';

export const runCommand: CommandDef = {
  name: 'run',
  summary: 'start COMMAND as a child and supervise it (local wrapper, or the container entrypoint)',
  usage: 'drainguard run [OPTIONS] -- COMMAND [ARGS...]',
  description: `Starts COMMAND with DRAINGUARD_SOCKET in its environment and passes signals on to it.
On the first SIGTERM or SIGINT it tells connected clients to drain, and passes the stop
signal on once they all said drained, the operator exited, or the drain timeout passed;
a second SIGTERM or SIGINT passes it on at once. SIGKILL follows after the stop timeout.`,
  stopAtPositional: true,
  async run(args, io) {
    const config = resolveSupervisorConfig(args, {});
    const logger = createLogger({ level: config.logLevel, format: config.logFormat, stream: io.stderr });
    // The guard (and the Kubernetes client with it) is loaded only when DRAINGUARD_GUARD is set.
    const guard =
      config.guard.length > 0
        ? (await import('../guard/open.ts')).openGuard(config, {
            env: io.env,
            logger,
            leaseDurationMs: (args.values as { leaseDurationMs?: number }).leaseDurationMs,
            onReleaseFailed: (objects, fix) => events?.guardReleaseFailed(objects, fix),
          })
        : undefined;
    // The listener (and prom-client with it) is loaded only when DRAINGUARD_HTTP_ADDR is set.
    const telemetry =
      config.httpAddr && (await (await import('../telemetry/telemetry.ts')).startTelemetry({ addr: config.httpAddr, logger, guard: guard && (() => guard.report()) }));
    // In a pod (DRAINGUARD_POD_NAME set): Events on it, and its own grace period.
    const api = await openPodApi(config.pod, [], io.env, logger);
    const events = api.recordEvent && drainEventObserver(api.recordEvent, logger);
    let podGracePeriodMs: number | undefined;
    adoptPodGracePeriod(api, { ms: config.gracePeriodMs, source: args.sources.gracePeriodMs }, logger, (ms) => {
      podGracePeriodMs = ms;
      logger.info('grace period read from the Pod', { gracePeriodMs: ms });
    });
    try {
      return await runWrapped(config, args.positionals, {
        env: io.env,
        logger,
        guard,
        observer: combineObservers(telemetry?.observer, events),
        onServer: telemetry?.attach,
        podGracePeriodMs: () => podGracePeriodMs,
        flush: async (deadline) => events?.flush(Math.min(deadline, Date.now() + EVENT_FLUSH_MS)),
      });
    } finally {
      holdTerminationSignals();
      await telemetry?.close();
    }
  },
};
