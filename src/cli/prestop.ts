import { createLogger } from '../log/logger.ts';
import { askForDrain } from '../protocol/control-client.ts';
import { type PrestopConfig, resolvePrestopConfig } from '../config/commands.ts';
import type { CommandDef } from './command.ts';

export const EXIT_UNREACHABLE = 1;

export const prestopCommand: CommandDef<PrestopConfig> = {
  name: 'prestop',
  summary: 'for a preStop exec hook: ask the sidecar to drain, block until drained or the deadline',
  usage: 'drainguard prestop [OPTIONS]',
  description: `Connects to the drainguard sidecar's socket, asks it to drain, and waits until every
operator client said drained (or disconnected), or the drain deadline passed; then exits 0
and the kubelet sends SIGTERM to the operator. It never waits past the deadline the sidecar
announces (or --drain-timeout, when shorter). Exits 1 with a message saying what to check
when the sidecar cannot be reached, refuses, or does not answer within 5s.`,
  resolve: resolvePrestopConfig,
  async run({ socket, drainTimeoutMs, logLevel, logFormat }, io) {
    const logger = createLogger({ level: logLevel, format: logFormat, stream: io.stderr });
    const started = Date.now();
    const result = await askForDrain({ socket, timeoutMs: drainTimeoutMs });
    const waitedMs = Date.now() - started;
    if (!result.ok) {
      logger.error(result.message, { code: result.code, socket, waitedMs });
      return EXIT_UNREACHABLE;
    }
    if (result.gaveUp) {
      logger.warn('deadline passed before the drain ended; the stop signal follows', { socket, waitedMs, clients: result.clients });
    } else {
      (result.outcome === 'deadline' ? logger.warn : logger.info)('drain ended', {
        outcome: result.outcome,
        durationMs: result.durationMs,
        clients: result.clients,
        joined: result.joined,
        waitedMs,
      });
    }
    return 0;
  },
};
