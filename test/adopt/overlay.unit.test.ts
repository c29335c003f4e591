// planOverlay's refusal of a Deployment whose operator container is not named
// manager (KubeRay's is kuberay-operator): it names every component file the
// hand route must change, each of which finds the container by that name.
// Pure: the plan of parsed objects, and the components' files as released.

import { readFileSync } from 'node:fs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { planOverlay } from '../../src/adopt/overlay.ts';
import type { Manifest } from '../../src/check/finding.ts';

const operator = (container: string): Manifest[] => [
  { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'op', namespace: 'ops' } },
  { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: 'op' }, rules: [] },
  {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: 'op' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'op' },
    subjects: [{ kind: 'ServiceAccount', name: 'op', namespace: 'ops' }],
  },
  {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'op', namespace: 'ops' },
    spec: { template: { spec: { serviceAccountName: 'op', containers: [{ name: container, image: 'op', command: ['/manager'] }] } } },
  },
];

const refusal = (objects: Manifest[]): string => {
  try {
    planOverlay({ objects, raw: objects });
  } catch (e) {
    return (e as Error).message;
  }
  throw new Error('no refusal');
};

test('a container not named manager: refused, naming every component file that names it in wrap mode', () => {
  const message = refusal(operator('kuberay-operator'));
  assert.match(message, /containers are kuberay-operator, and the components find the operator's container by its name, manager/);
  for (const file of ['wrap/kustomization.yaml', 'guard-more/kustomization.yaml', 'hold/kustomization.yaml'])
    assert.ok(readFileSync(`deploy/components/${file}`, 'utf8').includes('containers.[name=manager]'), file);
  assert.match(
    message,
    /mode's deployment\.yaml and kustomization\.yaml, and in wrap mode in guard-more's and hold's kustomization\.yaml too/,
  );
  assert.match(message, /nothing is written$/);
});

test('the same Deployment with its container named manager: planned', () => {
  assert.is(planOverlay({ objects: operator('manager'), raw: operator('manager') }).deployment, 'op');
});

test.run();
