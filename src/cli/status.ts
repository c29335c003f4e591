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
    const { inspect } = await import('../guard/inspect.ts');
    const { GUARDS_ANNOTATION } = await import('../guard/names.ts');
    const client = await openClient(io.env, logger, 'drainguard status');
    const now = Date.now();
    const { objects, holders } = await inspect(client, { targets: v.targets, allObjects: v.allObjects }, defaultNamespace(client, v.podNamespace), () => now);

    const leases = holders.leases.map((l) => {
      const uid = l.metadata.name.replace(/^drainguard-/, '');
      const state = holders.state(uid);
      return {
        namespace: l.metadata.namespace,
        name: l.metadata.name,
        uid,
        pod: l.spec?.holderIdentity,
        live: state.live,
        renewTime: l.spec?.renewTime,
        leaseDurationSeconds: l.spec?.leaseDurationSeconds,
        guards: (l.metadata.annotations?.[GUARDS_ANNOTATION] ?? '').split(',').filter(Boolean),
      };
    });
    const report = {
      server: client.server,
      leaseScope: holders.scope,
      objects: objects.map((o) => ({
        object: o.key,
        exists: o.object !== undefined,
        deleting: Boolean(o.object?.metadata.deletionTimestamp),
        ...(o.object?.metadata.deletionTimestamp && { deletionTimestamp: o.object.metadata.deletionTimestamp }),
        holders: o.holders.map((h) => ({
          uid: h.uid,
          finalizer: h.finalizer,
          live: h.live,
          ...(h.staleBecause && { staleBecause: h.staleBecause }),
          ...(h.lease && { lease: `${h.lease.metadata.namespace}/${h.lease.metadata.name}`, pod: h.lease.spec?.holderIdentity }),
        })),
      })),
      holders: leases,
    };
    if (v.output === 'json') {
      io.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
      return 0;
    }
    const rows = report.objects.map((o) => [
      o.object,
      !o.exists ? 'not found' : o.deleting ? 'deleting' : 'present',
      o.holders.length === 0 ? '-' : o.holders.map((h) => `${h.uid} ${h.live ? `live (pod ${h.pod})` : `stale (Lease ${h.staleBecause})`}`).join(', '),
    ]);
    io.stdout.write(table([['OBJECT', 'STATE', 'HOLDERS'], ...rows]));
    io.stdout.write(`\nholder Leases (${holders.scope === 'cluster' ? 'all namespaces' : `namespace ${holders.scope}`}):\n`);
    if (leases.length === 0) io.stdout.write('  none\n');
    else io.stdout.write(table([['LEASE', 'POD', 'STATE', 'RENEWED', 'GUARDS'], ...leases.map((l) => [`${l.namespace}/${l.name}`, l.pod ?? '-', l.live ? 'live' : 'stale (expired)', l.renewTime ?? '-', l.guards.join(',') || '-'])]));
    return 0;
  },
};

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join('  ')).join('\n') + '\n';
}
