// Why `drainguard check` asks for the ClusterRoles aggregated into a guarded
// one (aggregation-source-not-guarded), and guard-more guards them: on the
// real control plane, an aggregated ClusterRole bound to an operator's
// ServiceAccount, and two sources of its rules deleted at the same moment, as
// an uninstall deletes them. The one held by a drainguard holder finalizer
// stays, terminating, and the aggregation controller keeps its rules in the
// aggregated role: still granted. The one without is gone, and its rules are
// stripped from the aggregated role while that is itself still there: refused.
// Once the finalizer is removed, the held one's rules go too.

import { randomBytes, randomUUID } from 'node:crypto';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { useCluster } from '../support/cluster/index.ts';

const RBAC = '/apis/rbac.authorization.k8s.io/v1';

test('an aggregation source held by a finalizer keeps its rules granted through the aggregated role; one without loses them at once', async () => {
  const cluster = await useCluster();
  const ns = (await cluster.namespace('aggregation')).name;
  const id = `agg-${randomBytes(3).toString('hex')}`;
  const label = `${id}.example.io/aggregate-to-operator`;
  const source = (name: string, resource: string) => ({
    apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name, labels: { [label]: 'true' } },
    rules: [{ apiGroups: [''], resources: [resource], verbs: ['list'] }],
  });
  await cluster.create({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: id }, aggregationRule: { clusterRoleSelectors: [{ matchLabels: { [label]: 'true' } }] }, rules: [] });
  await cluster.create(source(`${id}-held`, 'configmaps'));
  await cluster.create(source(`${id}-free`, 'secrets'));
  await cluster.create({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: id }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: id }, subjects: [{ kind: 'ServiceAccount', name: 'op', namespace: ns }] });

  const resources = async () => ((await cluster.api.get(`${RBAC}/clusterroles/${id}`)).rules ?? []).flatMap((r: { resources?: string[] }) => r.resources ?? []) as string[];
  /** What the API server's authorizer says the operator's ServiceAccount may do. */
  const allowed = async (resource: string): Promise<boolean> => {
    const review = await cluster.api.create('/apis/authorization.k8s.io/v1/subjectaccessreviews', {
      apiVersion: 'authorization.k8s.io/v1', kind: 'SubjectAccessReview',
      spec: { user: `system:serviceaccount:${ns}:op`, groups: ['system:serviceaccounts', `system:serviceaccounts:${ns}`, 'system:authenticated'], resourceAttributes: { namespace: ns, verb: 'list', resource } },
    });
    return review.status.allowed === true;
  };

  await cluster.waitFor(async () => (await resources()).length === 2, 30_000, 'the aggregation controller filling in both sources');
  assert.equal([await allowed('configmaps'), await allowed('secrets')], [true, true]);

  // The uninstall: both sources deleted at once, one held as drainguard holds what it guards.
  const holder = `drainguard.dev/holder-${randomUUID()}`;
  await cluster.api.patch(`${RBAC}/clusterroles/${id}-held`, { metadata: { finalizers: [holder] } });
  await Promise.all([`${id}-held`, `${id}-free`].map((name) => cluster.api.delete(`${RBAC}/clusterroles/${name}`, { propagationPolicy: 'Background' })));
  // The controller has acted once the free source's rules are gone from the aggregated role.
  await cluster.waitFor(async () => !(await resources()).includes('secrets'), 30_000, "the free source's rules stripped");
  assert.ok((await cluster.api.get(`${RBAC}/clusterroles/${id}-held`)).metadata.deletionTimestamp, 'the held source is terminating');
  assert.equal(await resources(), ['configmaps'], 'the held source still aggregated');
  assert.equal([await allowed('configmaps'), await allowed('secrets')], [true, false]);

  // Released: the held source goes, and its rules with it.
  await cluster.api.patch(`${RBAC}/clusterroles/${id}-held`, { metadata: { finalizers: null } });
  await cluster.waitFor(async () => (await resources()).length === 0, 30_000, "the held source's rules stripped once it is gone");
  await cluster.waitFor(async () => !(await allowed('configmaps')), 10_000, 'configmaps refused once the held source is gone');
});

test.run();
