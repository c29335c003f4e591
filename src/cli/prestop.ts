import { createLogger } from '../log/logger.ts';
import { askForDrain } from '../protocol/control-client.ts';
import { type PrestopConfig, resolvePrestopConfig } from '../config/commands.ts';
import type { CliIO } from './command.ts';

const EXIT_UNREACHABLE = 1;

export const resolve = resolvePrestopConfig;

export async function run({ socket, drainTimeoutMs, logLevel, logFormat }: PrestopConfig, io: CliIO): Promise<number> {
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
}
