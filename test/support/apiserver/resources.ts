// The resource types served: the built-in ones drainguard, its tests, the
// kubelet stand-in, kubectl and helm use, and those CustomResourceDefinitions
// add. Discovery (discovery.ts) and routing read them from here.

export interface Subresource {
  readonly kind: string;
  readonly group?: string;
  readonly version?: string;
  readonly verbs: readonly string[];
}

export interface ResourceType {
  readonly group: string;
  readonly version: string;
  /** Plural, lower case: the path segment ("clusterroles"). */
  readonly resource: string;
  readonly kind: string;
  readonly singular: string;
  readonly namespaced: boolean;
  readonly verbs: readonly string[];
  readonly shortNames?: readonly string[];
  readonly categories?: readonly string[];
  readonly subresources: Readonly<Record<string, Subresource>>;
  /** Objects of these types are kept under this key whatever the version (core and events.k8s.io Events share one). */
  readonly storage: string;
  /** metadata.generation counts changes of the spec. */
  readonly generation?: boolean;
  /** Served by a CustomResourceDefinition (its name). */
  readonly crd?: string;
  /** A custom resource version's structural schema (openAPIV3Schema). */
  readonly schema?: any;
  /** Only created, never stored (reviews, TokenRequest). */
  readonly virtual?: boolean;
}

export const CRUD = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'] as const;
const STATUS: Subresource = { kind: '', verbs: ['get', 'patch', 'update'] };

export const apiVersionOf = (t: { group: string; version: string }): string => (t.group ? `${t.group}/${t.version}` : t.version);
export const groupOf = (apiVersion: string): string => (apiVersion.includes('/') ? apiVersion.split('/')[0]! : '');
export const versionOf = (apiVersion: string): string => apiVersion.split('/').pop()!;

interface Spec {
  shortNames?: string[];
  categories?: string[];
  subresources?: Record<string, Subresource | 'status'>;
  generation?: boolean;
  verbs?: readonly string[];
  storage?: string;
  virtual?: boolean;
  singular?: string;
}

function type(group: string, version: string, resource: string, kind: string, namespaced: boolean, spec: Spec = {}): ResourceType {
  const subresources: Record<string, Subresource> = {};
  for (const [name, s] of Object.entries(spec.subresources ?? {})) subresources[name] = s === 'status' ? { ...STATUS, kind } : s;
  return {
    group,
    version,
    resource,
    kind,
    singular: spec.singular ?? kind.toLowerCase(),
    namespaced,
    verbs: spec.verbs ?? CRUD,
    shortNames: spec.shortNames,
    categories: spec.categories,
    subresources,
    storage: spec.storage ?? `${group}/${resource}`,
    generation: spec.generation,
    virtual: spec.virtual,
  };
}

const CREATE_ONLY = ['create'];
const RBAC = 'rbac.authorization.k8s.io';

export const BUILTIN: readonly ResourceType[] = [
  type('', 'v1', 'namespaces', 'Namespace', false, { shortNames: ['ns'], verbs: ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'], subresources: { status: 'status', finalize: { kind: 'Namespace', verbs: ['update'] } } }),
  type('', 'v1', 'pods', 'Pod', true, {
    shortNames: ['po'],
    categories: ['all'],
    subresources: {
      status: 'status',
      binding: { kind: 'Binding', verbs: ['create'] },
      eviction: { kind: 'Eviction', group: 'policy', version: 'v1', verbs: ['create'] },
    },
  }),
  type('', 'v1', 'serviceaccounts', 'ServiceAccount', true, { shortNames: ['sa'], subresources: { token: { kind: 'TokenRequest', group: 'authentication.k8s.io', version: 'v1', verbs: ['create'] } } }),
  type('', 'v1', 'configmaps', 'ConfigMap', true, { shortNames: ['cm'] }),
  type('', 'v1', 'secrets', 'Secret', true),
  type('', 'v1', 'events', 'Event', true, { shortNames: ['ev'], storage: 'events' }),
  type('', 'v1', 'nodes', 'Node', false, { shortNames: ['no'], subresources: { status: 'status' } }),
  type('', 'v1', 'services', 'Service', true, { shortNames: ['svc'], categories: ['all'], subresources: { status: 'status' } }),
  type('', 'v1', 'endpoints', 'Endpoints', true, { shortNames: ['ep'], singular: 'endpoints' }),
  type('', 'v1', 'persistentvolumeclaims', 'PersistentVolumeClaim', true, { shortNames: ['pvc'], subresources: { status: 'status' } }),
  type('', 'v1', 'resourcequotas', 'ResourceQuota', true, { shortNames: ['quota'], subresources: { status: 'status' } }),
  type('', 'v1', 'limitranges', 'LimitRange', true, { shortNames: ['limits'] }),
  type('apps', 'v1', 'deployments', 'Deployment', true, { shortNames: ['deploy'], categories: ['all'], generation: true, subresources: { status: 'status', scale: { kind: 'Scale', group: 'autoscaling', version: 'v1', verbs: ['get', 'patch', 'update'] } } }),
  type('apps', 'v1', 'replicasets', 'ReplicaSet', true, { shortNames: ['rs'], categories: ['all'], generation: true, subresources: { status: 'status', scale: { kind: 'Scale', group: 'autoscaling', version: 'v1', verbs: ['get', 'patch', 'update'] } } }),
  type('apps', 'v1', 'statefulsets', 'StatefulSet', true, { shortNames: ['sts'], categories: ['all'], generation: true, subresources: { status: 'status' } }),
  type('apps', 'v1', 'daemonsets', 'DaemonSet', true, { shortNames: ['ds'], categories: ['all'], generation: true, subresources: { status: 'status' } }),
  type('batch', 'v1', 'jobs', 'Job', true, { categories: ['all'], generation: true, subresources: { status: 'status' } }),
  type('batch', 'v1', 'cronjobs', 'CronJob', true, { shortNames: ['cj'], categories: ['all'], generation: true, subresources: { status: 'status' } }),
  type('policy', 'v1', 'poddisruptionbudgets', 'PodDisruptionBudget', true, { shortNames: ['pdb'], generation: true, subresources: { status: 'status' } }),
  type(RBAC, 'v1', 'clusterroles', 'ClusterRole', false),
  type(RBAC, 'v1', 'clusterrolebindings', 'ClusterRoleBinding', false),
  type(RBAC, 'v1', 'roles', 'Role', true),
  type(RBAC, 'v1', 'rolebindings', 'RoleBinding', true),
  type('coordination.k8s.io', 'v1', 'leases', 'Lease', true),
  type('events.k8s.io', 'v1', 'events', 'Event', true, { shortNames: ['ev'], storage: 'events' }),
  type('admissionregistration.k8s.io', 'v1', 'validatingadmissionpolicies', 'ValidatingAdmissionPolicy', false, { categories: ['api-extensions'], generation: true, subresources: { status: 'status' } }),
  type('admissionregistration.k8s.io', 'v1', 'validatingadmissionpolicybindings', 'ValidatingAdmissionPolicyBinding', false, { categories: ['api-extensions'], generation: true }),
  type('apiextensions.k8s.io', 'v1', 'customresourcedefinitions', 'CustomResourceDefinition', false, { shortNames: ['crd', 'crds'], categories: ['api-extensions'], generation: true, subresources: { status: 'status' } }),
  type('authentication.k8s.io', 'v1', 'selfsubjectreviews', 'SelfSubjectReview', false, { verbs: CREATE_ONLY, virtual: true }),
  type('authentication.k8s.io', 'v1', 'tokenreviews', 'TokenReview', false, { verbs: CREATE_ONLY, virtual: true }),
  type('authorization.k8s.io', 'v1', 'selfsubjectaccessreviews', 'SelfSubjectAccessReview', false, { verbs: CREATE_ONLY, virtual: true }),
  type('authorization.k8s.io', 'v1', 'selfsubjectrulesreviews', 'SelfSubjectRulesReview', false, { verbs: CREATE_ONLY, virtual: true }),
  type('authorization.k8s.io', 'v1', 'subjectaccessreviews', 'SubjectAccessReview', false, { verbs: CREATE_ONLY, virtual: true }),
  type('authorization.k8s.io', 'v1', 'localsubjectaccessreviews', 'LocalSubjectAccessReview', true, { verbs: CREATE_ONLY, virtual: true }),
];

/** The custom resource types a CustomResourceDefinition serves (one per served version). */
export function crdTypes(crd: any): ResourceType[] {
  const spec = crd.spec ?? {};
  const names = spec.names ?? {};
  return (spec.versions ?? [])
    .filter((v: any) => v.served !== false)
    .map((v: any) =>
      type(spec.group, v.name, names.plural, names.kind, spec.scope !== 'Cluster', {
        singular: names.singular ?? String(names.kind).toLowerCase(),
        shortNames: names.shortNames,
        categories: names.categories,
        generation: true,
        subresources: {
          ...(v.subresources?.status && { status: 'status' as const }),
          ...(v.subresources?.scale && { scale: { kind: 'Scale', group: 'autoscaling', version: 'v1', verbs: ['get', 'patch', 'update'] } }),
        },
      }),
    )
    .map((t: ResourceType) => ({ ...t, crd: crd.metadata.name }));
}

/** Looks types up by group/version/resource and by group/kind. */
export class ResourceTypes {
  readonly #types = new Map<string, ResourceType>();

  constructor(initial: readonly ResourceType[] = BUILTIN) {
    for (const t of initial) this.add(t);
  }

  add(t: ResourceType): void {
    this.#types.set(`${t.group}/${t.version}/${t.resource}`, t);
  }

  removeCrd(crd: string): void {
    for (const [key, t] of this.#types) if (t.crd === crd) this.#types.delete(key);
  }

  find(group: string, version: string, resource: string): ResourceType | undefined {
    return this.#types.get(`${group}/${version}/${resource}`);
  }

  /** The type of apiVersion + kind. */
  byKind(apiVersion: string, kind: string): ResourceType | undefined {
    for (const t of this.#types.values()) if (apiVersionOf(t) === apiVersion && t.kind === kind) return t;
    return undefined;
  }

  /** A served version of a group's kind (owner references name a kind, any version). */
  byGroupKind(group: string, kind: string): ResourceType | undefined {
    for (const t of this.#types.values()) if (t.group === group && t.kind === kind && !t.virtual) return t;
    return undefined;
  }

  /** One served version per stored resource. */
  stored(): ResourceType[] {
    const seen = new Map<string, ResourceType>();
    for (const t of this.#types.values()) if (!t.virtual && !seen.has(t.storage)) seen.set(t.storage, t);
    return [...seen.values()];
  }

  all(): ResourceType[] {
    return [...this.#types.values()];
  }

  /** Groups and their versions, in the order kube-apiserver lists them (core first, then as registered). */
  groups(): Map<string, string[]> {
    const out = new Map<string, string[]>();
    for (const t of this.#types.values()) {
      const versions = out.get(t.group) ?? [];
      if (!versions.includes(t.version)) versions.push(t.version);
      out.set(t.group, versions);
    }
    return out;
  }
}
