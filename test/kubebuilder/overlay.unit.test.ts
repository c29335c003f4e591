// The plugin's config/drainguard is docs/deploy.md's step 1, to the letter: the
// kustomization and the ConfigMap of its kubebuilder section for a
// cluster-scoped project in wrap mode, its "A namespace-scoped project"
// components for a namespaced one, the memory patch from config/manager's
// memory plus drainguard's, and no patch in a sidecar mode.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { WRAP_MEMORY_MIB } from '../../src/check/memory.ts';
import { overlayFiles } from '../../src/kubebuilder/overlay.ts';
import { readFileSync } from 'node:fs';

const doc = readFileSync('docs/deploy.md', 'utf8');
const start = doc.indexOf('\n## Adding drainguard to a kubebuilder project\n');
const blocks = [...doc.slice(start, doc.indexOf('\n## ', start + 1)).matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => m[1]!);
const [kustomization, settings] = blocks;
const namespacedComponents = blocks.find((b) => b.startsWith('components:') && b.includes('kubebuilder-namespaced'))!;
const KUSTOMIZATION = 'config/drainguard/kustomization.yaml';
/** The components' tag: the executable's version (the built one's is test/kubebuilder/plugin.test.ts's), the doc's. */
const untagged = (text: string | undefined) => text?.replaceAll(/\?ref=v\S+/g, '?ref=VERSION');

test("cluster-scoped, wrap: the doc's kustomization and ConfigMap", () => {
  const files = overlayFiles({ namespaced: false, mode: 'wrap' });
  assert.equal(Object.keys(files).sort(), ['config/drainguard/drainguard.yaml', KUSTOMIZATION]);
  assert.is(untagged(files[KUSTOMIZATION]), untagged(kustomization));
  assert.is(files['config/drainguard/drainguard.yaml'], settings);
});

test("namespace-scoped: the doc's components in place of the cluster-scoped ones", () => {
  const files = overlayFiles({ namespaced: true, mode: 'wrap' });
  assert.is(untagged(files[KUSTOMIZATION]), untagged(kustomization!.replace(/components:\n( {2}- .*\n)+/, namespacedComponents)));
});

test("a sidecar mode: the mode's component and no memory patch; wrap: config/manager's memory plus drainguard's", () => {
  const sidecar = overlayFiles({ namespaced: false, mode: 'native-sidecar' })[KUSTOMIZATION]!;
  assert.match(sidecar, '/deploy/components/native-sidecar?ref=');
  assert.not.match(sidecar, /patches:|memory/);
  const manager = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: controller-manager
spec:
  template:
    spec:
      containers:
        - name: manager
          resources:
            requests: {memory: 1Gi}
            limits: {memory: 2Gi}
`;
  const wrap = overlayFiles({ namespaced: false, mode: 'wrap', managerManifest: manager })[KUSTOMIZATION]!;
  assert.match(wrap, `memory: ${1024 + WRAP_MEMORY_MIB.request}Mi`);
  assert.match(wrap, `memory: ${2048 + WRAP_MEMORY_MIB.limit}Mi`);
  assert.throws(
    () => overlayFiles({ namespaced: false, mode: 'wrap', managerManifest: manager.replace('1Gi', '1000M') }),
    (err: Error) => /DG_KUBEBUILDER_REFUSED|memory request "1000M" is not in Mi or Gi/.test(err.message),
  );
});

test.run();
