import { type StatusConfig, resolveStatusConfig } from '../config/commands.ts';
import { createLogger } from '../log/logger.ts';
import type { CliIO } from './command.ts';

export const resolve = resolveStatusConfig;

export async function run(v: StatusConfig, io: CliIO): Promise<number> {
  const logger = createLogger({ level: v.logLevel, format: v.logFormat, stream: io.stderr });
  const { openClient, defaultNamespace } = await import('../kube/open.ts');
  const { statusReport, renderStatus } = await import('../guard/status-report.ts');
  const client = await openClient(io.env, logger, 'drainguard status');
  const namespace = defaultNamespace(client, v.podNamespace);
  const held = v.hold.length > 0 ? await import('../hold/status.ts') : undefined;
  const deployments = held && namespace !== undefined ? await (await import('../guard/inspect.ts')).heldDeployments(client, namespace) : [];
  const report = await statusReport(client, { targets: [...v.targets, ...deployments], allObjects: v.allObjects, namespace });
  const hold = held && namespace !== undefined ? await held.holdStatus(client, v.hold, namespace) : undefined;
  io.stdout.write(
    v.output === 'json'
      ? `${JSON.stringify(hold ? { ...report, hold } : report, null, 2)}\n`
      : renderStatus(report) + (hold ? held!.renderHoldStatus(hold) : ''),
  );
  return 0;
}
