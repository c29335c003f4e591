// The Kubernetes API calls the guard makes at start and at release, for the
// five objects of a typical operator install, and how long each took, against
// the test API server (HTTPS on 127.0.0.1). Run after `npm run build`:
//
//   node bench/guard-calls.ts [--runs N] [--uninstall]
//
// --uninstall deletes the install (background propagation) before the release,
// as `helm uninstall` does; by default the objects stay (a rolling update).

import { parseArgs } from 'node:util';
import type { RecordedRequest } from '../test/support/apiserver/index.ts';
import type { LogLine } from '../test/support/proc.ts';
import { GUARD, NS, startCluster, uninstall } from '../test/reliability/support/fake-cluster.ts';

const { values } = parseArgs({ options: { runs: { type: 'string', default: '5' }, uninstall: { type: 'boolean', default: false } } });
const runs = Number(values.runs);
const USER = `system:serviceaccount:${NS}:op`;

interface Call {
  key: string;
  status: number;
  /** As drainguard saw it (its debug log), and as the server did. */
  clientMs: number;
  serverMs: number;
}

interface Phase {
  calls: Call[];
  /** From the first call to the last answer, on the server's clock. */
  spanMs: number;
}

const short = (path: string) => path.replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, 'UID');

function phase(calls: RecordedRequest[], logged: LogLine[]): Phase {
  const start = Math.min(...calls.map((c) => c.at));
  const end = Math.max(...calls.map((c) => c.at + c.durationMs));
  const pending = [...logged];
  return {
    spanMs: Math.round(end - start),
    calls: calls.map((c) => {
      const i = pending.findIndex((l) => l.method === c.method && l.path === c.path);
      const [client] = pending.splice(i, 1);
      return { key: `${c.method} ${short(c.path)}`, status: c.status, serverMs: c.durationMs, clientMs: client?.durationMs as number };
    }),
  };
}

async function once(): Promise<{ start: Phase; release: Phase; releaseLogMs: number }> {
  const c = await startCluster();
  try {
    const pod = c.pod('op-0');
    const p = c.run(pod, { FIXTURE_CLEANUP_CALLS: '0' });
    const fin = `drainguard.dev/holder-${pod.uid}`;
    await c.api.waitFor(() => Object.values(c.holders()).every((h) => h.includes(fin)), 15_000, 'guard set');
    await p.line('ready');
    const guardCalls = () => c.api.requests.filter((r) => r.user === USER && r.resource !== 'configmaps');
    const atStart = guardCalls();
    if (values.uninstall) {
      c.api.delete('v1', 'pods', NS, 'op-0');
      uninstall(c);
    }
    p.kill('SIGTERM');
    await p.exit();
    const released = p.logs().find((l) => l.msg === 'guard released');
    if (!released) throw new Error(`release incomplete:\n${p.stderr.join('\n')}`);
    const atRelease = guardCalls().slice(atStart.length);
    const logged = p.logs().filter((l) => l.msg === 'Kubernetes API call');
    return { start: phase(atStart, logged.slice(0, atStart.length)), release: phase(atRelease, logged.slice(atStart.length)), releaseLogMs: released.durationMs as number };
  } finally {
    await c.close();
  }
}

const results = [];
for (let i = 0; i < runs; i++) results.push(await once());

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
function print(name: string, phases: Phase[]): void {
  const first = phases[0]!;
  process.stdout.write(`\n${name}: ${first.calls.length} calls; span from first call to last answer: median ${median(phases.map((p) => p.spanMs))} ms over ${phases.length} runs (${phases.map((p) => p.spanMs).join(', ')})\n`);
  process.stdout.write(`  ${'call (in the order sent in the first run)'.padEnd(92)} status  ms drainguard / server (medians)\n`);
  for (const call of first.calls) {
    const same = phases.map((p) => p.calls.find((c) => c.key === call.key)!);
    process.stdout.write(`  ${call.key.padEnd(92)} ${String(call.status).padEnd(6)}  ${median(same.map((c) => c.clientMs))} / ${median(same.map((c) => c.serverMs))}\n`);
  }
}

process.stdout.write(`drainguard guard API calls, ${GUARD.split(',').length} guarded objects (${GUARD}), ${values.uninstall ? 'uninstall' : 'objects kept'}\n`);
print('start (pod read, Lease, finalizers)', results.map((r) => r.start));
print('release (after the operator stopped)', results.map((r) => r.release));
process.stdout.write(`\nrelease as drainguard logged it ("guard released" durationMs): median ${median(results.map((r) => r.releaseLogMs))} ms (${results.map((r) => r.releaseLogMs).join(', ')})\n`);
