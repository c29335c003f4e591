// CPU profiles of drainguard, for finding out where its time goes:
//   node test/tooling/bench/profile.ts start            drainguard run -- /bin/true
//   node test/tooling/bench/profile.ts drain            a drain: SIGTERM → drain → drained → stop signal → exit
//   node test/tooling/bench/profile.ts fanout [N]       the same with N clients (default 1000)
// The bundle dist/drainguard.cjs runs on this Node.js with --cpu-prof (the
// executable takes no Node.js flags); profiles go to a fresh directory and
// the functions that took the most time, self and inclusive, are printed.
// RUNS (8) and INTERVAL (50, microseconds between samples) in the environment
// change how many runs are profiled and how finely. The runtime gets the
// executable's own V8 flags (its young generation: no collection at start).
// Without the executable's code cache, compiling the bundle shows up in
// `start` where the executable mostly reads its cache instead.

import { mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { transformSync } from 'esbuild';
import { EXEC_ARGV } from '../../../sidecar/build/sea.ts';
import { Proc } from '../../support/proc.ts';
import { NODE, ROOT, fixture } from './lib/paths.ts';

const [scenario = 'drain', arg] = process.argv.slice(2);
const RUNS = Number(process.env.RUNS ?? 8);
const dir = mkdtempSync(join(tmpdir(), 'drainguard-profile-'));
// The preload as JavaScript: a .ts file would have Node load its TypeScript stripper, in the profile.
const preload = join(dir, 'no-sigprof.mjs');
writeFileSync(
  preload,
  transformSync(readFileSync(join(ROOT, 'test/tooling/bench/lib/no-sigprof.ts'), 'utf8'), { loader: 'ts', format: 'esm' }).code,
);
const flags = [...EXEC_ARGV, '--import', preload, '--cpu-prof', '--cpu-prof-dir', dir, '--cpu-prof-interval', process.env.INTERVAL ?? '50'];
const bundle = process.env.BUNDLE ?? join(ROOT, 'dist/drainguard.cjs');

for (let i = 0; i < RUNS; i++) {
  if (scenario === 'start') {
    await new Proc(NODE, [...flags, bundle, 'run', '--', '/bin/true'], {}, { detached: true }).exit(30_000);
    continue;
  }
  const n = scenario === 'fanout' ? Number(arg ?? 1000) : 0;
  const child = n > 0 ? [fixture('clients.ts')] : [fixture('operator.ts')];
  const env = n > 0 ? { BENCH_CLIENTS: String(n) } : { BENCH_MODE: 'latency' };
  const p = new Proc(NODE, [...flags, bundle, 'run', '--', NODE, ...child], env, { detached: true });
  let ready = 0;
  p.onLine((l) => l.startsWith('ready ') && (ready += n > 0 ? Number(l.split(' ')[1]) : 1));
  while (ready < Math.max(n, 1)) await delay(20);
  await delay(300);
  p.kill('SIGTERM');
  await p.exit(30_000);
}

// Only what happened after the last stretch of idleness of 100 ms or more: the
// scenario itself, not the start before it (except for `start`).
const self = new Map<string, number>();
const inclusive = new Map<string, number>();
let totalUs = 0;
const files = readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'));
for (const file of files) {
  const profile = JSON.parse(readFileSync(join(dir, file), 'utf8')) as {
    nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] }[];
    samples: number[];
    timeDeltas: number[];
  };
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const name = (id: number) => {
    const f = byId.get(id)!.callFrame;
    return `${f.functionName || '(anonymous)'} ${f.url.split('/').pop()}:${f.lineNumber + 1}`;
  };
  let t = 0;
  let from = 0;
  let idleSince: number | undefined;
  profile.samples.forEach((id, i) => {
    t += profile.timeDeltas[i]!;
    if (byId.get(id)!.callFrame.functionName === '(idle)') idleSince ??= t;
    else {
      if (scenario !== 'start' && idleSince !== undefined && t - idleSince > 100_000) from = i;
      idleSince = undefined;
    }
  });
  profile.samples.forEach((id, i) => {
    if (i < from || byId.get(id)!.callFrame.functionName === '(idle)') return;
    const dt = profile.timeDeltas[i]!;
    totalUs += dt;
    self.set(name(id), (self.get(name(id)) ?? 0) + dt);
    const seen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const k = name(cur);
      if (!seen.has(k)) inclusive.set(k, (inclusive.get(k) ?? 0) + dt);
      seen.add(k);
    }
  });
}
const top = (m: Map<string, number>, count: number) =>
  [...m]
    .sort((a, b) => b[1] - a[1])
    .slice(0, count)
    .map(([k, us]) => `${(us / files.length / 1000).toFixed(2).padStart(8)} ms  ${k}`)
    .join('\n');
process.stdout.write(
  `${files.length} profiles in ${dir}; busy ${(totalUs / files.length / 1000).toFixed(1)} ms per run (sampling inflates it)\n`,
);
process.stdout.write(`\nself time\n${top(self, 25)}\n\ninclusive time\n${top(inclusive, 40)}\n`);
