import { type PredeleteConfig, resolvePredeleteConfig } from '../config/commands.ts';
import { PREDELETE_OPTIONS } from '../config/options.ts';
import { describe } from '../errors.ts';
import { createLogger } from '../log/logger.ts';
import type { CommandDef } from './command.ts';

export const predeleteCommand: CommandDef<PredeleteConfig> = {
  name: 'predelete',
  summary: 'delete custom resources and wait until they are gone (a Helm pre-delete hook Job)',
  usage: 'drainguard predelete [OPTIONS] RESOURCE...',
  description: `Deletes the named resources while the operator still runs, and waits until its
finalizers have let every one go. RESOURCE names them as kubectl does: TYPE[.GROUP]/NAME for
one object, TYPE[.GROUP] for all of a type (installations.operator.tigera.io/default,
apiservers.operator.tigera.io). Exits 0 once all are gone, 1 when --timeout passes first
(naming what is left and which finalizers hold it), 2 for a usage error such as a type the
API server does not know.`,
  extra: PREDELETE_OPTIONS,
  resolve: resolvePredeleteConfig,
  async run(config, io) {
    const { parseResourceArgs, Discovery } = await import('../predelete/resources.ts');
    const { predelete, PredeleteError } = await import('../predelete/predelete.ts');
    const { openClient } = await import('../kube/open.ts');
    const groups = config.resources.map(parseResourceArgs);
    const logger = createLogger({ level: config.logLevel, format: config.logFormat, stream: io.stderr });
    const client = await openClient(io.env, logger, 'drainguard predelete');
    const namespace = config.namespace ?? client.namespace ?? 'default';
    const discovery = new Discovery(client);
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
  },
};
