// docs/deploy.md's "Adding drainguard to a kubebuilder project", applied to
// the letter to config/ of projects the kubebuilder CLI scaffolds at test
// time (test/support/kubebuilder.ts), in both of its layouts: cluster-scoped
// (`kubebuilder init`) and namespace-scoped (`init --namespaced`: the
// manager's RBAC a Role and RoleBinding), each with its namespace and
// namePrefix as the folder's name makes them. For each layout, mode and two
// project names, the render passes `drainguard check` (the built executable)
// with no finding, and the guard list and drainguard's RBAC name the objects
// the Deployment really uses, prefix and all.

import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { guardTargetKey, parseGuardList } from '../../src/config/guard-list.ts';
import type { Layout } from '../support/kubebuilder.ts';
import { EXE, tempDir } from '../support/proc.ts';
import { type KubeObject, kubebuilderOverlay, kubebuilderProject, ofKind, problems, theDeployment } from './support/manifests.ts';

const GUARD_CONTAINER: Record<string, [string, string]> = { wrap: ['containers', 'manager'], 'native-sidecar': ['initContainers', 'drainguard'], sidecar: ['containers', 'drainguard'] };

function guardOf(objects: KubeObject[], mode: string): string[] {
  const [list, name] = GUARD_CONTAINER[mode]!;
  const container = theDeployment(objects).spec.template.spec[list].find((c: any) => c.name === name);
  const value = container.env.find((e: any) => e.name === 'DRAINGUARD_GUARD').value as string;
  return parseGuardList(value, 'DRAINGUARD_GUARD').map(guardTargetKey);
}

const drainguardOwn = (o: KubeObject) => o.metadata.labels?.['app.kubernetes.io/name'] === 'drainguard';
const entry = (kind: string, name: string, namespace?: string) => guardTargetKey({ kind: kind.toLowerCase(), namespace, name });

for (const layout of ['cluster', 'namespaced'] as Layout[]) {
  for (const project of ['guestbook', 'shop']) {
    for (const mode of ['wrap', 'native-sidecar', 'sidecar']) {
      test(`${layout}, ${project}, ${mode}: the doc's overlay passes drainguard check and guards what the Deployment uses`, async () => {
        const p = kubebuilderProject(mode, project, tempDir(), layout);
        const objects = p.objects;
        const ns = `${project}-system`;
        assert.equal((await Promise.all(objects.map(problems))).flat(), []);
        const check = execFileSync(EXE, ['check', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }), encoding: 'utf8' });
        assert.match(check, /no findings/);

        const deployment = theDeployment(objects);
        assert.is(deployment.metadata.namespace, ns);
        const sa = deployment.spec.template.spec.serviceAccountName as string;
        assert.is(sa, `${project}-controller-manager`, 'kustomize renamed the reference');
        // The scaffold's layout, as kubebuilder made it: manager-role a ClusterRole, or a Role in the manager's namespace.
        const managerBinding = [...ofKind(objects, 'ClusterRoleBinding'), ...ofKind(objects, 'RoleBinding')].find(
          (b) => b.metadata.name === `${project}-manager-rolebinding`,
        )!;
        assert.ok(managerBinding, 'the scaffold binds its ServiceAccount to manager-role');
        assert.is(managerBinding.roleRef.kind, layout === 'namespaced' ? 'Role' : 'ClusterRole');
        if (layout === 'namespaced') assert.is(managerBinding.metadata.namespace, ns);
        // Every binding of the Deployment's ServiceAccount but drainguard's own, and the role it binds, is guarded.
        const guard = guardOf(objects, mode);
        const bindings = objects.filter(
          (o) => /^(Cluster)?RoleBinding$/.test(o.kind) && !drainguardOwn(o) && o.subjects?.some((s: any) => s.kind === 'ServiceAccount' && s.name === sa),
        );
        assert.ok(bindings.length >= 3, `the scaffold's bindings: ${bindings.map((b) => b.metadata.name).join(', ')}`);
        const expected = [
          entry('ServiceAccount', sa, ns),
          ...bindings.flatMap((b) => [
            entry(b.kind, b.metadata.name, b.metadata.namespace),
            entry(b.roleRef.kind, b.roleRef.name, b.roleRef.kind === 'Role' ? b.metadata.namespace : undefined),
          ]),
        ];
        for (const e of expected) assert.ok(guard.includes(e), `${e} in ${guard.join(',')}`);
        // Every name in the guard is an object of the render: nothing assumed unprefixed.
        const present = new Set(objects.map((o) => entry(o.kind, o.metadata.name, o.metadata.namespace)));
        for (const e of guard) assert.ok(present.has(e), `${e} is rendered`);
        // drainguard's own RBAC is bound to the ServiceAccount the pod runs as.
        const own = objects.filter((o) => drainguardOwn(o) && o.subjects);
        assert.is(own.length, 2);
        for (const b of own) assert.equal(b.subjects, [{ kind: 'ServiceAccount', name: sa, namespace: ns }]);
        // What an uninstall with kubectl deletes last.
        assert.equal(objects.filter((o) => o.metadata.labels?.['drainguard.dev/uninstall'] === 'last').map((o) => o.kind).sort(), ['ClusterRole', 'ClusterRoleBinding', 'Namespace', 'Role', 'RoleBinding', 'ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding']);
      });
    }
  }
}

test('namespaced project with the cluster-scoped `kubebuilder` component: kustomize stops with the message docs/deploy.md names', () => {
  const overlay = kubebuilderOverlay('wrap', 'guestbook', tempDir(), 'namespaced');
  const file = join(overlay, 'kustomization.yaml');
  writeFileSync(file, readFileSync(file, 'utf8').replace('components/kubebuilder-namespaced', 'components/kubebuilder'));
  let stderr = '';
  try {
    execFileSync('kubectl', ['kustomize', overlay], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (err) {
    stderr = String((err as { stderr?: string }).stderr);
  }
  const message = 'nothing selected by ClusterRole.[noVer].[noGrp]/manager-role';
  assert.ok(stderr.includes(message), stderr);
  assert.ok(readFileSync('docs/deploy.md', 'utf8').replaceAll('\n', ' ').includes(message), 'the doc names the message');
});

test('namespaced project without guard-more: drainguard check names the Roles and RoleBindings left unguarded', () => {
  const overlay = kubebuilderOverlay('sidecar', 'guestbook', tempDir(), 'namespaced');
  const file = join(overlay, 'kustomization.yaml');
  writeFileSync(file, readFileSync(file, 'utf8').replace(/^ {2}- \S*components\/guard-more\n/m, ''));
  assert.not.match(readFileSync(file, 'utf8'), /guard-more/);
  const render = execFileSync('kubectl', ['kustomize', overlay], { encoding: 'utf8' });
  const check = spawnSync(EXE, ['check', '-'], { input: render, encoding: 'utf8' });
  assert.is(check.status, 1, check.stdout + check.stderr);
  for (const name of ['manager-rolebinding', 'leader-election-rolebinding']) assert.match(check.stdout, new RegExp(`binding-not-guarded[\\s\\S]*${name}`));
  assert.match(check.stdout, /role-not-guarded/);
});

test.run();
