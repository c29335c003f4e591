// kubectl apply, client-side and server-side (as helm 4 applies), of a
// ValidatingAdmissionPolicy and its binding as the manifests drainguard ships
// hold them (admissionregistration.k8s.io/v1, folded CEL): created, unchanged
// when applied again, configured when changed, deleted.
// Runs on the run's control plane.

import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { useCluster } from '../../support/cluster/index.ts';

const cluster = await useCluster();
const kubectl = (args: string[], input?: string) =>
  execFileSync('kubectl', ['--kubeconfig', cluster.adminKubeconfig, ...args], { input, encoding: 'utf8', timeout: 30_000 });

const manifests = (name: string, message: string) => `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: ${name}
  labels:
    app.kubernetes.io/name: drainguard
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
      - apiGroups: [rbac.authorization.k8s.io]
        apiVersions: ["*"]
        operations: [UPDATE]
        resources: [clusterrolebindings]
        resourceNames: ["drainguard:${name}"]
  matchConditions:
    - name: operator-serviceaccount
      expression: "request.userInfo.username == 'system:serviceaccount:' + 'ns' + ':' + 'op'"
  validations:
    - expression: >-
        (has(object.metadata.finalizers) ? object.metadata.finalizers : []).filter(f, !f.startsWith('drainguard.dev/holder-'))
        == (has(oldObject.metadata.finalizers) ? oldObject.metadata.finalizers : []).filter(f, !f.startsWith('drainguard.dev/holder-'))
      message: "${message}"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: ${name}
spec:
  policyName: ${name}
  validationActions: [Deny]
`;

test('kubectl apply: a policy and its binding created, unchanged, configured, deleted', () => {
  const name = `drainguard.kubectl-${randomBytes(4).toString('hex')}`;
  const policy = `validatingadmissionpolicy.admissionregistration.k8s.io/${name}`;
  const binding = `validatingadmissionpolicybinding.admissionregistration.k8s.io/${name}`;
  try {
    assert.is(kubectl(['apply', '-f', '-'], manifests(name, 'only holder finalizers')), `${policy} created\n${binding} created\n`);
    const created = JSON.parse(kubectl(['get', policy, '-o', 'json']));
    // resourceRules is an atomic list the server defaults (scope "*"): kubectl sends it again, and nothing changes.
    assert.match(
      kubectl(['apply', '-f', '-'], manifests(name, 'only holder finalizers')),
      new RegExp(`^${policy} (unchanged|configured)\n${binding} unchanged\n$`),
    );
    assert.is(JSON.parse(kubectl(['get', policy, '-o', 'json'])).metadata.resourceVersion, created.metadata.resourceVersion);
    assert.is(
      kubectl(['apply', '-f', '-'], manifests(name, 'only drainguard.dev/holder- finalizers')),
      `${policy} configured\n${binding} unchanged\n`,
    );
    const applied = JSON.parse(kubectl(['get', policy, '-o', 'json']));
    assert.is(applied.spec.validations[0].message, 'only drainguard.dev/holder- finalizers');
    assert.match(applied.spec.validations[0].expression, "!f.startsWith('drainguard.dev/holder-')) == (has(oldObject");
    assert.is(applied.metadata.generation, 2);
  } finally {
    kubectl(['delete', '--ignore-not-found', binding, policy]);
  }
  assert.is(kubectl(['get', '--ignore-not-found', policy, binding]), '');
});

test('kubectl apply --server-side (as helm 4 applies): the policy and its binding applied, changed, deleted', () => {
  const name = `drainguard.ssa-${randomBytes(4).toString('hex')}`;
  const policy = `validatingadmissionpolicy.admissionregistration.k8s.io/${name}`;
  const binding = `validatingadmissionpolicybinding.admissionregistration.k8s.io/${name}`;
  try {
    assert.is(
      kubectl(['apply', '--server-side', '-f', '-'], manifests(name, 'first')),
      `${policy} serverside-applied\n${binding} serverside-applied\n`,
    );
    assert.is(
      kubectl(['apply', '--server-side', '-f', '-'], manifests(name, 'second')),
      `${policy} serverside-applied\n${binding} serverside-applied\n`,
    );
    const applied = JSON.parse(kubectl(['get', policy, '-o', 'json']));
    assert.equal([applied.spec.validations.length, applied.spec.validations[0].message, applied.spec.failurePolicy], [1, 'second', 'Fail']);
  } finally {
    kubectl(['delete', '--ignore-not-found', binding, policy]);
  }
});

test.run();
