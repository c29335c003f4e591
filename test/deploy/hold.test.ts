// deploy/components/hold after each mode component, as a user lists it: the
// list lands in the container that runs drainguard and nowhere else, the
// render validates, drainguard check finds nothing, and the layers it prints
// say the hold covers kubectl's delete.

import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parse, stringify } from 'yaml';
import { EXE, tempDir } from '../support/proc.ts';
import { DEPLOY, docBlocks, problems, render, theDeployment } from './support/manifests.ts';

const EXAMPLE = join(DEPLOY, 'examples/hold');
const HOLD = 'installations.operator.example.io,apiservers.operator.example.io';
const MEMORY_PATCH = docBlocks('Adding drainguard to any other operator').find((b) => b.startsWith('patches:') && b.includes('memory'))!;

function userTree(mode: string): string {
  const dir = join(tempDir(), 'hold');
  mkdirSync(dir);
  for (const f of ['crd.yaml', 'drainguard.yaml']) copyFileSync(join(EXAMPLE, f), join(dir, f));
  writeFileSync(join(dir, 'kustomization.yaml'), stringify({
    apiVersion: 'kustomize.config.k8s.io/v1beta1',
    kind: 'Kustomization',
    resources: [relative(dir, join(EXAMPLE, 'operator')), 'crd.yaml', 'drainguard.yaml'],
    components: [relative(dir, join(DEPLOY, 'components', mode)), relative(dir, join(DEPLOY, 'components/hold'))],
    // Wrap mode: the operator container's memory raised for drainguard, as docs/deploy.md's step 4 has it.
    ...(mode === 'wrap' && { patches: (parse(MEMORY_PATCH) as { patches: unknown[] }).patches }),
  }));
  return relative(process.cwd(), dir);
}

for (const [mode, container] of [['wrap', 'manager'], ['native-sidecar', 'drainguard'], ['sidecar', 'drainguard']] as const) {
  test(`${mode}: DRAINGUARD_HOLD in container ${container} alone; valid; check clean, the hold covering kubectl delete`, async () => {
    const objects = render(userTree(mode));
    assert.equal((await Promise.all(objects.map(problems))).flat(), []);
    const pod = theDeployment(objects).spec.template.spec;
    const holding = [...pod.containers, ...(pod.initContainers ?? [])].filter((c: any) => (c.env ?? []).some((e: any) => e.name === 'DRAINGUARD_HOLD'));
    assert.equal(holding.map((c: any) => [c.name, c.env.find((e: any) => e.name === 'DRAINGUARD_HOLD').value]), [[container, HOLD]]);
    const r = spawnSync(EXE, ['check', '-o', 'json', '-'], { input: objects.map((o) => stringify(o)).join('---\n'), encoding: 'utf8', timeout: 30_000 });
    const out = JSON.parse(r.stdout) as { findings: unknown[]; layers: { way: string; hold: string }[] };
    assert.equal([r.status, out.findings], [0, []], r.stdout);
    assert.equal(out.layers.find((l) => l.way === 'kubectl delete -f / -k, Flux prune')!.hold, 'yes');
  });
}

test.run();
