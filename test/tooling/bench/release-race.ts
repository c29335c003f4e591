// How often the last holder's release leaves a finalizer behind, on the real
// control plane (test/support/cluster) with the CPU kept busy: the uninstall
// of docs/guard.md "The release order", many times over. Each release: an
// operator install as test/guard/cluster.ts lays it out (its own namespace and
// ServiceAccount, the operator's ClusterRole and binding, drainguard's own
// ClusterRole, Role and bindings, all seven guarded) and two holder pods, as in
// a rolling update; the first leaves (its pod deleted, SIGTERM, released), then
// the operator's objects are deleted as `helm uninstall` does (drainguard's own
// RBAC kept; with --delete-own deleted too, as an uninstall that ignores
// helm.sh/resource-policy: keep, or `kubectl delete -f` of everything) and the
// second stops: its copies of the objects are stale (the first one's finalizer
// went since). Every object the uninstall deleted must then be gone within 15 s
// (what the release pinned goes after it, by the garbage collector), no
// finalizer of either pod left, and no release anchor.
//
//   node test/tooling/bench/release-race.ts [--releases N] [--concurrency N] [--busy N] [--delete-own] [--jitter MS]
//
// --jitter MS holds each of the last holder's finalizer removals at the fault
// proxy for a random 0..MS ms before the API server gets it: the spread a busy
// machine puts between requests sent together, which an in-process API server
// (the stand-in) does not have of its own.
//
// With --helm, each release is the example operator's chart instead
// (deploy/helm/example-operator, native sidecar; its pods run by the kubelet
// stand-in): helm install --wait, then helm uninstall [--wait] --timeout 60s,
// with its pre-delete hook or without (--no-predelete), one at a time (the
// chart's cluster-scoped names are fixed); what is counted is helm's exit
// status, drainguard's partial releases, and what of the release is left.
//
//   node test/tooling/bench/release-race.ts --helm [--wait] [--no-predelete] [--hold] [--releases N] [--busy N]
//
// --hold sets the chart's drainguard.hold.kinds to the example's two kinds.
//
// A private control plane is started (and stopped) for the run (after npm run build).

import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { finalizer, withCluster } from '../../guard/cluster.ts';
import { EXAMPLE, cleanupCharts, stageChart } from '../../helm/support/charts.ts';
import { GROUP, RBAC, holdersOf, images, releaseRbac, strip } from '../../helm/support/example.ts';
import { useCluster } from '../../support/cluster/index.ts';
import type { ProxiedRequest } from '../../support/faultproxy/index.ts';
import { runFileEndHooks } from '../../support/file-end.ts';
import { helmRun } from '../../support/helm.ts';
import { Kubelet } from '../../support/kubelet/index.ts';
import { percentile } from '../../support/stats.ts';

const { values } = parseArgs({
  options: {
    releases: { type: 'string', default: '100' },
    concurrency: { type: 'string', default: '3' },
    busy: { type: 'string', default: '3' },
    'delete-own': { type: 'boolean', default: false },
    jitter: { type: 'string', default: '0' },
    helm: { type: 'boolean', default: false },
    wait: { type: 'boolean', default: false },
    'no-predelete': { type: 'boolean', default: false },
    hold: { type: 'boolean', default: false },
  },
});
const releases = Number(values.releases);
const concurrency = values.helm ? 1 : Number(values.concurrency);
const busyLoops = Number(values.busy);
const jitterMs = Number(values.jitter);

const cluster = await useCluster();
// On the stand-in the authorizer's lag is the stand-in's (INFORMER_LAG_MS), not the real one's: the
// figures say which control plane they are of, and --jitter supplies the spread a busy machine has.
const plane = `Kubernetes ${cluster.release}`;
process.stdout.write(`on ${plane}\n`);
// The load: busy loops beside the control plane and drainguard, as on a busy node.
const busy = Array.from({ length: busyLoops }, () => spawn(process.execPath, ['-e', 'for (;;);'], { stdio: 'ignore' }));

interface Outcome {
  readonly left: string[];
  readonly releaseMs?: number;
  readonly failed?: string;
  /** --helm: helm uninstall's exit status and time, and the custom resources it left. */
  readonly helm?: { readonly code: number | null; readonly ms: number; readonly stuck: string[] };
}

const chart = values.helm ? stageChart(EXAMPLE) : '';
const admin = ['--kubeconfig', cluster.adminKubeconfig];

async function helmUninstall(): Promise<Outcome> {
  const ns = await cluster.namespace('race-helm');
  const access = {
    server: cluster.url,
    ca: cluster.ca,
    cert: readFileSync(cluster.state.adminCert, 'utf8'),
    key: readFileSync(cluster.state.adminKey, 'utf8'),
  };
  const kubelet = await Kubelet.start({ cluster: access, namespaces: [ns.name], images });
  try {
    const predelete = values['no-predelete'] ? ['--set', 'drainguard.predelete.enabled=false'] : [];
    const hold = values.hold
      ? ['--set', `drainguard.hold.kinds={${['installations', 'apiservers'].map((p) => `${p}.${GROUP.split('/')[2]}`).join(',')}}`]
      : [];
    const installed = await helmRun(
      ['install', 'ex', chart, '-n', ns.name, '--wait', '--timeout', '90s', ...predelete, ...hold, ...admin],
      150_000,
    );
    if (installed.code !== 0) throw new Error(`helm install: ${installed.stderr}`);
    await cluster.waitFor(
      async () => holdersOf(await cluster.api.get(`${RBAC}/clusterrolebindings/example-operator`)).length > 0,
      60_000,
      'the guard set',
    );
    const t0 = Date.now();
    const r = await helmRun(['uninstall', 'ex', '-n', ns.name, ...(values.wait ? ['--wait'] : []), '--timeout', '60s', ...admin], 150_000);
    const ms = Date.now() - t0;
    await cluster.emptied(`/api/v1/namespaces/${ns.name}/pods`, 'pod', 60_000).catch(() => {});
    const left = (
      await Promise.all(
        releaseRbac(ns.name).map(async (path) => ((await cluster.api.get(path)) ? path.split('/').slice(-2).join('/') : undefined)),
      )
    ).filter((x) => x !== undefined);
    const stuck = (
      await Promise.all(
        ['installations', 'apiservers'].map(async (p) => ((await cluster.api.get(`${GROUP}/${p}/default`)) ? p : undefined)),
      )
    ).filter((x) => x !== undefined);
    const logs = kubelet.events.filter((e) => e.proc && e.container === 'drainguard').flatMap((e) => e.proc!.logs());
    const released = logs.find((l) => l.msg === 'guard released' || l.msg.startsWith('guard released in part'));
    const partial = logs.find((l) => l.msg.startsWith('guard released in part'));
    return {
      left,
      releaseMs: released?.durationMs as number | undefined,
      ...(partial && { failed: String(partial.failed) }),
      ...(r.code !== 0 && !partial && { failed: `helm: ${r.stderr.trim().split('\n').pop()}` }),
      helm: { code: r.code, ms, stuck },
    };
  } finally {
    await helmRun(['uninstall', 'ex', '-n', ns.name, '--no-hooks', '--ignore-not-found', ...admin], 60_000);
    await strip(cluster, ns.name);
    await kubelet.stop();
    await ns.delete();
  }
}

async function once(): Promise<Outcome> {
  let outcome: Outcome = { left: [] };
  await withCluster(
    async (c) => {
      const first = await c.pod('op-a', 30);
      const pod = await c.pod('op-b', 30);
      const pa = await c.run(first, { DRAINGUARD_LOG_LEVEL: 'info' }, ['sleep', '600']);
      const p = await c.run(pod, { DRAINGUARD_LOG_LEVEL: 'info' }, ['sleep', '600']);
      const holding = async (q: { uid: string }) =>
        Object.values(await c.holders()).filter((h) => h.includes(finalizer(q))).length === c.objects.length;
      await c.cluster.waitFor(async () => (await holding(first)) && (await holding(pod)), 30_000, 'both guards set');
      await c.deletePod(first.name);
      pa.kill('SIGTERM');
      await pa.exit(40_000);
      await c.finishPod(first.name);
      await c.deletePod(pod.name);
      await c.uninstall({ own: values['delete-own'] });
      if (jitterMs > 0) {
        const removal = (r: ProxiedRequest) =>
          r.user === `system:serviceaccount:${c.ns}:op` && r.verb === 'patch' && r.contentType === 'application/strategic-merge-patch+json';
        for (let k = 0; k < c.objects.length; k++)
          c.proxy!.rule({ match: removal, times: 1, delayMs: Math.round(Math.random() * jitterMs) });
      }
      p.kill('SIGTERM');
      await p.exit(40_000);
      // What the uninstall deleted must go, a pinned object by the garbage collector after the release; and the anchors with it.
      const own = c.ownList.split(',');
      const deleted = c.objects.filter((o) => values['delete-own'] || !own.includes(o.guard));
      const present = async () => (await Promise.all(deleted.map(async (o) => ((await c.cluster.api.get(o.path)) ? o.guard : [])))).flat();
      const anchors = async () =>
        (await Promise.all([first, pod].map(async (q) => ((await c.anchor(q)) ? `anchor of ${q.name}` : [])))).flat();
      await c.cluster
        .waitFor(async () => (await present()).length === 0 && (await anchors()).length === 0, 15_000, 'what the uninstall deleted gone')
        .catch(() => {});
      const held = Object.entries(await c.holders())
        .filter(([, h]) => h.includes(finalizer(pod)) || h.includes(finalizer(first)))
        .map(([o]) => o);
      const left = [...new Set([...held, ...(await present()), ...(await anchors())])];
      const released = p.logs().find((l) => l.msg === 'guard released' || l.msg.startsWith('guard released in part'));
      const pinned = p.logs().find((l) => l.msg.startsWith('no safe order'));
      outcome = {
        left,
        releaseMs: released?.durationMs as number | undefined,
        ...(left.length > 0 && {
          failed: `${String(released?.failed ?? released?.msg)}${pinned ? `; not pinned: ${String(pinned.notPinned)}` : '; no pin'}`,
        }),
      };
      await c.finishPod(pod.name);
      // What a failed release left: removed as the post-delete hook would, so the namespace can go.
      for (const o of c.objects) await c.cluster.api.patch(o.path, { metadata: { finalizers: null } }).catch(() => {});
    },
    { cluster, proxy: jitterMs > 0 },
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
        outcomes.push(await (values.helm ? helmUninstall() : once()));
        if (outcomes.length % 10 === 0) process.stdout.write(`  ${outcomes.length}/${releases}\n`);
      }
    }),
  );
} finally {
  for (const b of busy) b.kill('SIGKILL');
}
const stuck = outcomes.filter((o) => o.left.length > 0 || o.failed !== undefined);
const times = outcomes.flatMap((o) => (o.releaseMs === undefined ? [] : [o.releaseMs]));
if (values.helm) {
  const how = `helm uninstall${values.wait ? ' --wait' : ''}, ${values['no-predelete'] ? 'no pre-delete hook' : 'pre-delete hook'}${values.hold ? ', the hold' : ''}`;
  const failed = outcomes.filter((o) => o.helm!.code !== 0);
  const partial = outcomes.filter((o) => o.failed !== undefined && !o.failed.startsWith('helm: '));
  const helmMs = outcomes.map((o) => o.helm!.ms);
  process.stdout.write(
    `${outcomes.length} x ${how}, ${busyLoops} busy loops, in ${Math.round((Date.now() - t0) / 1000)} s: helm exited non-zero ${failed.length} times; ` +
      `drainguard released in part ${partial.length} times; the release's RBAC left ${outcomes.filter((o) => o.left.length > 0).length} times; ` +
      `custom resources left ${outcomes.filter((o) => o.helm!.stuck.length > 0).length} times; uninstall p50 ${percentile(helmMs, 50)} ms, max ${Math.max(...helmMs)} ms\n`,
  );
  for (const o of outcomes.filter((x) => x.left.length > 0 || x.failed !== undefined || x.helm!.stuck.length > 0)) {
    process.stdout.write(`  exit ${o.helm!.code}, left ${[...o.left, ...o.helm!.stuck].join(', ') || 'nothing'}: ${o.failed ?? ''}\n`);
  }
  cleanupCharts();
  await runFileEndHooks();
  process.exit(0);
}
process.stdout.write(
  `${outcomes.length} releases in ${Math.round((Date.now() - t0) / 1000)} s, ${concurrency} at a time, ${busyLoops} busy loops${jitterMs > 0 ? `, removals spread over 0-${jitterMs} ms` : ''}${values['delete-own'] ? ", drainguard's own RBAC deleted too" : ''}: ` +
    `${stuck.length} left a finalizer; release p50 ${percentile(times, 50)} ms, p99 ${percentile(times, 99)} ms, max ${Math.max(...times)} ms\n`,
);
for (const s of stuck) process.stdout.write(`  left on ${s.left.join(', ')}: ${s.failed}\n`);
// The private control plane and what the installs made.
await runFileEndHooks();
process.exit(0);
