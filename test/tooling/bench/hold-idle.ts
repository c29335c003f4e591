// What the hold costs at idle: the Kubernetes API calls per minute of one
// drainguard run with the guard alone and with the guard and the hold, counted
// by the fault proxy in front of the control plane (test/support/faultproxy,
// nothing injected: it forwards and records), and drainguard's RSS after the
// window. The pod is a Deployment's (its ReplicaSet's) on the run's control
// plane, Pending: the hold finds its Deployment through it, and drainguard
// runs here as the pod's container would. Run after `npm run build`:
//
//   node test/tooling/bench/hold-idle.ts [--seconds N]     (default 120 per case)

import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { useCluster } from '../../support/cluster/index.ts';
import { startFaultProxy } from '../../support/faultproxy/index.ts';
import { runFileEndHooks } from '../../support/file-end.ts';
import { Proc } from '../../support/proc.ts';
import { MiB } from '../../support/stats.ts';
import { rssOf } from './lib/mem.ts';
import { EXE, NODE } from './lib/paths.ts';

const { values } = parseArgs({ options: { seconds: { type: 'string', default: '120' } } });
const seconds = Number(values.seconds);
/** Startup calls (Lease, finalizers, the hold's lookup and first list) are not idle. */
const WARM_UP_MS = 5_000;

const cluster = await useCluster();
const proxy = await startFaultProxy(cluster);
const { name: ns } = await cluster.namespace('hold-idle');
await cluster.serviceAccount(ns, 'op');
await cluster.grant(ns, 'op', `${ns}-op`, [{ apiGroups: ['*'], resources: ['*'], verbs: ['*'] }], { clusterWide: true });
await cluster.create({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'op', namespace: ns },
  spec: {
    replicas: 1,
    selector: { matchLabels: { app: 'op' } },
    template: { metadata: { labels: { app: 'op' } }, spec: { serviceAccountName: 'op', containers: [{ name: 'manager', image: 'x' }] } },
  },
});
const pod = await cluster.waitFor(async () => (await cluster.api.list(`/api/v1/namespaces/${ns}/pods`))[0], 20_000, 'the pod');
const kubeconfig = cluster.kubeconfigFor(await cluster.token(ns, 'op', { pod: { name: pod.metadata.name, uid: pod.metadata.uid } }), {
  server: proxy.url,
});

interface Case {
  readonly name: string;
  readonly callsPerMinute: number;
  readonly byVerb: Record<string, number>;
  readonly watchesOpened: number;
  readonly rssMiB: number;
}

async function measure(name: string, env: Record<string, string>): Promise<Case> {
  const p = new Proc(
    EXE,
    ['run', '--', NODE, '-e', 'setInterval(() => {}, 1 << 30)'],
    {
      KUBECONFIG: kubeconfig,
      DRAINGUARD_POD_NAME: pod.metadata.name,
      DRAINGUARD_POD_NAMESPACE: ns,
      DRAINGUARD_POD_UID: pod.metadata.uid,
      DRAINGUARD_GUARD: `clusterrole/${ns}-op`,
      ...env,
    },
    { detached: true },
  );
  const log = () => p.stderr.join('\n');
  const started = performance.now();
  await sleep(WARM_UP_MS);
  const from = performance.now();
  await sleep(seconds * 1000);
  const to = performance.now();
  if (p.exitedAt !== undefined) throw new Error(`${name}: drainguard exited early (${JSON.stringify(await p.exit())}):\n${log()}`);
  const rss = rssOf(p.pid).rss / MiB;
  p.kill('SIGTERM');
  await p.exit(30_000);
  const mine = proxy.requests.filter((r) => r.at >= started);
  const idle = mine.filter((r) => r.at >= from && r.at < to);
  const byVerb: Record<string, number> = {};
  for (const r of idle) byVerb[`${r.verb} ${r.resource ?? r.path}`] = (byVerb[`${r.verb} ${r.resource ?? r.path}`] ?? 0) + 1;
  if (!log().includes('guard released')) throw new Error(`${name}: drainguard did not release:\n${log()}`);
  if (env.DRAINGUARD_HOLD && !log().includes('hold set')) throw new Error(`${name}: the hold was not set:\n${log()}`);
  return {
    name,
    callsPerMinute: Math.round((idle.length / ((to - from) / 60_000)) * 10) / 10,
    byVerb,
    watchesOpened: mine.filter((r) => r.verb === 'watch').length,
    rssMiB: Math.round(rss * 10) / 10,
  };
}

try {
  const results = [await measure('guard', {}), await measure('guard + hold', { DRAINGUARD_HOLD: 'widgets.example.com' })];
  console.log(
    `hold idle cost, ${seconds} s after a ${WARM_UP_MS / 1000} s warm-up, lease duration 60 s (renewal every 20 s), watch timeoutSeconds 300`,
  );
  for (const r of results) {
    console.log(
      `  ${r.name.padEnd(14)} ${String(r.callsPerMinute).padStart(5)} calls/min  RSS ${r.rssMiB} MiB  watches opened ${r.watchesOpened}  idle calls: ${JSON.stringify(r.byVerb)}`,
    );
  }
} finally {
  await runFileEndHooks();
}
