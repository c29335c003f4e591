// `drainguard status`: the guarded objects, their holders live or stale, and
// the holder Leases, as a report (for -o json) and as the tables people read.

import { type Clock, systemClock } from '../clock.ts';
import type { HeldTarget } from './names.ts';
import type { KubeClient } from '../kube/client.ts';
import { STALE_TEXT } from './holders.ts';
import { inspect } from './inspect.ts';
import { GUARDS_ANNOTATION } from './names.ts';

export interface StatusQuery {
  readonly targets: readonly HeldTarget[];
  readonly allObjects: boolean;
  /** The guard's own namespace: where holder Leases count. */
  readonly namespace: string;
}

export type StatusReport = Awaited<ReturnType<typeof statusReport>>;

/** Reads only. Holders are judged live or stale at one moment, the clock's when the report starts. */
export async function statusReport(client: KubeClient, query: StatusQuery, clock: Pick<Clock, 'now'> = systemClock) {
  const at = clock.now();
  const { objects, holders } = await inspect(client, { targets: query.targets, allObjects: query.allObjects }, query.namespace, {
    now: () => at,
  });
  const leases = holders.leases.map((l) => {
    const uid = l.metadata.name.replace(/^drainguard-/, '');
    const state = holders.state(uid);
    return {
      namespace: l.metadata.namespace as string,
      name: l.metadata.name as string,
      uid,
      pod: l.spec?.holderIdentity as string | undefined,
      live: state.live,
      ...(state.staleBecause && { staleBecause: state.staleBecause }),
      renewTime: l.spec?.renewTime as string | undefined,
      leaseDurationSeconds: l.spec?.leaseDurationSeconds as number | undefined,
      guards: (l.metadata.annotations?.[GUARDS_ANNOTATION] ?? '').split(',').filter(Boolean),
    };
  });
  return {
    server: client.server,
    leaseScope: holders.scope,
    objects: objects.map((o) => ({
      object: o.key,
      exists: o.object !== undefined,
      deleting: Boolean(o.object?.metadata.deletionTimestamp),
      ...(o.object?.metadata.deletionTimestamp && { deletionTimestamp: o.object.metadata.deletionTimestamp as string }),
      holders: o.holders.map((h) => ({
        uid: h.uid,
        finalizer: h.finalizer,
        live: h.live,
        ...(h.staleBecause && { staleBecause: h.staleBecause }),
        ...(h.lease && {
          lease: `${h.lease.metadata.namespace}/${h.lease.metadata.name}`,
          pod: h.lease.spec?.holderIdentity as string | undefined,
        }),
      })),
    })),
    holders: leases,
  };
}

/** The report as two tables: the objects, then the holder Leases. */
export function renderStatus(report: StatusReport): string {
  const rows = report.objects.map((o) => [
    o.object,
    !o.exists ? 'not found' : o.deleting ? 'deleting' : 'present',
    o.holders.length === 0
      ? '-'
      : o.holders.map((h) => `${h.uid} ${h.live ? `live (pod ${h.pod})` : `stale (${STALE_TEXT[h.staleBecause!]})`}`).join(', '),
  ]);
  const leases = report.holders;
  const scope = `namespace ${report.leaseScope}`;
  return [
    table([['OBJECT', 'STATE', 'HOLDERS'], ...rows]),
    `\nholder Leases (${scope}):\n`,
    leases.length === 0
      ? '  none\n'
      : table([
          ['LEASE', 'POD', 'STATE', 'RENEWED', 'GUARDS'],
          ...leases.map((l) => [
            `${l.namespace}/${l.name}`,
            l.pod ?? '-',
            l.live ? 'live' : `stale (${STALE_TEXT[l.staleBecause!]})`,
            l.renewTime ?? '-',
            l.guards.join(',') || '-',
          ]),
        ]),
  ].join('');
}

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join('  ')).join('\n') + '\n';
}
