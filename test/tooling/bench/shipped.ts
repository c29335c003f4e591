// The shipped operators' uninstalls, timed: per operator and way of
// uninstalling, with drainguard (docs/helm.md, the hold) against the control
// (the same chart without it), how long until nothing was left, and what each
// left once nothing could change any more (test/support/shipped/keda-uninstall.ts:
// a real node, the operator's own binary, the chart in its project's shape).
// KEDA ships no pre-delete hook of its own (its docs say to delete the
// ScaledObjects before the uninstall): the line says so.
//
//   node test/tooling/bench/shipped.ts [--runs N] [--ways helm,helm --wait,helm --no-hooks --wait,kubectl delete -f,...]
//
// kubectl delete namespace deletes what is the namespace's: its "clean" is the namespace gone, and what it left is
// what is stuck (the cluster-scoped objects stay by design).
//
// After npm run build and node test/support/shipped/build.ts; root (the real
// node); a private control plane is started and stopped for the run.

import { parseArgs } from 'node:util';
import { useCluster } from '../../support/cluster/index.ts';
import { runFileEndHooks } from '../../support/file-end.ts';
import { startNode } from '../../support/node/index.ts';
import { OPERATORS } from '../../support/shipped/build.ts';
import { importKedaImage, removeKedaCharts } from '../../support/shipped/keda.ts';
import { type Uninstalled, type Way, uninstallKeda } from '../../support/shipped/keda-uninstall.ts';
import { percentile } from '../../support/stats.ts';

const WAYS: readonly Way[] = [
  'helm',
  'helm --wait',
  'helm --no-hooks --wait',
  'kubectl delete -f',
  'kubectl delete -k',
  'kubectl delete namespace',
];

const { values } = parseArgs({ options: { runs: { type: 'string', default: '1' }, ways: { type: 'string' } } });
const runs = Number(values.runs);
const ways = values.ways ? (values.ways.split(',') as Way[]) : WAYS;
for (const w of ways) if (!WAYS.includes(w)) throw new Error(`--ways: ${JSON.stringify(w)} is none of ${WAYS.join(', ')}`);

const c = await useCluster();
const node = await startNode(c);
importKedaImage(node);
const op = OPERATORS.keda!;
process.stdout.write(`${op.module}@${op.version} on Kubernetes ${c.release}, ${runs} run(s) each\n`);
process.stdout.write('  its own pre-delete way: none (KEDA ships no pre-delete hook)\n');
process.stdout.write(`  ${'way'.padEnd(24)} ${'drainguard'.padEnd(10)} ${'CRs gone (p50)'.padEnd(16)} ${'clean (p50)'.padEnd(15)} left\n`);
try {
  for (const way of ways) {
    for (const guarded of [false, true]) {
      const results: Uninstalled[] = [];
      for (let i = 0; i < runs; i++) results.push(await uninstallKeda({ c, node }, guarded, way));
      const clean = results.map((r) => r.cleanMs).filter((ms): ms is number => ms !== undefined);
      const left = [...new Set(results.flatMap((r) => r.left.map((l) => l.replace(/-[0-9a-f]{8}\b/g, '-…'))))];
      const seconds = (ms: (number | undefined)[]) => {
        const done = ms.filter((x): x is number => x !== undefined);
        return done.length > 0 ? `${(percentile(done, 50) / 1000).toFixed(1)} s` : 'never';
      };
      process.stdout.write(
        `  ${way.padEnd(24)} ${(guarded ? 'with' : 'without').padEnd(10)} ` +
          `${seconds(results.map((r) => r.finalizedMs)).padEnd(16)} ${seconds(results.map((r) => r.cleanMs)).padEnd(15)} ` +
          `${runs - clean.length} of ${runs} left something${left.length ? `: ${left.join('; ')}` : ''}\n`,
      );
    }
  }
} finally {
  removeKedaCharts();
  for (const err of await runFileEndHooks()) process.stderr.write(`cleanup: ${String(err)}\n`);
}
