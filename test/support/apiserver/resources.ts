// The resource types the fake API server serves: the built-in ones drainguard
// and its tests use, plus any registered later (custom resources via CRDs).

export interface ResourceType {
  readonly group: string;
  readonly version: string;
  /** Plural, lower case: the path segment ("clusterroles"). */
  readonly resource: string;
  readonly kind: string;
  readonly singular: string;
  readonly namespaced: boolean;
  readonly shortNames?: readonly string[];
  readonly subresources?: readonly string[];
  /** Defined by a CustomResourceDefinition (name of the CRD). */
  readonly crd?: string;
}

export const apiVersionOf = (t: ResourceType): string => (t.group ? `${t.group}/${t.version}` : t.version);
export const groupOf = (apiVersion: string): string => (apiVersion.includes('/') ? apiVersion.split('/')[0]! : '');
export const VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update'];

const t = (
  group: string,
  version: string,
  resource: string,
  kind: string,
  namespaced: boolean,
  shortNames?: string[],
  subresources?: string[],
): ResourceType => ({ group, version, resource, kind, singular: kind.toLowerCase(), namespaced, shortNames, subresources });

export const BUILTIN: readonly ResourceType[] = [
  t('', 'v1', 'namespaces', 'Namespace', false, ['ns'], ['status']),
  t('', 'v1', 'pods', 'Pod', true, ['po'], ['status']),
  t('', 'v1', 'serviceaccounts', 'ServiceAccount', true, ['sa']),
  t('', 'v1', 'configmaps', 'ConfigMap', true, ['cm']),
  t('', 'v1', 'secrets', 'Secret', true),
  t('', 'v1', 'events', 'Event', true, ['ev']),
  t('rbac.authorization.k8s.io', 'v1', 'clusterroles', 'ClusterRole', false),
  t('rbac.authorization.k8s.io', 'v1', 'clusterrolebindings', 'ClusterRoleBinding', false),
  t('rbac.authorization.k8s.io', 'v1', 'roles', 'Role', true),
  t('rbac.authorization.k8s.io', 'v1', 'rolebindings', 'RoleBinding', true),
  t('coordination.k8s.io', 'v1', 'leases', 'Lease', true),
  t('events.k8s.io', 'v1', 'events', 'Event', true, ['ev']),
  t('apiextensions.k8s.io', 'v1', 'customresourcedefinitions', 'CustomResourceDefinition', false, ['crd', 'crds'], ['status']),
];

/** Looks types up by group/version/resource and by apiVersion/kind. */
export class ResourceTypes {
  readonly #types = new Map<string, ResourceType>();

  constructor(initial: readonly ResourceType[] = BUILTIN) {
    for (const type of initial) this.add(type);
  }

  add(type: ResourceType): void {
    this.#types.set(`${type.group}/${type.version}/${type.resource}`, type);
  }

  removeCrd(crd: string): void {
    for (const [key, type] of this.#types) if (type.crd === crd) this.#types.delete(key);
  }

  find(group: string, version: string, resource: string): ResourceType | undefined {
    return this.#types.get(`${group}/${version}/${resource}`);
  }

  byKind(apiVersion: string, kind: string): ResourceType | undefined {
    return this.all().find((x) => apiVersionOf(x) === apiVersion && x.kind === kind);
  }

  /** Any served version of a group's resource (for owner lookups and storage, which is version-independent here). */
  byGroupKind(group: string, kind: string): ResourceType | undefined {
    return this.all().find((x) => x.group === group && x.kind === kind);
  }

  all(): ResourceType[] {
    return [...this.#types.values()];
  }

  groups(): Map<string, string[]> {
    const out = new Map<string, string[]>();
    for (const x of this.#types.values()) {
      if (x.group === '') continue;
      const versions = out.get(x.group) ?? [];
      if (!versions.includes(x.version)) versions.push(x.version);
      out.set(x.group, versions);
    }
    return out;
  }
}

/** The storage identity of a resource: versions of one group/resource share objects. */
export const storageKey = (type: ResourceType): string => `${type.group}/${type.resource}`;
