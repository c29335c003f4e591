// The shipped operators' uninstalls, timed: per operator and way of
// uninstalling, with drainguard (docs/helm.md, the hold) against the control
// (the same chart without it), how long until nothing was left, and what each
// left once nothing could change any more (test/support/shipped/keda-uninstall.ts,
// external-secrets-uninstall.ts: a real node, the operator's own binary, the
// chart in its project's shape). Neither KEDA nor the External Secrets
// Operator ships a pre-delete hook of its own (KEDA's docs say to delete the
// ScaledObjects before the uninstall): the line says so.
//
//   node test/tooling/bench/shipped.ts [--runs N] [--operators keda,external-secrets]
//     [--ways helm,helm --wait,helm --no-hooks --wait,kubectl delete -f,...] (operators: keda, external-secrets, kuberay)
//
// The External Secrets Operator and KubeRay are measured on the ways of their tests (ESO_WAYS, KUBERAY_WAYS); a way
// an operator lacks is skipped for it.
//
// kubectl delete namespace deletes what is the namespace's: its "clean" is the namespace gone, and what it left is
// what is stuck (the cluster-scoped objects stay by design).
//
// After npm run build and node test/support/shipped/build.ts; root (the real
// node); a private control plane is started and stopped for the run.

import { parseArgs } from 'node:util';
import { useCluster } from '../../support/cluster/index.ts';
import { runFileEndHooks } from '../../support/file-end.ts';
import { type RealNode, startNode } from '../../support/node/index.ts';
import { OPERATORS } from '../../support/shipped/build.ts';
import { importEsoImage, removeEsoCharts } from '../../support/shipped/external-secrets.ts';
import { type EsoWay, uninstallEso } from '../../support/shipped/external-secrets-uninstall.ts';
import { importKedaImage, removeKedaCharts } from '../../support/shipped/keda.ts';
import { importKubeRayImage, removeKubeRayOverlays } from '../../support/shipped/kuberay.ts';
import { type KubeRayWay, uninstallKubeRay } from '../../support/shipped/kuberay-uninstall.ts';
import { type Way, uninstallKeda } from '../../support/shipped/keda-uninstall.ts';
import { percentile } from '../../support/stats.ts';

const WAYS: readonly Way[] = [
  'helm',
  'helm --wait',
  'helm --no-hooks --wait',
  'kubectl delete -f',
  'kubectl delete -k',
  'kubectl delete namespace',
];

const ESO_WAYS: readonly Way[] = ['helm', 'kubectl delete -f'] satisfies readonly EsoWay[];
const KUBERAY_WAYS: readonly Way[] = ['kubectl delete -k', 'kubectl delete namespace'] satisfies readonly KubeRayWay[];

interface Measured {
  readonly cleanMs: number | undefined;
  readonly finalizedMs: number | undefined;
  readonly left: string[];
}

interface Benched {
  readonly image: (n: RealNode) => void;
  readonly ways: readonly Way[];
  readonly run: (guarded: boolean, way: Way) => Promise<Measured>;
  readonly done: () => void;
}

/** Per operator: its image's import, the ways it is measured on, one uninstall, its charts' removal. */
const BENCHED: Record<string, Benched> = {
  keda: { image: importKedaImage, ways: WAYS, run: (guarded, way) => uninstallKeda({ c, node }, guarded, way), done: removeKedaCharts },
  'external-secrets': {
    image: importEsoImage,
    ways: ESO_WAYS,
    run: (guarded, way) => uninstallEso({ c, node }, guarded, way as EsoWay),
    done: removeEsoCharts,
  },
  // Its kustomize install adopted with `drainguard adopt` and the hold (kuberay.ts); "CRs gone" is the RayJob gone.
  kuberay: {
    image: importKubeRayImage,
    ways: KUBERAY_WAYS,
    run: async (guarded, way) => {
      const r = await uninstallKubeRay({ c, node }, guarded, way as KubeRayWay);
      return { cleanMs: r.cleanMs, finalizedMs: r.rayJobGoneMs, left: r.left };
    },
    done: removeKubeRayOverlays,
  },
};

const { values } = parseArgs({
  options: { runs: { type: 'string', default: '1' }, ways: { type: 'string' }, operators: { type: 'string' } },
});
const runs = Number(values.runs);
const ways = values.ways ? (values.ways.split(',') as Way[]) : WAYS;
for (const w of ways) if (!WAYS.includes(w)) throw new Error(`--ways: ${JSON.stringify(w)} is none of ${WAYS.join(', ')}`);
const operators = values.operators ? values.operators.split(',') : Object.keys(BENCHED);
for (const o of operators)
  if (!BENCHED[o]) throw new Error(`--operators: ${JSON.stringify(o)} is none of ${Object.keys(BENCHED).join(', ')}`);

const c = await useCluster();
const node = await startNode(c);
try {
  for (const name of operators) {
    const op = OPERATORS[name]!;
    const bench = BENCHED[name]!;
    bench.image(node);
    process.stdout.write(`${op.module}@${op.version} on Kubernetes ${c.release}, ${runs} run(s) each\n`);
    process.stdout.write('  its own pre-delete way: none (it ships no pre-delete hook)\n');
    process.stdout.write(
      `  ${'way'.padEnd(24)} ${'drainguard'.padEnd(10)} ${'CRs gone (p50)'.padEnd(16)} ${'clean (p50)'.padEnd(15)} left\n`,
    );
    for (const way of ways.filter((w) => bench.ways.includes(w))) await measure(bench, way);
    bench.done();
  }
} finally {
  removeKedaCharts();
  removeEsoCharts();
  removeKubeRayOverlays();
  for (const err of await runFileEndHooks()) process.stderr.write(`cleanup: ${String(err)}\n`);
}

/** One line per side (the control, then with drainguard) of BENCH's uninstalls WAY. */
async function measure(bench: Benched, way: Way): Promise<void> {
  for (const guarded of [false, true]) {
    const results: Measured[] = [];
    for (let i = 0; i < runs; i++) results.push(await bench.run(guarded, way));
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
