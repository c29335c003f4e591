// Leaderless time in a rolling update: how long no operator is leader after
// the leader's pod was stopped, with drainguard's leader release off (what
// controller-runtime's default, ReleaseOnCancel off, gives: the successor waits
// out the lease duration) and on (docs/leader.md).
//
// Replicas of test/fixtures/leader-operator.ts (client-go's rules: acquire when
// the holder is empty or the Lease was last seen to change a lease duration
// ago, renew every retry period, acquire retries with client-go's jitter), each
// under `drainguard run` as its pod's container would be, on the run's control
// plane (or a private one). Two replicas run; each hand-over starts one more
// (the rolling update's surge), waits until it is a candidate, then stops the
// leader (SIGTERM to its drainguard) and measures from the old leader's exit
// (drainguard's `operator exited`) to the successor's acquisition (its `leader`
// line), both on this machine's clock.
//
//   node test/tooling/bench/leader-handover.ts [--handovers N] [--duration DUR] [--retry DUR]
//
// Defaults are client-go's and controller-runtime's: lease duration 15s, retry
// period 2s, 20 hand-overs per case (about 6 minutes, most of it the 'off'
// case). For a quick run scale both down together, e.g. --duration 3s
// --retry 400ms (the lease duration is written in whole seconds). Run after
// `npm run build`.

import { parseArgs } from 'node:util';
import { parseDuration } from '../../../src/config/duration.ts';
import { useCluster } from '../../support/cluster/index.ts';
import { runFileEndHooks } from '../../support/file-end.ts';
import { Proc } from '../../support/proc.ts';
import { percentile } from '../../support/stats.ts';
import { EXE, NODE, ROOT } from './lib/paths.ts';

const { values } = parseArgs({
  options: {
    handovers: { type: 'string', default: '20' },
    duration: { type: 'string', default: '15s' },
    retry: { type: 'string', default: '2s' },
  },
});
const handovers = Number(values.handovers);
const durationMs = parseDuration(values.duration);
const retryMs = parseDuration(values.retry);
if (
  !Number.isSafeInteger(handovers) ||
  handovers < 1 ||
  durationMs === undefined ||
  durationMs < 1000 ||
  durationMs % 1000 !== 0 ||
  retryMs === undefined ||
  retryMs <= 0
) {
  process.stderr.write('usage: node test/tooling/bench/leader-handover.ts [--handovers N] [--duration WHOLE-SECONDS] [--retry DURATION]\n');
  process.exit(2);
}
const LEADER = `${ROOT}/test/fixtures/leader-operator.ts`;

const cluster = await useCluster();
const { name: ns } = await cluster.namespace('handover');
await cluster.serviceAccount(ns, 'op');
// kubebuilder's leader-election Role: all the operator (and so drainguard, as the same ServiceAccount) may do with Leases.
await cluster.grant(ns, 'op', 'leader-election', [
  { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'] },
]);
const token = await cluster.token(ns, 'op');
const kubeconfig = cluster.kubeconfigFor(token);

interface Replica {
  readonly name: string;
  readonly proc: Proc;
}

let serial = 0;
const all: Proc[] = [];

/** One pod of the Deployment: drainguard run -- the fixture, with the pod's name as its hostname. */
function replica(lease: string, release: 'auto' | 'off'): Replica {
  const name = `op-${++serial}`;
  const proc = new Proc(EXE, ['run', '--', NODE, LEADER], {
    KUBECONFIG: kubeconfig,
    DRAINGUARD_POD_NAME: name,
    DRAINGUARD_POD_NAMESPACE: ns,
    DRAINGUARD_LEADER_LEASE: release,
    LEADER_API: cluster.url,
    LEADER_TOKEN: token,
    LEADER_CA: cluster.caFile,
    LEADER_NAMESPACE: ns,
    LEADER_LEASE: lease,
    LEADER_HOSTNAME: name,
    LEADER_DURATION_MS: String(durationMs),
    LEADER_RETRY_MS: String(retryMs),
  });
  all.push(proc);
  return { name, proc };
}

const leaderAt = (r: Replica) => Number(r.proc.stdout.find((l) => l.startsWith('leader '))!.split(' ')[2]);
const waitMs = durationMs * 2 + 10_000;

async function firstLeader(replicas: readonly Replica[]): Promise<Replica> {
  return Promise.any(replicas.map(async (r) => (await r.proc.line(/^leader /, waitMs), r)));
}

/** `handovers` hand-overs of one Lease; the leaderless time of each, in ms. */
async function measure(release: 'auto' | 'off'): Promise<{ gaps: number[]; released: number }> {
  const lease = `leader-${release}`;
  let running = [replica(lease, release), replica(lease, release)];
  let leader = await firstLeader(running);
  const gaps: number[] = [];
  let released = 0;
  for (let i = 0; i < handovers; i++) {
    // The surge: a new pod, a candidate before the old leader goes.
    const fresh = replica(lease, release);
    await fresh.proc.line(/^candidate /, 20_000);
    running = [...running, fresh];
    const old = leader;
    old.proc.kill('SIGTERM');
    await old.proc.exit(waitMs);
    const exited = Date.parse(old.proc.logs().find((l) => l.msg === 'operator exited')!.time as string);
    running = running.filter((r) => r !== old);
    leader = await firstLeader(running);
    const gap = leaderAt(leader) - exited;
    gaps.push(gap);
    const freed = old.proc.logs().some((l) => l.msg.startsWith('leader Lease released'));
    if (freed) released++;
    process.stderr.write(`  release ${release} ${i + 1}/${handovers}: ${gap} ms${freed ? ' (released by drainguard)' : ''}\n`);
  }
  for (const r of running) r.proc.kill('SIGTERM');
  await Promise.all(running.map((r) => r.proc.exit(waitMs)));
  return { gaps, released };
}

const t0 = Date.now();
const off = await measure('off');
const on = await measure('auto');
const line = (name: string, { gaps, released }: { gaps: number[]; released: number }) =>
  `  ${name.padEnd(22)} p50 ${String(percentile(gaps, 50)).padStart(6)} ms   p99 ${String(percentile(gaps, 99)).padStart(6)} ms   min ${Math.min(...gaps)} ms   max ${Math.max(...gaps)} ms   (released by drainguard: ${released}/${gaps.length})`;
process.stdout.write(
  `leaderless time per hand-over, ${handovers} hand-overs per case, lease duration ${durationMs / 1000} s, retry period ${retryMs} ms (client-go jitter 1.2 on acquire), ${Math.round((Date.now() - t0) / 1000)} s in all, Kubernetes ${cluster.release}:\n` +
    `${line('release off (before)', off)}\n${line('release on (after)', on)}\n`,
);
for (const p of all) p.killAll();
await runFileEndHooks();
process.exit(0);
