// docs/deploy.md's "Adding drainguard to a kubebuilder project", applied to
// the letter to config/ of a project the kubebuilder CLI scaffolds at test
// time (test/support/kubebuilder.ts; its namespace and namePrefix as the
// folder's name makes them): for each mode, and for two project
// names, the render passes `drainguard check` (the built executable) with no
// finding, and the guard list and drainguard's RBAC name the objects the
// Deployment really uses, prefix and all.

import { execFileSync } from 'node:child_process';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parseGuardList } from '../../src/config/guard-list.ts';
import { EXE, tempDir } from '../support/proc.ts';
import { type KubeObject, kubebuilderProject, ofKind, problems, theDeployment } from './support/manifests.ts';

const GUARD_CONTAINER: Record<string, [string, string]> = { wrap: ['containers', 'manager'], 'native-sidecar': ['initContainers', 'drainguard'], sidecar: ['containers', 'drainguard'] };

function guardOf(objects: KubeObject[], mode: string): string[] {
  const [list, name] = GUARD_CONTAINER[mode]!;
  const container = theDeployment(objects).spec.template.spec[list].find((c: any) => c.name === name);
  const value = container.env.find((e: any) => e.name === 'DRAINGUARD_GUARD').value as string;
  return parseGuardList(value, 'DRAINGUARD_GUARD').map((t) => `${t.kind}/${t.namespace ? `${t.namespace}/` : ''}${t.name}`);
}

const drainguardOwn = (o: KubeObject) => o.metadata.labels?.['app.kubernetes.io/name'] === 'drainguard';

for (const project of ['guestbook', 'shop']) {
  for (const mode of ['wrap', 'native-sidecar', 'sidecar']) {
    test(`${project}, ${mode}: the doc's overlay passes drainguard check and guards what the Deployment uses`, async () => {
      const p = kubebuilderProject(mode, project, tempDir());
      const objects = p.objects;
      assert.equal((await Promise.all(objects.map(problems))).flat(), []);
      const check = execFileSync(EXE, ['check', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }), encoding: 'utf8' });
      assert.match(check, /no findings/);

      const deployment = theDeployment(objects);
      assert.is(deployment.metadata.namespace, `${project}-system`);
      const sa = deployment.spec.template.spec.serviceAccountName as string;
      assert.is(sa, `${project}-controller-manager`, 'kustomize renamed the reference');
      // The operator's ClusterRoleBinding is the one that binds the Deployment's ServiceAccount to the operator's role.
      const binding = ofKind(objects, 'ClusterRoleBinding').find((b) => !drainguardOwn(b) && b.subjects.some((s: any) => s.name === sa) && b.roleRef.name.endsWith('manager-role'))!;
      assert.ok(binding, 'the scaffold binds its ServiceAccount to manager-role');
      const guard = guardOf(objects, mode);
      for (const entry of [`serviceaccount/${project}-system/${sa}`, `clusterrole/${binding.roleRef.name}`, `clusterrolebinding/${binding.metadata.name}`]) assert.ok(guard.includes(entry), `${entry} in ${guard.join(',')}`);
      // Every name in the guard is an object of the render: nothing assumed unprefixed.
      const present = new Set(objects.map((o) => `${o.kind.toLowerCase()}/${o.metadata.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata.name}`));
      for (const entry of guard) assert.ok(present.has(entry), `${entry} is rendered`);
      // drainguard's own RBAC is bound to the ServiceAccount the pod runs as.
      const own = objects.filter((o) => drainguardOwn(o) && o.subjects);
      assert.is(own.length, 2);
      for (const b of own) assert.equal(b.subjects, [{ kind: 'ServiceAccount', name: sa, namespace: `${project}-system` }]);
      // What an uninstall with kubectl deletes last.
      assert.equal(objects.filter((o) => o.metadata.labels?.['drainguard.dev/uninstall'] === 'last').map((o) => o.kind).sort(), ['ClusterRole', 'ClusterRoleBinding', 'Namespace', 'Role', 'RoleBinding', 'ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding']);
    });
  }
}

test.run();
