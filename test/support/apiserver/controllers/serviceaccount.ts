// The ServiceAccount controller and the root CA publisher: every namespace
// that is not being deleted has its `default` ServiceAccount and the
// `kube-root-ca.crt` ConfigMap with the cluster's CA (pods mount it).

import { ApiError } from '../errors.ts';
import type { ResourceType } from '../resources.ts';
import type { Change } from '../store.ts';
import { Controller } from './controller.ts';

const ROOT_CA = 'kube-root-ca.crt';
const DESCRIPTION = 'Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.';

export class ServiceAccountController extends Controller {
  readonly #ca: string;

  constructor(registry: ConstructorParameters<typeof Controller>[0], caPem: string) {
    super(registry, 'service-account-controller');
    this.#ca = caPem;
  }

  protected changed(c: Change): void {
    const ns = c.storage === '/namespaces' ? c.object.metadata.name : c.object.metadata.namespace;
    if (c.storage === '/namespaces' && c.type !== 'DELETED') this.enqueue(ns);
    else if (c.type === 'DELETED' && ((c.storage === '/serviceaccounts' && c.object.metadata.name === 'default') || (c.storage === '/configmaps' && c.object.metadata.name === ROOT_CA))) this.enqueue(ns);
    else if (c.type === 'MODIFIED' && c.storage === '/configmaps' && c.object.metadata.name === ROOT_CA) this.enqueue(ns);
  }

  protected resync(): void {
    for (const ns of this.registry.store.list('/namespaces')) this.enqueue(ns.metadata.name);
  }

  #type(resource: string): ResourceType {
    return this.registry.types.find('', 'v1', resource)!;
  }

  protected sync(namespace: string): void {
    const ns = this.registry.store.get('/namespaces', undefined, namespace);
    if (!ns || ns.metadata.deletionTimestamp || ns.status?.phase === 'Terminating') return;
    if (!this.registry.store.get('/serviceaccounts', namespace, 'default')) this.#create('serviceaccounts', namespace, { metadata: { name: 'default' } });
    const cm = this.registry.store.get('/configmaps', namespace, ROOT_CA);
    const data = { 'ca.crt': this.#ca };
    if (!cm) this.#create('configmaps', namespace, { metadata: { name: ROOT_CA, annotations: { 'kubernetes.io/description': DESCRIPTION } }, data });
    else if (cm.data?.['ca.crt'] !== this.#ca) this.registry.mutate(this.#type('configmaps'), namespace, ROOT_CA, (o) => void (o.data = data), this.caller);
  }

  #create(resource: string, namespace: string, body: any): void {
    try {
      this.registry.create(this.#type(resource), namespace, body, this.caller);
    } catch (err) {
      // Already there, or the namespace went meanwhile.
      if (!(err instanceof ApiError && [403, 404, 409].includes(err.code))) throw err;
    }
  }
}
