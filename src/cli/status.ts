import { type StatusConfig, resolveStatusConfig } from '../config/commands.ts';
import { STATUS_OPTIONS } from '../config/options.ts';
import { createLogger } from '../log/logger.ts';
import type { CommandDef } from './command.ts';

export const statusCommand: CommandDef<StatusConfig> = {
  name: 'status',
  summary: 'print the state of the guard and the hold: guarded objects, holders, staleness, what the hold waits for',
  usage: 'drainguard status [--guard LIST] [--hold KINDS] [--all-objects] [-o json]',
  description: `Prints the objects in --guard (DRAINGUARD_GUARD) and, with --all-objects or when no
list is given, every object that carries a drainguard.dev/holder- finalizer: whether it exists
or is being deleted, and its holders, live or stale (holder Lease gone, expired or not owned by
its Pod), judged by the Leases of --pod-namespace (default the kubeconfig's). Then the holder
Leases themselves. With --hold (DRAINGUARD_HOLD), also the Deployments of the namespace
that carry a holder finalizer (the hold), and what a hold waits for: the objects of those kinds
that are being deleted and still carry a finalizer. Reads only.`,
  extra: STATUS_OPTIONS,
  resolve: resolveStatusConfig,
  async run(v, io) {
    const logger = createLogger({ level: v.logLevel, format: v.logFormat, stream: io.stderr });
    const { openClient, defaultNamespace } = await import('../kube/open.ts');
    const { statusReport, renderStatus } = await import('../guard/status-report.ts');
    const client = await openClient(io.env, logger, 'drainguard status');
    const namespace = defaultNamespace(client, v.podNamespace);
    const held = v.hold.length > 0 ? await import('../hold/status.ts') : undefined;
    const deployments =
      held && namespace !== undefined ? await (await import('../guard/inspect.ts')).heldDeployments(client, namespace) : [];
    const report = await statusReport(client, { targets: [...v.targets, ...deployments], allObjects: v.allObjects, namespace });
    const hold = held && namespace !== undefined ? await held.holdStatus(client, v.hold, namespace) : undefined;
    io.stdout.write(
      v.output === 'json'
        ? `${JSON.stringify(hold ? { ...report, hold } : report, null, 2)}\n`
        : renderStatus(report) + (hold ? held!.renderHoldStatus(hold) : ''),
    );
    return 0;
  },
};
