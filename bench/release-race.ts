// How often the last holder's release leaves a finalizer behind, on the real
// control plane (test/support/cluster) with the CPU kept busy: the uninstall
// of docs/guard.md "The release order", many times over. Each release: an
// operator install as test/guard/cluster.ts lays it out (its own namespace and
// ServiceAccount, the operator's ClusterRole and binding, drainguard's own
// ClusterRole, Role and bindings, all seven guarded) and two holder pods, as in
// a rolling update; the first leaves (its pod deleted, SIGTERM, released), then
// the operator's objects are deleted as `helm uninstall` does (drainguard's own
// RBAC kept; with --delete-own deleted too, as an uninstall that ignores
// helm.sh/resource-policy: keep) and the second stops: its copies of the
// objects are stale (the first one's finalizer went since). Every object the
// uninstall deleted must then be gone, and no finalizer of either pod left.
//
//   node bench/release-race.ts [--releases N] [--concurrency N] [--busy N] [--delete-own]
//
// A private control plane is started (and stopped) for the run.

import { spawn } from 'node:child_process';
import { parseArgs } from 'node:util';
import { finalizer, withCluster } from '../test/guard/cluster.ts';
import { useCluster } from '../test/support/cluster/index.ts';
import { runFileEndHooks } from '../test/support/file-end.ts';
import { percentile } from './lib/stats.ts';

const { values } = parseArgs({
  options: {
    releases: { type: 'string', default: '100' },
    concurrency: { type: 'string', default: '3' },
    busy: { type: 'string', default: '3' },
    'delete-own': { type: 'boolean', default: false },
  },
});
const releases = Number(values.releases);
const concurrency = Number(values.concurrency);
const busyLoops = Number(values.busy);

const cluster = await useCluster();
if (cluster.tier !== 'real') {
  // The race is the real authorizer's: on the stand-in the figure would be the stand-in's informer lag.
  process.stderr.write('bench/release-race.ts measures the real authorizer: run it with KUBEBUILDER_ASSETS (test/support/cluster/README.md), not on the stand-in\n');
  await runFileEndHooks();
  process.exit(2);
}
// The load: busy loops beside the control plane and drainguard, as on a busy node.
const busy = Array.from({ length: busyLoops }, () => spawn(process.execPath, ['-e', 'for (;;);'], { stdio: 'ignore' }));

interface Outcome {
  readonly left: string[];
  readonly releaseMs?: number;
  readonly failed?: string;
}

async function once(): Promise<Outcome> {
  let outcome: Outcome = { left: [] };
  await withCluster(
    async (c) => {
      const first = await c.pod('op-a', 30);
      const pod = await c.pod('op-b', 30);
      const pa = await c.run(first, { DRAINGUARD_LOG_LEVEL: 'info' }, ['sleep', '600']);
      const p = await c.run(pod, { DRAINGUARD_LOG_LEVEL: 'info' }, ['sleep', '600']);
      const holding = async (q: { uid: string }) => Object.values(await c.holders()).filter((h) => h.includes(finalizer(q))).length === c.objects.length;
      await c.cluster.waitFor(async () => (await holding(first)) && (await holding(pod)), 30_000, 'both guards set');
      await c.deletePod(first.name);
      pa.kill('SIGTERM');
      await pa.exit(40_000);
      await c.finishPod(first.name);
      await c.deletePod(pod.name);
      await c.uninstall({ own: values['delete-own'] });
      p.kill('SIGTERM');
      await p.exit(40_000);
      const left = Object.entries(await c.holders())
        .filter(([, h]) => h.includes(finalizer(pod)) || h.includes(finalizer(first)))
        .map(([o]) => o);
      const released = p.logs().find((l) => l.msg === 'guard released' || l.msg.startsWith('guard released in part'));
      outcome = { left, releaseMs: released?.durationMs as number | undefined, ...(left.length > 0 && { failed: String(released?.failed ?? released?.msg) }) };
      await c.finishPod(pod.name);
      // What a failed release left: removed as the post-delete hook would, so the namespace can go.
      for (const o of c.objects) await c.cluster.api.patch(o.path, { metadata: { finalizers: null } }).catch(() => {});
    },
    { cluster },
  );
  return outcome;
}

const outcomes: Outcome[] = [];
let next = 0;
const t0 = Date.now();
try {
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < releases) {
        next++;
        outcomes.push(await once());
        if (outcomes.length % 10 === 0) process.stdout.write(`  ${outcomes.length}/${releases}\n`);
      }
    }),
  );
} finally {
  for (const b of busy) b.kill('SIGKILL');
}
const stuck = outcomes.filter((o) => o.left.length > 0);
const times = outcomes.flatMap((o) => (o.releaseMs === undefined ? [] : [o.releaseMs]));
process.stdout.write(
  `${outcomes.length} releases in ${Math.round((Date.now() - t0) / 1000)} s, ${concurrency} at a time, ${busyLoops} busy loops${values['delete-own'] ? ", drainguard's own RBAC deleted too" : ''}: ` +
    `${stuck.length} left a finalizer; release p50 ${percentile(times, 50)} ms, p99 ${percentile(times, 99)} ms, max ${Math.max(...times)} ms\n`,
);
for (const s of stuck) process.stdout.write(`  left on ${s.left.join(', ')}: ${s.failed}\n`);
// The private control plane and what the installs made.
await runFileEndHooks();
process.exit(0);
