// The stand-in's Deployment controller, synced by hand on a store of its own:
// the states a real cluster passes through (a Deployment being deleted whose
// ReplicaSets are already gone, as foreground deletion leaves it) are synced
// without throwing. No server, no timers.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { DeploymentController } from './deployment.ts';
import { Registry } from '../registry.ts';
import { ResourceTypes } from '../resources.ts';
import { Store } from '../store.ts';

const SYSTEM = { user: { name: 'system:admin', groups: ['system:masters'] } };

/** The controller with its sync in reach of the test (it is protected). */
class SyncedByHand extends DeploymentController {
  syncNow(key: string): void {
    this.sync(key);
  }
}

function cluster() {
  const types = new ResourceTypes();
  const registry = new Registry(new Store(), types, () => Date.now(), () => ({ clusterRoles: () => [], clusterRoleBindings: () => [], roles: () => [], roleBindings: () => [] }));
  registry.create(types.find('', 'v1', 'namespaces')!, undefined, { metadata: { name: 'ns' } }, SYSTEM);
  return { types, registry, controller: new SyncedByHand(registry) };
}

const web = {
  metadata: { name: 'web', finalizers: ['example.com/hold'] },
  spec: { replicas: 1, selector: { matchLabels: { app: 'web' } }, template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'c', image: 'x' }] } } },
};

test('a Deployment being deleted with no ReplicaSet left (gone first, as foreground deletion does): only its status is synced', () => {
  const { types, registry, controller } = cluster();
  const deployments = types.find('apps', 'v1', 'deployments')!;
  registry.create(deployments, 'ns', web, SYSTEM);
  registry.delete(deployments, 'ns', 'web', { propagationPolicy: 'Background' }, SYSTEM);
  controller.syncNow('ns/web');
  const d = registry.store.get('apps/deployments', 'ns', 'web')!;
  assert.ok(d.metadata.deletionTimestamp);
  assert.equal(d.status.conditions.map((c: any) => [c.type, c.status]), [['Available', 'False']]);
  assert.equal(registry.store.list('apps/replicasets'), [], 'no ReplicaSet made for a Deployment being deleted');
});

test('a Deployment not being deleted gets its ReplicaSet, and its status names it', () => {
  const { types, registry, controller } = cluster();
  registry.create(types.find('apps', 'v1', 'deployments')!, 'ns', web, SYSTEM);
  controller.syncNow('ns/web');
  const [rs] = registry.store.list('apps/replicasets');
  assert.equal(rs?.spec.replicas, 1);
  const d = registry.store.get('apps/deployments', 'ns', 'web')!;
  assert.equal(d.status.conditions.find((c: any) => c.type === 'Progressing').message, `Created new replica set "${rs!.metadata.name}"`);
});

test.run();
