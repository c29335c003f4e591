import { resolveSupervisorConfig } from '../config/supervisor.ts';
import type { SupervisorConfig } from '../config/supervisor.ts';
import { resolvePrestopToken } from '../http/token.ts';
import { drainEventObserver } from '../metrics/events.ts';
import { combineObservers } from '../metrics/observers.ts';
import { openPodEvents } from '../metrics/pod-events.ts';
import { type Logger, createLogger } from '../log/logger.ts';
import { DEFAULT_SIDECAR_SOCKET, SidecarSupervisor } from '../sidecar/supervisor.ts';
import type { GuardHandle } from '../supervise/observer.ts';
import type { CommandDef } from './command.ts';

/** How long the sidecar stays for Events still being written once it is done. */
const EVENT_FLUSH_MS = 1000;

export const sidecarCommand: CommandDef = {
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
  async run(args, io) {
    const config = resolveSupervisorConfig(args, { socket: DEFAULT_SIDECAR_SOCKET, httpAddr: '127.0.0.1:9404' });
    const token = resolvePrestopToken(args.values as { prestopToken?: string; prestopTokenFile?: string }, args.sources);
    const logger = createLogger({ level: config.logLevel, format: config.logFormat, stream: io.stderr });
    const guard = openGuard(config, logger);
    const record = await openPodEvents(config.pod, io.env, logger);
    const events = record && drainEventObserver(record, logger);
    let sidecar: SidecarSupervisor | undefined;
    const telemetry = config.httpAddr
      ? await (await import('../http/telemetry.ts')).startTelemetry({
          addr: config.httpAddr,
          logger,
          prestop: token === undefined ? undefined : { token, requestDrain: () => sidecar!.requestDrain('http') },
        })
      : undefined;
    try {
      sidecar = new SidecarSupervisor(config, { logger, guard, observer: combineObservers(telemetry?.observer, events), onServer: telemetry?.attach });
      return await sidecar.run();
    } finally {
      // The last Event (how the drain ended) may still be on its way.
      await events?.flush(Date.now() + EVENT_FLUSH_MS);
      await telemetry?.close();
    }
  },
};

/**
 * The guard this sidecar holds for its pod, built from DRAINGUARD_GUARD and the
 * pod identity as in wrap mode. This is the one place the guard plugs in.
 */
function openGuard(config: SupervisorConfig, logger: Logger): GuardHandle | undefined {
  if (config.guard.length === 0) return undefined;
  logger.warn('DRAINGUARD_GUARD is set, but this build of drainguard sidecar does not hold a guard', { objects: config.guard.length });
  return undefined;
}
