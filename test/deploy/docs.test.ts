// docs/deploy.md's "Adding drainguard to any other operator", pasted: its
// kustomization, the drainguard ConfigMap and the patch, put beside a copy of
// the example operator as a user would put them beside theirs, render for
// each mode to objects the API server accepts. (The kubebuilder section is
// test/deploy/kubebuilder.test.ts.)

import { cpSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parse, stringify } from 'yaml';
import { parseGuardList } from '../../src/config/guard-list.ts';
import { tempDir } from '../support/proc.ts';
import { DEPLOY, docBlocks, problems, render, theDeployment } from './support/manifests.ts';
import { INSTALL_MEMORY_MIB, LIMIT_FLOOR_MIB, MEASURED_MIB, OPERATOR_MEMORY_FLOOR_MIB, PROTOCOL_CAPS_MIB, WRAP_MEMORY_MIB, sizedMemory } from '../../src/check/memory.ts';

const VERSION = (JSON.parse(readFileSync('package.json', 'utf8')) as { version: string }).version;
const yamlBlocks = docBlocks('Adding drainguard to any other operator');
const kustomization = yamlBlocks.find((b) => b.includes('kind: Kustomization') && b.includes('components:'))!;
const settings = yamlBlocks.find((b) => b.includes('name: drainguard') && b.includes('local-config'))!;
const patch = yamlBlocks.find((b) => b.startsWith('patches:'))!;
const REMOTE = /https:\/\/github\.com\/\S+\/\/deploy\/components\/wrap\?ref=\S+/;

/** A tree like the user's: config/default (the operator) and config/drainguard (what the doc shows). */
function userTree(mode: string, withPatch: boolean): string {
  const root = join(tempDir(), 'config');
  cpSync(join(DEPLOY, 'examples/operator'), join(root, 'default'), { recursive: true });
  const dir = join(root, 'drainguard');
  mkdirSync(dir);
  // The remote component, from this checkout instead.
  const local = relative(dir, join(DEPLOY, 'components', mode));
  writeFileSync(join(dir, 'kustomization.yaml'), kustomization.replace(REMOTE, local) + (withPatch ? patch : ''));
  writeFileSync(join(dir, 'drainguard.yaml'), settings);
  return relative(process.cwd(), dir);
}

test('the doc shows a kustomization with the wrap component, the settings and a patch', () => {
  assert.ok(kustomization && settings && patch, 'the blocks are there');
  assert.match(kustomization, REMOTE);
});

for (const mode of ['wrap', 'native-sidecar', 'sidecar']) {
  test(`${mode}: what the doc shows renders, validates, and guards the ClusterRole it names`, async () => {
    const objects = render(userTree(mode, false));
    assert.equal((await Promise.all(objects.map(problems))).flat(), []);
    const names = parse(settings).data as { serviceAccount: string; clusterRole: string; clusterRoleBinding: string };
    const guard = theDeployment(objects)
      .spec.template.spec[mode === 'native-sidecar' ? 'initContainers' : 'containers'].flatMap((c: any) => c.env ?? [])
      .find((e: any) => e.name === 'DRAINGUARD_GUARD').value as string;
    const targets = parseGuardList(guard, 'DRAINGUARD_GUARD').map((t) => `${t.kind}/${t.name}`);
    assert.ok(targets.includes(`clusterrole/${names.clusterRole}`) && targets.includes(`clusterrolebinding/${names.clusterRoleBinding}`) && targets.includes(`serviceaccount/${names.serviceAccount}`), guard);
    assert.not.ok(objects.some((o) => o.kind === 'ConfigMap'), 'the settings are not applied');
  });
}

test("native-sidecar: the doc's patch sets the operator's command and drainguard's user", async () => {
  const objects = render(userTree('native-sidecar', true));
  assert.equal((await Promise.all(objects.map(problems))).flat(), []);
  const spec = theDeployment(objects).spec.template.spec;
  assert.equal(spec.containers.find((c: any) => c.name === 'manager').command, ['/drainguard/drainguard', 'run', '--', '/usr/local/bin/my-operator']);
  const dg = spec.initContainers.find((c: any) => c.name === 'drainguard');
  assert.equal([dg.securityContext.runAsUser, dg.securityContext.runAsGroup, dg.image], [1000, 1000, `ghcr.io/drainguard/drainguard:${VERSION}`], stringify(dg));
});

test("wrap mode: the doc's memory figures are check's (WRAP_MEMORY_MIB) and the chart's, and its patch gives the example operator what check asks", () => {
  const doc = readFileSync('docs/deploy.md', 'utf8');
  assert.match(doc, `memory request by ${WRAP_MEMORY_MIB.request}Mi and its limit by ${WRAP_MEMORY_MIB.limit}Mi`);
  assert.match(doc, `in wrap mode add ${WRAP_MEMORY_MIB.request}Mi to the\noperator container's request and ${WRAP_MEMORY_MIB.limit}Mi to its limit`);
  const memory = yamlBlocks.find((b) => b.startsWith('patches:') && b.includes('memory'))!;
  assert.match(memory, `memory: ${WRAP_MEMORY_MIB.limit + OPERATOR_MEMORY_FLOOR_MIB}Mi`);
  assert.match(doc, `reports a limit under ${LIMIT_FLOOR_MIB.wrap}Mi, what drainguard's container was measured at (${MEASURED_MIB.containerMax} MiB)`);
  // The chart adds its drainguard.resources in wrap mode: the same figures.
  type Resources = { requests: { memory: string }; limits: { memory: string } };
  const chart = parse(readFileSync('deploy/helm/drainguard/values.yaml', 'utf8')) as { resources: Resources; installResources: Resources };
  assert.equal([chart.resources.requests.memory, chart.resources.limits.memory], [`${WRAP_MEMORY_MIB.request}Mi`, `${WRAP_MEMORY_MIB.limit}Mi`]);
  // Its install init container: the component's figures (the test below).
  assert.equal(
    [chart.installResources.requests.memory, chart.installResources.limits.memory],
    [`${INSTALL_MEMORY_MIB.request}Mi`, `${INSTALL_MEMORY_MIB.limit}Mi`],
  );
});

test("the components' drainguard containers get the sized memory, and the doc's Resources say how it follows from what was measured", () => {
  for (const component of ['install', 'native-sidecar', 'sidecar']) {
    const d = parse(readFileSync(`deploy/components/${component}/deployment.yaml`, 'utf8')) as any;
    const spec = d.spec.template.spec;
    const drainguards = [...(spec.initContainers ?? []), ...(spec.containers ?? [])].filter((x: any) => x.image?.startsWith('ghcr.io/drainguard/'));
    assert.ok(drainguards.length > 0, `${component}: a container of the drainguard image`);
    for (const c of drainguards) {
      const sized = c.name === 'drainguard-install' ? INSTALL_MEMORY_MIB : WRAP_MEMORY_MIB;
      assert.equal([c.resources.requests.memory, c.resources.limits.memory], [`${sized.request}Mi`, `${sized.limit}Mi`], `${component}: ${c.name}`);
    }
  }
  const doc = readFileSync('docs/deploy.md', 'utf8');
  assert.match(doc, `(${MEASURED_MIB.idleAddedP99} × 1.25, to 8Mi)`);
  assert.match(doc, `held, ${MEASURED_MIB.containerMax} MiB, plus the ${PROTOCOL_CAPS_MIB} MiB`);
  assert.equal(sizedMemory(MEASURED_MIB), { ...WRAP_MEMORY_MIB });
});

test.run();
