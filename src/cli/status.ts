import { type StatusConfig, resolveStatusConfig } from '../config/commands.ts';
import { STATUS_OPTIONS } from '../config/options.ts';
import { createLogger } from '../log/logger.ts';
import type { CommandDef } from './command.ts';

export const statusCommand: CommandDef<StatusConfig> = {
  name: 'status',
  summary: 'print the state of the guard: guarded objects, holders, staleness',
  usage: 'drainguard status [--guard LIST] [--all-objects] [-o json]',
  description: `Prints the objects in --guard (DRAINGUARD_GUARD) and, with --all-objects or when no
list is given, every object that carries a drainguard.dev/holder- finalizer: whether it exists
or is being deleted, and its holders, live or stale (holder Lease gone or expired). Then the
holder Leases themselves. Reads only.`,
  extra: STATUS_OPTIONS,
  resolve: resolveStatusConfig,
  async run(v, io) {
    const logger = createLogger({ level: v.logLevel, format: v.logFormat, stream: io.stderr });
    const { openClient, defaultNamespace } = await import('../kube/open.ts');
    const { statusReport, renderStatus } = await import('../guard/status-report.ts');
    const client = await openClient(io.env, logger, 'drainguard status');
    const report = await statusReport(client, { targets: v.targets, allObjects: v.allObjects, namespace: defaultNamespace(client, v.podNamespace) });
    io.stdout.write(v.output === 'json' ? `${JSON.stringify(report, null, 2)}\n` : renderStatus(report));
    return 0;
  },
};
