// Measures sidecar mode (not a test; the runner skips it):
//   node test/supervisor/sidecar-mode/measure.ts [RUNS]
// 1. idle RSS of `drainguard sidecar` (VmRSS from /proc, once it settled), as
//    started by default, after a /metrics scrape, and with Events on (client-node loaded);
// 2. time from the preStop call (spawning `drainguard prestop`) to the operator's
//    `drain` message, and from a drain request written on the socket to it.
// Each run of 2. uses a fresh sidecar: a sidecar drains once.
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { NODE, Proc, drainguard, tempDir } from '../../support/proc.ts';
import { median, percentile } from '../../support/stats.ts';
import { startSidecar } from './support.ts';

const RUNS = Number(process.argv[2] ?? 100);
const now = () => performance.timeOrigin + performance.now();
const status = (pid: number, field: string) =>
  Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]);
const rssKiB = (pid: number) => status(pid, 'VmRSS');
/** VmRSS and, of it, the private (anonymous) part: the rest is the executable's pages, shared and reclaimable. */
interface Rss {
  readonly rss: number;
  readonly anon: number;
}
const fmt = (ms: number) => `${ms.toFixed(1)} ms`;

// An operator that stamps the moment the drain message arrives, on the shared clock.
const dir = tempDir();
const operatorFile = join(dir, 'stamp-operator.ts');
writeFileSync(
  operatorFile,
  `import { DrainClient } from ${JSON.stringify(join(process.cwd(), 'src/protocol/client.ts'))};
const c = new DrainClient({ name: 'stamp' });
c.draining.addEventListener('abort', () => process.stdout.write('drain ' + (performance.timeOrigin + performance.now()) + '\\n'));
await c.ready();
process.stdout.write('ready\\n');
setInterval(() => {}, 1 << 30);
`,
);

async function idleRss(env: NodeJS.ProcessEnv, scrape: boolean): Promise<Rss> {
  const pod = await startSidecar({ DRAINGUARD_LOG_LEVEL: 'info', ...env });
  const operator = new Proc(NODE, [operatorFile], { DRAINGUARD_SOCKET: pod.socket });
  await operator.line('ready');
  if (scrape) await (await fetch(`${pod.base}/metrics`)).text();
  // Settled: the start-up garbage collected, RSS no longer moving.
  let last = 0;
  for (let i = 0; i < 20; i++) {
    await delay(500);
    const rss = rssKiB(pod.sidecar.pid);
    if (i >= 4 && Math.abs(rss - last) < 64) break;
    last = rss;
  }
  const rss = { rss: rssKiB(pod.sidecar.pid) / 1024, anon: status(pod.sidecar.pid, 'RssAnon') / 1024 };
  operator.kill('SIGKILL');
  pod.sidecar.kill('SIGTERM');
  await pod.sidecar.exit();
  return rss;
}

async function bareNodeRss(): Promise<Rss> {
  const p = spawn(NODE, ['-e', 'setInterval(() => {}, 1 << 30)'], { stdio: 'ignore' });
  await delay(3000);
  const rss = { rss: rssKiB(p.pid!) / 1024, anon: status(p.pid!, 'RssAnon') / 1024 };
  p.kill('SIGKILL');
  return rss;
}

async function drainLatency(viaProcess: boolean): Promise<number> {
  const pod = await startSidecar({ DRAINGUARD_LOG_LEVEL: 'info' });
  const operator = new Proc(NODE, [operatorFile], { DRAINGUARD_SOCKET: pod.socket });
  await operator.line('ready');
  let t0: number;
  let requester: Proc | undefined;
  if (viaProcess) {
    t0 = now();
    requester = drainguard(['prestop'], { DRAINGUARD_SOCKET: pod.socket });
  } else {
    const s = connect(pod.socket);
    await new Promise((r) => s.once('connect', r));
    t0 = now();
    s.write('{"type":"request-drain","protocol":1,"source":"measure"}\n');
    s.resume();
  }
  const stamp = Number((await operator.line(/^drain /)).split(' ')[1]);
  await requester?.exit();
  operator.kill('SIGKILL');
  pod.sidecar.kill('SIGTERM');
  await pod.sidecar.exit();
  return stamp - t0;
}

const out = (line: string) => process.stdout.write(`${line}\n`);
out(`load average at start: ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`);
out(`drainguard sidecar, idle RSS in MiB (median of 5; bare node for comparison): VmRSS (of it RssAnon)`);
const series: [string, () => Promise<Rss>][] = [
  ['bare node 24 (setInterval)', bareNodeRss],
  ['sidecar, defaults (HTTP listener on, no scrape yet)', () => idleRss({}, false)],
  ['sidecar, after one /metrics scrape', () => idleRss({}, true)],
  [
    'sidecar with Events on (pod name + kubeconfig: client-node loaded), scraped',
    () => idleRss({ DRAINGUARD_POD_NAME: 'p', DRAINGUARD_POD_NAMESPACE: 'n', KUBECONFIG: kubeconfig() }, true),
  ],
];
for (const [name, measure] of series) {
  const xs: Rss[] = [];
  for (let i = 0; i < 5; i++) xs.push(await measure());
  const rss = xs.map((x) => x.rss);
  out(
    `  ${name}: ${median(rss).toFixed(1)} (${median(xs.map((x) => x.anon)).toFixed(1)}); VmRSS min ${Math.min(...rss).toFixed(1)}, max ${Math.max(...rss).toFixed(1)}`,
  );
}

for (const [name, viaProcess] of [
  ['preStop call (spawn of drainguard prestop) -> operator has the drain message', true],
  ['drain request written on the socket -> operator has the drain message', false],
] as const) {
  const xs: number[] = [];
  for (let i = 0; i < RUNS; i++) xs.push(await drainLatency(viaProcess));
  out(
    `${name} (${RUNS} runs): p50 ${fmt(median(xs))}, p99 ${fmt(percentile(xs, 99))}, min ${fmt(Math.min(...xs))}, max ${fmt(Math.max(...xs))}`,
  );
}
process.exit(0);

function kubeconfig(): string {
  const path = join(dir, 'kubeconfig');
  // An API nobody answers on: the client is loaded, no call is made while idle.
  writeFileSync(
    path,
    'apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:1\nusers:\n- name: u\n  user:\n    token: t\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\ncurrent-context: c\n',
  );
  return path;
}
