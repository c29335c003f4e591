// The stand-in control plane in one process: the store (etcd's part), the
// API server with its authorizer's and authenticators' informers, the
// apiextensions controllers, and the controller-manager, with a fresh cluster's
// namespaces and bootstrap RBAC. The API server and the controller-manager
// stop and start on their own, as the real processes do.

import { readFileSync } from 'node:fs';
import { ControllerManager } from './controllers/manager.ts';
import { CustomResourceController } from './crd.ts';
import { InformerView } from './informer.ts';
import type { Pki } from '../cluster/pki.ts';
import { bootstrapPolicy, type RbacView } from './rbac.ts';
import { Registry } from './registry.ts';
import { ResourceTypes } from './resources.ts';
import { ApiServer } from './server.ts';
import { Store } from './store.ts';
import { TokenIssuer } from './tokens.ts';

export interface StandInOptions {
  readonly pki: Pki;
  /** How long the authorizer and the token authenticator lag behind the store (informer.ts). */
  readonly informerLagMs?: number;
}

const RBAC_STORAGES = ['rbac.authorization.k8s.io/clusterroles', 'rbac.authorization.k8s.io/clusterrolebindings', 'rbac.authorization.k8s.io/roles', 'rbac.authorization.k8s.io/rolebindings'];
/** A watch event's way to an informer: a few requests' time on this server. */
const INFORMER_LAG_MS = 5;
const SYSTEM = { user: { name: 'system:apiserver', groups: ['system:masters'] } };

export class StandIn {
  readonly store = new Store();
  readonly types = new ResourceTypes();
  readonly registry: Registry;
  readonly controllerManager: ControllerManager;
  readonly #server: ApiServer;
  readonly #view: InformerView;
  #port = 0;

  constructor(options: StandInOptions) {
    const { pki } = options;
    this.#view = new InformerView(this.store, [...RBAC_STORAGES, '/serviceaccounts', '/pods', '/secrets', '/nodes'], options.informerLagMs ?? INFORMER_LAG_MS);
    const view = this.#view;
    const rbac: RbacView = {
      clusterRoles: () => view.list(RBAC_STORAGES[0]!),
      clusterRoleBindings: () => view.list(RBAC_STORAGES[1]!),
      roles: (ns) => view.list(RBAC_STORAGES[2]!, ns),
      roleBindings: (ns) => view.list(RBAC_STORAGES[3]!, ns),
    };
    this.registry = new Registry(this.store, this.types, () => Date.now(), () => rbac);
    this.#bootstrap();
    new CustomResourceController(this.registry);
    const ca = readFileSync(pki.caCert, 'utf8');
    this.#server = new ApiServer({
      registry: this.registry,
      issuer: new TokenIssuer(readFileSync(pki.serviceAccountKey, 'utf8'), readFileSync(pki.serviceAccountPub, 'utf8')),
      view,
      rbac,
      tls: { cert: readFileSync(pki.servingCert, 'utf8'), key: readFileSync(pki.servingKey, 'utf8'), ca },
    });
    this.controllerManager = new ControllerManager(this.registry, ca);
  }

  /** What a fresh cluster has before anyone writes: its namespaces and the bootstrap policy. */
  #bootstrap(): void {
    const ns = this.types.find('', 'v1', 'namespaces')!;
    for (const name of ['default', 'kube-system', 'kube-public', 'kube-node-lease']) this.registry.create(ns, undefined, { metadata: { name } }, SYSTEM);
    for (const o of bootstrapPolicy()) this.registry.create(this.types.byKind(o.apiVersion, o.kind)!, undefined, o, SYSTEM);
  }

  get port(): number {
    return this.#port;
  }

  async startApiServer(port = this.#port): Promise<void> {
    await this.#server.listen(port);
    this.#port = this.#server.port;
  }

  stopApiServer(): Promise<void> {
    return this.#server.close();
  }

  async close(): Promise<void> {
    this.controllerManager.stop();
    await this.#server.close();
    this.#view.close();
  }
}
