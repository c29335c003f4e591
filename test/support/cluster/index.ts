// The control plane for a test file (test/support/tier.ts says where it comes from);
// see README.md beside this file.
//
//   const cluster = await useCluster();          // the run's shared control plane
//   const ns = await cluster.namespace('guard'); // fresh, deleted (and waited for) at the end of the file
//   const sa = await cluster.serviceAccount(ns.name, 'op');
//   await cluster.grant(ns.name, 'op', 'op-leases', [{ apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get'] }]);
//   const token = await cluster.token(ns.name, 'op', { pod });
//   const kubeconfig = cluster.kubeconfigFor(token);

import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { onFileEnd } from '../file-end.ts';
import { within } from '../wait.ts';
import { Api } from './api.ts';
import type { ControlPlane, ControlPlaneOptions, ControlPlaneState } from './control-plane.ts';
import { startControlPlane } from './control-plane.ts';

export { Api, ApiCallError } from './api.ts';
export type { ApiResponse, WatchEvent } from './api.ts';
export type { ControlPlane, ControlPlaneOptions, ControlPlaneState } from './control-plane.ts';
export { type Scheduler, locateScheduler, startScheduler } from './scheduler.ts';

/** The variable the runner sets for the files that use the cluster: the path of the control plane's JSON state. */
export const STATE_VARIABLE = 'TEST_CLUSTER_STATE';

const CLEANUP_MS = 90_000;
const unique = (prefix: string) => `${prefix}-${randomBytes(4).toString('hex')}`;

/** Plural resource names where the kind's lower case plus `s` is wrong. */
const PLURALS: Record<string, string> = {
  Endpoints: 'endpoints',
  NetworkPolicy: 'networkpolicies',
  PriorityClass: 'priorityclasses',
  StorageClass: 'storageclasses',
  IngressClass: 'ingressclasses',
  ValidatingAdmissionPolicy: 'validatingadmissionpolicies',
};

/** The REST path of a type, or of one object of it. */
export function resourcePath(apiVersion: string, plural: string, namespace?: string, name?: string): string {
  const base = apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
  return `${base}${namespace ? `/namespaces/${namespace}` : ''}/${plural}${name ? `/${name}` : ''}`;
}

/** The REST path of an object from its apiVersion, kind, namespace and name; `plural` where the kind's plural is irregular. */
export function pathOf(
  obj: { apiVersion: string; kind: string; metadata: { name?: string; namespace?: string } },
  plural?: string,
): string {
  return resourcePath(
    obj.apiVersion,
    plural ?? PLURALS[obj.kind] ?? `${obj.kind.toLowerCase()}s`,
    obj.metadata.namespace,
    obj.metadata.name,
  );
}

export interface Namespace {
  readonly name: string;
  /** Deletes it with everything in it and resolves once it is gone. */
  delete(): Promise<void>;
}

export class TestCluster {
  /** The release the API server runs (v1.37.2). */
  readonly release: string;
  readonly url: string;
  readonly caFile: string;
  readonly ca: string;
  readonly adminKubeconfig: string;
  /** The admin API (client certificate, O=system:masters). */
  readonly api: Api;
  readonly state: ControlPlaneState;
  /** A temporary directory of this file's, removed at its end. */
  readonly dir: string;
  readonly #clusterObjects: string[] = [];
  readonly #namespaces = new Map<string, Namespace>();
  #node?: Promise<string>;

  constructor(state: ControlPlaneState, options: { cleanUp?: boolean } = {}) {
    this.state = state;
    this.release = state.release;
    this.url = state.url;
    this.caFile = state.caFile;
    this.ca = readFileSync(state.caFile, 'utf8');
    this.adminKubeconfig = state.adminKubeconfig;
    this.api = Api.admin(state);
    this.dir = mkdtempSync(join(tmpdir(), 'drainguard-test-cluster-'));
    // A private control plane is thrown away whole: nothing to clean up in it.
    onFileEnd(() => (options.cleanUp === false ? Promise.resolve(rmSync(this.dir, { recursive: true, force: true })) : this.cleanup()));
  }

  /**
   * Whether `kubectl delete namespace` deletes the namespace's pods before the rest (KEP-5080,
   * OrderedNamespaceDeletion): on by default from 1.33. The control plane runs each release
   * with its defaults, so on 1.30–1.32 the namespace controller deletes everything at once.
   */
  get orderedNamespaceDeletion(): boolean {
    const minor = Number(/^v1\.(\d+)\./.exec(this.release)?.[1]);
    return minor >= 33;
  }

  /** A fresh namespace `PREFIX-xxxxxxxx`, ready for pods (its default ServiceAccount exists). */
  async namespace(prefix: string): Promise<Namespace> {
    const name = unique(prefix);
    await this.api.create('/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
    const ns: Namespace = { name, delete: () => this.#deleteNamespace(name) };
    this.#namespaces.set(name, ns);
    // The ServiceAccount admission plugin refuses pods until the controller made it.
    await this.waitFor(() => this.api.get(`/api/v1/namespaces/${name}/serviceaccounts/default`), 30_000, `ServiceAccount ${name}/default`);
    return ns;
  }

  /** Creates any object as the admin; a cluster-scoped one is deleted at the end of the file (give it a unique name). */
  async create(obj: any, plural?: string): Promise<any> {
    const path = pathOf(obj, plural);
    const created = await this.api.create(path.slice(0, path.lastIndexOf('/')), obj);
    if (!obj.metadata.namespace) this.#clusterObjects.push(path);
    return created;
  }

  serviceAccount(namespace: string, name: string): Promise<any> {
    return this.create({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace } });
  }

  /**
   * `rules` for the ServiceAccount NAMESPACE/SERVICE_ACCOUNT: a Role and a RoleBinding `name` in its
   * namespace, or with `clusterWide` a ClusterRole and a ClusterRoleBinding (give a unique name).
   */
  async grant(namespace: string, serviceAccount: string, name: string, rules: object[], { clusterWide = false } = {}): Promise<void> {
    const [role, binding] = clusterWide ? ['ClusterRole', 'ClusterRoleBinding'] : ['Role', 'RoleBinding'];
    const metadata = clusterWide ? { name } : { name, namespace };
    await this.create({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: role, metadata, rules });
    await this.create({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: binding,
      metadata,
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: role, name },
      subjects: [{ kind: 'ServiceAccount', name: serviceAccount, namespace }],
    });
  }

  /** Waits until the list at `path` is empty; past `ms`, fails naming what is still there. */
  async emptied(path: string, what: string, ms = 30_000): Promise<void> {
    const names = async () => (await this.api.list(path)).map((o: any) => o.metadata.name as string);
    await this.waitFor(async () => (await names()).length === 0, ms, `no ${what} left`).catch(async () => {
      throw new Error(`${what} still there after ${ms} ms: ${(await names()).join(', ')}`);
    });
  }

  /** A token of the ServiceAccount from the TokenRequest API; bound to `pod` when given (`kubectl create token --bound-object-kind Pod`). */
  async token(
    namespace: string,
    serviceAccount: string,
    options: { pod?: { name: string; uid: string }; expirationSeconds?: number } = {},
  ): Promise<string> {
    const { pod, expirationSeconds = 3600 } = options;
    const r = await this.api.create(`/api/v1/namespaces/${namespace}/serviceaccounts/${serviceAccount}/token`, {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      spec: { expirationSeconds, ...(pod && { boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: pod.name, uid: pod.uid } }) },
    });
    return r.status.token as string;
  }

  /** Writes a kubeconfig for `token` (this cluster's URL and CA, or another `server` such as a fault proxy); returns its path. */
  kubeconfigFor(token: string, options: { server?: string; namespace?: string } = {}): string {
    const path = join(mkdtempSync(join(this.dir, 'kubeconfig-')), 'kubeconfig');
    writeFileSync(
      path,
      `apiVersion: v1
kind: Config
clusters:
- name: test
  cluster:
    server: ${options.server ?? this.url}
    certificate-authority-data: ${Buffer.from(this.ca).toString('base64')}
users:
- name: test
  user:
    token: ${token}
contexts:
- name: test
  context:
    cluster: test
    user: test${options.namespace ? `\n    namespace: ${options.namespace}` : ''}
current-context: test
`,
      { mode: 0o600 },
    );
    return path;
  }

  /** A Node object for pods to be bound to (there is no kubelet), one per file, deleted at its end. */
  node(): Promise<string> {
    this.#node ??= (async () => {
      const name = unique('node');
      await this.create({ apiVersion: 'v1', kind: 'Node', metadata: { name, labels: { 'kubernetes.io/hostname': name } } });
      return name;
    })();
    return this.#node;
  }

  /** Polls `check` (every 50 ms) until it gives a value other than undefined/false; rejects after `ms`. */
  /** `what` names the wait; `detail`, read when it times out, says what the state was then (logs, a node's tail). */
  async waitFor<T>(
    check: () => Promise<T | undefined | false> | T | undefined | false,
    ms: number,
    what: string,
    detail?: () => string,
  ): Promise<T> {
    const deadline = Date.now() + ms;
    let last: unknown;
    for (;;) {
      try {
        const v = await within(Math.max(1, deadline - Date.now()), what, Promise.resolve(check()));
        if (v !== undefined && v !== false) return v as T;
      } catch (err) {
        last = err;
      }
      if (Date.now() >= deadline)
        throw new Error(
          `timed out after ${ms} ms waiting for ${what}${last ? ` (last error: ${last})` : ''}${detail ? `\n${detail()}` : ''}`,
        );
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** Deletes a namespace with what a test may have left in it: pods there is no kubelet to finish, finalizers nobody will remove. */
  async #startDeleting(name: string): Promise<void> {
    this.#namespaces.delete(name);
    await this.#unstick(name);
    await this.api.delete(`/api/v1/namespaces/${name}`);
  }

  async #deleteNamespace(name: string): Promise<void> {
    await this.#startDeleting(name);
    // The namespace controller waits 5 s before it starts on a deleted namespace (namespaceDeletionGracePeriod).
    await this.waitFor(
      async () => {
        if (!(await this.api.get(`/api/v1/namespaces/${name}`))) return true;
        await this.#unstick(name);
        return false;
      },
      CLEANUP_MS,
      `namespace ${name} gone`,
    );
  }

  async #unstick(name: string): Promise<void> {
    for (const pod of await this.api.list(`/api/v1/namespaces/${name}/pods`)) {
      await this.api.delete(`/api/v1/namespaces/${name}/pods/${pod.metadata.name}`, { gracePeriodSeconds: 0 });
    }
    for (const [v, plural] of [
      ['v1', 'serviceaccounts'],
      ['v1', 'configmaps'],
      ['rbac.authorization.k8s.io/v1', 'roles'],
      ['rbac.authorization.k8s.io/v1', 'rolebindings'],
      ['coordination.k8s.io/v1', 'leases'],
      ['apps/v1', 'deployments'],
    ] as const) {
      for (const o of await this.api.list(resourcePath(v, plural, name))) {
        if (o.metadata.finalizers?.length)
          await this.api.request(
            'PATCH',
            resourcePath(v, plural, name, o.metadata.name),
            { metadata: { finalizers: null } },
            'application/merge-patch+json',
          );
      }
    }
  }

  /**
   * Deletes what this file made; runs by itself at the end of the file. Nothing is left to hold
   * the deletions up, and the namespace controller finishes them on its own time (5 s at
   * least), so the file does not wait for them.
   */
  async cleanup(): Promise<void> {
    await Promise.all([...this.#namespaces.keys()].map((name) => this.#startDeleting(name)));
    // Later objects first: custom resources go before their CRD.
    for (const path of this.#clusterObjects.splice(0).reverse()) {
      await this.api.delete(path);
      const left = await this.api.get(path);
      // Finalizers a test left; the API server's own (a CRD's customresourcecleanup) finish by themselves.
      const finalizers: string[] = left?.metadata.finalizers ?? [];
      const kept = finalizers.filter((f) => f.endsWith('.k8s.io'));
      if (left && kept.length < finalizers.length)
        await this.api.request('PATCH', path, { metadata: { finalizers: kept } }, 'application/merge-patch+json');
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}

let shared: Promise<TestCluster> | undefined;

/**
 * The run's shared control plane (test/run.ts starts it and sets TEST_CLUSTER_STATE);
 * a file started some other way gets a private one.
 */
export function useCluster(): Promise<TestCluster> {
  shared ??= (async () => {
    const stateFile = process.env[STATE_VARIABLE];
    if (stateFile) return new TestCluster(JSON.parse(readFileSync(stateFile, 'utf8')) as ControlPlaneState);
    return (await privateCluster()).cluster;
  })();
  return shared;
}

/**
 * A control plane of this file's own, for the fault tests that restart the API
 * server or stop the controller-manager, and for feature gates the run's has
 * off (`options.featureGates`); stopped at the end of the file.
 */
export async function privateCluster(options: ControlPlaneOptions = {}): Promise<{ cluster: TestCluster; controlPlane: ControlPlane }> {
  const controlPlane = await startControlPlane(options);
  onFileEnd(() => controlPlane.stop());
  return { cluster: new TestCluster(controlPlane, { cleanUp: false }), controlPlane };
}
