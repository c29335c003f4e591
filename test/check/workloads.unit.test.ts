// Whether the manifests run the operator at all (workloads.ts) and what a
// render lost against the plain one (plain.ts), on small objects: a bound
// ServiceAccount nothing runs as, a CronJob in the operator's place, and what
// does not count (a Helm hook, drainguard's own hook account, a Group subject,
// any long-running workload beside), and the pod template of every kind.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Manifest } from '../../src/check/finding.ts';
import { analyze } from '../../src/check/analyze.ts';
import { checkAgainstPlain } from '../../src/check/plain.ts';
import { podSpecOf } from '../../src/check/pod.ts';

const meta = (name: string, extra: Record<string, unknown> = {}) => ({ name, namespace: 'ops', ...extra });
const account = (name: string, labels?: Record<string, string>): Manifest => ({
  apiVersion: 'v1',
  kind: 'ServiceAccount',
  metadata: meta(name, labels ? { labels } : {}),
});
const binding = (name: string, subject: Record<string, string>): Manifest => ({
  apiVersion: 'rbac.authorization.k8s.io/v1',
  kind: 'ClusterRoleBinding',
  metadata: { name },
  roleRef: { kind: 'ClusterRole', name },
  subjects: [subject],
});
const pod = (sa: string) => ({ serviceAccountName: sa, containers: [{ name: 'operator', image: 'example.com/op:1' }] });
const workload = (kind: string, name: string, sa: string, annotations?: Record<string, string>): Manifest => ({
  apiVersion: kind === 'Job' || kind === 'CronJob' ? 'batch/v1' : 'apps/v1',
  kind,
  metadata: meta(name, annotations ? { annotations } : {}),
  spec: kind === 'CronJob' ? { jobTemplate: { spec: { template: { spec: pod(sa) } } } } : { template: { spec: pod(sa) } },
});
const codes = (objects: Manifest[]) => analyze(objects).map((f) => `${f.code} ${f.object}`);
const rbac = [account('op'), binding('op', { kind: 'ServiceAccount', name: 'op', namespace: 'ops' })];

test('RBAC of an operator and no workload at all: workload-missing on its ServiceAccount', () => {
  assert.equal(codes(rbac), ['workload-missing ServiceAccount/ops/op']);
  // Its user name binds it too; a group does not single it out.
  assert.equal(codes([account('op'), binding('op', { kind: 'User', name: 'system:serviceaccount:ops:op' })]), [
    'workload-missing ServiceAccount/ops/op',
  ]);
  assert.equal(codes([account('op'), binding('op', { kind: 'Group', name: 'system:serviceaccounts' })]), []);
  // A pre-delete hook that runs as it is no operator: still missing.
  assert.equal(codes([...rbac, workload('Job', 'cleanup', 'op', { 'helm.sh/hook': 'pre-delete' })]), [
    'workload-missing ServiceAccount/ops/op',
  ]);
  // drainguard's own hook accounts are bound too, and no workload runs as them.
  const own = account('op-drainguard-release', { 'app.kubernetes.io/name': 'drainguard' });
  assert.equal(codes([own, binding('own', { kind: 'ServiceAccount', name: own.metadata.name, namespace: 'ops' })]), []);
});

test("a CronJob or a Job in the operator's place: workload-kind-unsupported; beside any long-running workload, neither finding", () => {
  assert.equal(codes([...rbac, workload('CronJob', 'op', 'op')]), ['workload-kind-unsupported CronJob/ops/op']);
  assert.equal(codes([...rbac, workload('Job', 'op', 'op')]), ['workload-kind-unsupported Job/ops/op']);
  for (const kind of ['StatefulSet', 'DaemonSet', 'Rollout']) {
    const found = codes([...rbac, workload('CronJob', 'backup', 'op'), workload(kind, 'op', 'op')]);
    assert.equal(found, [`no-drainguard ${kind}/ops/op`], kind);
  }
});

test('the pod template of every kind is read: a CronJob through its Job template, a custom kind at spec.template', () => {
  assert.is(podSpecOf(workload('CronJob', 'c', 'a'))?.serviceAccountName, 'a');
  assert.is(podSpecOf({ ...workload('Rollout', 'r', 'b'), apiVersion: 'argoproj.io/v1alpha1' })?.serviceAccountName, 'b');
  assert.is(podSpecOf({ apiVersion: 'v1', kind: 'ConfigMap', metadata: meta('c'), data: {} }), undefined);
  assert.is(
    podSpecOf({ apiVersion: 'x/v1', kind: 'Thing', metadata: meta('t'), spec: { template: { spec: { containers: 'no' } } } }),
    undefined,
  );
});

test('--plain: each object of the plain render the manifests lack, by group, kind, namespace and name (not version)', () => {
  const sts = workload('StatefulSet', 'op', 'op');
  const lost = checkAgainstPlain([account('op')], [account('op'), sts]);
  assert.equal(
    lost.map((f) => `${f.severity} ${f.code} ${f.object}`),
    ['error object-lost StatefulSet/ops/op'],
  );
  assert.match(lost[0]!.message, "with it the operator's pods");
  assert.equal(checkAgainstPlain([{ ...sts, apiVersion: 'apps/v1beta2' }], [sts]), []);
  assert.equal(checkAgainstPlain([{ ...sts, apiVersion: 'other.io/v1' }], [sts]).length, 1);
});

test.run();
