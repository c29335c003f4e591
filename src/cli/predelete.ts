import { type PredeleteConfig, resolvePredeleteConfig } from '../config/commands.ts';
import { describe } from '../errors.ts';
import { createLogger } from '../log/logger.ts';
import type { CliIO } from './command.ts';

export const resolve = resolvePredeleteConfig;

export async function run(config: PredeleteConfig, io: CliIO): Promise<number> {
  const { parseResourceArgs, Discovery } = await import('../predelete/resources.ts');
  const { predelete, PredeleteError } = await import('../predelete/predelete.ts');
  const { openClient } = await import('../kube/open.ts');
  const groups = config.resources.map(parseResourceArgs);
  const logger = createLogger({ level: config.logLevel, format: config.logFormat, stream: io.stderr });
  const client = await openClient(io.env, logger, 'drainguard predelete');
  const namespace = config.namespace ?? client.namespace ?? 'default';
  const discovery = new Discovery(client, (groupVersion, error) =>
    logger.warn('an API group is left out of discovery: its resources cannot be read', { groupVersion, error }),
  );
  const resolved = await Promise.all(groups.map((g) => Promise.all(g.map((a) => discovery.resolve(a)))));
  const stages = config.order ? resolved : [resolved.flat()];
  const say = (line: string) => io.stdout.write(`${line}\n`);
  try {
    await predelete({
      client,
      stages,
      namespace,
      allNamespaces: config.allNamespaces,
      propagation: config.propagation,
      timeoutMs: config.timeoutMs,
      requireReady: config.requireReady === undefined ? undefined : { namespace, selector: config.requireReady },
      say,
    });
    return 0;
  } catch (err) {
    if (!(err instanceof PredeleteError)) throw err;
    io.stderr.write(`drainguard predelete: ${describe(err)}\n`);
    return 1;
  }
}
