// adopt's manifest path on the real control plane: the overlay adopt wrote for
// a kustomize directory (wrap), for a manifest file (native sidecar) and for
// the shapes operator (guard-more, objects in kube-system), checked by
// `drainguard check` with no findings, applied with `kubectl apply -k`, its
// pod run by the kubelet stand-in and guarded, then removed by the three
// commands adopt prints (docs/deploy.md): everything but drainguard's own RBAC
// and the Namespace, `drainguard release --wait -f -` on the render, the rest.
// drainguard's own RBAC is seen kept until the release; afterwards nothing of
// the render is left, no pod, no Lease, the Namespace gone.

import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { type KubeletCluster, kubeletCluster } from '../support/kubelet/cluster.ts';
import { pathOf } from '../support/cluster/index.ts';
import { EXE } from '../support/proc.ts';
import { within } from '../support/wait.ts';
import { type KubeObject, ROOT, parseObjects } from '../deploy/support/manifests.ts';
import { check } from '../helm/support/shapes.ts';
import { guarded, kubeletErrors, logsOf, nothingLeft, startKubelet, strip } from './cluster.ts';
import { adoptManifest, cleanupCopies, scratch } from './support.ts';

let c: KubeletCluster;
test.before(async () => {
  c = await kubeletCluster();
});
test.after(cleanupCopies);

const kustomize = (dir: string): string =>
  execFileSync('kubectl', ['kustomize', dir], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

interface Input {
  /** The operator's kustomize directory this test renders, then renames. */
  readonly source: string;
  readonly name: string;
  readonly namespace: string;
  /** Its own names for this run: the cluster is shared with other files. */
  readonly rename: Record<string, string>;
}

/** SOURCE's render with this run's names, as a kustomize directory or one file under a scratch directory. */
function write(input: Input, as: 'dir' | 'file'): string {
  let text = kustomize(join(ROOT, input.source));
  for (const [from, to] of Object.entries(input.rename)) text = text.replaceAll(from, to);
  const root = scratch();
  if (as === 'file') {
    writeFileSync(join(root, 'operator.yaml'), text);
    return join(root, 'operator.yaml');
  }
  mkdirSync(join(root, 'default'));
  writeFileSync(join(root, 'default/operator.yaml'), text);
  writeFileSync(join(root, 'default/kustomization.yaml'), 'resources: [operator.yaml]\n');
  return join(root, 'default');
}

const own = (o: KubeObject) => o.metadata.labels?.['app.kubernetes.io/name'] === 'drainguard' && o.kind.includes('Role');

async function scenario(input: Input, as: 'dir' | 'file', args: string[]): Promise<void> {
  const path = write(input, as);
  const run = adoptManifest(path, args);
  assert.is(run.code, 0, run.stdout + run.stderr);
  assert.match(run.stdout, /no findings/);
  const overlay = join(path, '..', 'drainguard');
  const text = kustomize(overlay);
  const result = check(text, input.namespace);
  assert.is(result.code, 0, result.out);
  const objects = parseObjects(text);
  const kubelet = await startKubelet(c, [input.namespace]);
  let done = false;
  try {
    c.kubectl(['apply', '-k', overlay]);
    await guarded(c, kubelet, input.namespace, objects);
    // The uninstall adopt printed, as a user types it.
    c.kubectl(['delete', '--wait=false', '-k', overlay, '-l', 'drainguard.dev/uninstall!=last']);
    const kept = objects.filter(own);
    assert.is(kept.length, 4, "drainguard's own ClusterRole, ClusterRoleBinding, Role and RoleBinding");
    for (const o of kept)
      assert.is((await c.api.call('GET', pathOf(o))).status, 200, `${o.kind}/${o.metadata.name} kept until the release`);
    const release = spawn(EXE, ['release', '--wait', '60s', '-f', '-'], {
      env: { PATH: process.env.PATH, KUBECONFIG: c.cluster.adminKubeconfig },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const out: string[] = [];
    release.stdout.on('data', (b: Buffer) => out.push(b.toString()));
    release.stderr.on('data', (b: Buffer) => out.push(b.toString()));
    release.stdin.end(kustomize(overlay));
    const [code] = (await within(80_000, 'drainguard release -f - to exit', once(release, 'close'))) as [number];
    assert.is(code, 0, `${out.join('')}\n${kubelet.timeline()}\n${logsOf(kubelet)}`);
    c.kubectl(['delete', '--wait=false', '-k', overlay, '--ignore-not-found']);
    await nothingLeft(c, objects, input.namespace, []);
    await c.poll(
      `/api/v1/namespaces/${input.namespace}`,
      (_b, s) => s === 404,
      90_000,
      `namespace ${input.namespace} gone, nothing left in it`,
    );
    assert.equal(kubeletErrors(kubelet), []);
    done = true;
  } finally {
    await kubelet.stop();
    if (!done) {
      await strip(c, objects, input.namespace);
      await c.api.call('DELETE', `/api/v1/namespaces/${input.namespace}`);
    }
  }
}

const unique = () => `adm-${randomBytes(4).toString('hex')}`;

function example(): Input {
  const [name, namespace] = [unique(), unique()];
  return { source: 'deploy/examples/operator', name, namespace, rename: { 'example-operator': name, 'example-system': namespace } };
}

test('a kustomize directory, wrap: adopted, checked, applied and guarded, uninstalled as adopt prints: nothing left', () =>
  scenario(example(), 'dir', []));

test('a manifest file, native sidecar: adopted, checked, applied and guarded, uninstalled as adopt prints: nothing left', () =>
  scenario(example(), 'file', ['--mode', 'native-sidecar']));

test('the shapes operator (guard-more, kube-system): adopted, checked, applied and guarded, uninstalled: nothing left', () => {
  const [name, namespace] = [unique(), unique()];
  return scenario(
    { source: 'test/deploy/fixtures/shapes-operator', name, namespace, rename: { 'shapes-operator': name, 'shapes-system': namespace } },
    'dir',
    ['--command', `/ko-app/${name}`],
  );
});

test.run();
