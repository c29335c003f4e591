// The Kubernetes API calls the guard makes at start and at release, for the
// five objects of a typical operator install, and how long each took, on the
// real control plane (test/support/cluster: etcd, kube-apiserver and
// kube-controller-manager, RBAC on), counted by the fault proxy's request log
// (test/support/faultproxy, nothing injected: it only forwards and records).
// Run after `npm run build`:
//
//   node test/tooling/bench/guard-calls.ts [--runs N] [--uninstall]
//
// --uninstall deletes the install (background propagation) before the release,
// as `helm uninstall` does; by default the objects stay (a rolling update).
// A private control plane is started (and stopped) for the run; each run gets
// an install of its own (test/guard/cluster.ts: namespace, ServiceAccount, a
// ClusterRole and binding, a Role and binding, a Pod with a token bound to it).

import { parseArgs } from 'node:util';
import { type Install, finalizer, withCluster } from '../../guard/cluster.ts';
import { useCluster } from '../../support/cluster/index.ts';
import type { Recorded } from '../../support/faultproxy/index.ts';
import { runFileEndHooks } from '../../support/file-end.ts';
import type { LogLine } from '../../support/proc.ts';
import { median } from '../../support/stats.ts';

const { values } = parseArgs({ options: { runs: { type: 'string', default: '5' }, uninstall: { type: 'boolean', default: false } } });
const runs = Number(values.runs);
/** How the guarded objects are named in what is printed: each run's namespace and cluster-scoped names are unique. */
const GUARD = ['clusterrole/NAME', 'clusterrolebinding/NAME', 'role/NS/op-leases', 'rolebinding/NS/op-leases', 'serviceaccount/NS/op'].join(
  ',',
);

interface Call {
  key: string;
  status: number;
  /** As drainguard saw it (its debug log), and as the proxy in front of the server did. */
  clientMs: number;
  serverMs: number;
}

interface Phase {
  calls: Call[];
  /** From the first call to the last answer, on the proxy's clock. */
  spanMs: number;
}

/** A path with what differs between runs (UIDs, the namespace, the cluster-scoped name) made the same. */
const short = (c: Install, path: string) =>
  path
    .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, 'UID')
    .replaceAll(c.name, 'NAME')
    .replaceAll(c.ns, 'NS');

function phase(c: Install, calls: Recorded[], logged: LogLine[]): Phase {
  const start = Math.min(...calls.map((r) => r.at));
  const end = Math.max(...calls.map((r) => r.at + (r.durationMs ?? 0)));
  const pending = [...logged];
  return {
    spanMs: Math.round(end - start),
    calls: calls.map((r) => {
      // drainguard logs the path with its query; the proxy records it without.
      const i = pending.findIndex((l) => l.method === r.method && String(l.path).split('?')[0] === r.path);
      const client = i >= 0 ? pending.splice(i, 1)[0] : undefined;
      return {
        key: `${r.method} ${short(c, r.path)}`,
        status: r.status,
        serverMs: r.durationMs ?? NaN,
        clientMs: (client?.durationMs as number | undefined) ?? NaN,
      };
    }),
  };
}

const cluster = await useCluster();

async function once(): Promise<{ start: Phase; release: Phase; releaseLogMs: number }> {
  let result: { start: Phase; release: Phase; releaseLogMs: number } | undefined;
  await withCluster(
    async (c) => {
      const proxy = c.proxy!;
      const user = `system:serviceaccount:${c.ns}:op`;
      const pod = await c.pod('op-0');
      const p = await c.run(pod, { FIXTURE_CLEANUP_CALLS: '0' });
      await cluster.waitFor(async () => Object.values(await c.holders()).every((h) => h.includes(finalizer(pod))), 15_000, 'guard set');
      await p.line('ready');
      // drainguard's calls, each once it was answered (the fixture operator's own go to configmaps).
      const guardCalls = () => proxy.requests.filter((r) => r.user === user && r.resource !== 'configmaps');
      await cluster.waitFor(() => guardCalls().every((r) => r.done), 10_000, 'the start calls answered');
      const atStart = guardCalls();
      if (values.uninstall) {
        await c.deletePod('op-0');
        await c.uninstall();
      }
      p.kill('SIGTERM');
      await p.exit();
      const released = p.logs().find((l) => l.msg === 'guard released');
      if (!released) throw new Error(`release incomplete:\n${p.stderr.join('\n')}`);
      await cluster.waitFor(() => guardCalls().every((r) => r.done), 10_000, 'the release calls answered');
      const atRelease = guardCalls().slice(atStart.length);
      const logged = p.logs().filter((l) => l.msg === 'Kubernetes API call');
      result = {
        start: phase(c, atStart, logged.slice(0, atStart.length)),
        release: phase(c, atRelease, logged.slice(atStart.length)),
        releaseLogMs: released.durationMs as number,
      };
      // The kubelet's last step (there is none here): the Pod goes, and its namespace can.
      await c.finishPod('op-0');
    },
    { proxy: true, cluster },
  );
  return result!;
}

function print(name: string, phases: Phase[]): void {
  const first = phases[0]!;
  process.stdout.write(
    `\n${name}: ${first.calls.length} calls; span from first call to last answer: median ${median(phases.map((p) => p.spanMs))} ms over ${phases.length} runs (${phases.map((p) => p.spanMs).join(', ')})\n`,
  );
  process.stdout.write(`  ${'call (in the order sent in the first run)'.padEnd(92)} status  ms drainguard / proxy (medians)\n`);
  const seen = new Map<string, number>();
  for (const call of first.calls) {
    // The n-th call of a kind is compared with the n-th of the same kind in every run.
    const n = seen.get(call.key) ?? 0;
    seen.set(call.key, n + 1);
    const same = phases.flatMap((p) => p.calls.filter((c) => c.key === call.key)[n] ?? []);
    process.stdout.write(
      `  ${call.key.padEnd(92)} ${String(call.status).padEnd(6)}  ${median(same.map((c) => c.clientMs))} / ${median(same.map((c) => c.serverMs))}\n`,
    );
  }
}

try {
  const results = [];
  for (let i = 0; i < runs; i++) results.push(await once());
  process.stdout.write(
    `drainguard guard API calls, ${GUARD.split(',').length} guarded objects (${GUARD}), ${values.uninstall ? 'uninstall' : 'objects kept'}, on Kubernetes ${cluster.release}\n`,
  );
  print(
    'start (pod read, Lease, finalizers)',
    results.map((r) => r.start),
  );
  print(
    'release (after the operator stopped)',
    results.map((r) => r.release),
  );
  process.stdout.write(
    `\nrelease as drainguard logged it ("guard released" durationMs): median ${median(results.map((r) => r.releaseLogMs))} ms (${results.map((r) => r.releaseLogMs).join(', ')})\n`,
  );
} finally {
  // The private control plane and its temporary files.
  for (const err of await runFileEndHooks()) process.stderr.write(`cleanup: ${String(err)}\n`);
}
