import { resolveSupervisorConfig } from '../config/supervisor.ts';
import { createLogger } from '../log/logger.ts';
import { runWrapped } from '../supervise/wrap.ts';
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
        ? (await import('../guard/open.ts')).openGuard(config, { env: io.env, logger, leaseDurationMs: (args.values as { leaseDurationMs?: number }).leaseDurationMs })
        : undefined;
    // The listener (and prom-client with it) is loaded only when DRAINGUARD_HTTP_ADDR is set.
    const telemetry =
      config.httpAddr && (await (await import('../http/telemetry.ts')).startTelemetry({ addr: config.httpAddr, logger, guard: guard && (() => guard.report()) }));
    try {
      return await runWrapped(config, args.positionals, { env: io.env, logger, guard, observer: telemetry?.observer, onServer: telemetry?.attach });
    } finally {
      await telemetry?.close();
    }
  },
};
