// Addressing objects in the Kubernetes API: a reference names the resource
// type and the object; it makes the URL path and the name used in messages.

export interface ResourceRef {
  readonly group: string;
  readonly version: string;
  /** Plural, as in the URL path ("clusterroles"). */
  readonly resource: string;
  readonly kind: string;
  readonly namespaced: boolean;
}

export interface ObjectRef extends ResourceRef {
  readonly namespace?: string;
  readonly name: string;
}

/** The metadata drainguard reads and writes; the rest of an object is passed through untouched. */
export interface ObjectMeta {
  name: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  ownerReferences?: { apiVersion: string; kind: string; name: string; uid: string; controller?: boolean; blockOwnerDeletion?: boolean }[];
  deletionTimestamp?: string;
  deletionGracePeriodSeconds?: number;
  creationTimestamp?: string;
}

export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  [field: string]: unknown;
}

export interface KubeList<T extends KubeObject = KubeObject> {
  metadata?: { resourceVersion?: string };
  items: T[];
}

const rbac = (resource: string, kind: string, namespaced: boolean): ResourceRef => ({
  group: 'rbac.authorization.k8s.io',
  version: 'v1',
  resource,
  kind,
  namespaced,
});

export const RESOURCES = {
  clusterrole: rbac('clusterroles', 'ClusterRole', false),
  clusterrolebinding: rbac('clusterrolebindings', 'ClusterRoleBinding', false),
  role: rbac('roles', 'Role', true),
  rolebinding: rbac('rolebindings', 'RoleBinding', true),
  serviceaccount: { group: '', version: 'v1', resource: 'serviceaccounts', kind: 'ServiceAccount', namespaced: true },
  pod: { group: '', version: 'v1', resource: 'pods', kind: 'Pod', namespaced: true },
  node: { group: '', version: 'v1', resource: 'nodes', kind: 'Node', namespaced: false },
  replicaset: { group: 'apps', version: 'v1', resource: 'replicasets', kind: 'ReplicaSet', namespaced: true },
  deployment: { group: 'apps', version: 'v1', resource: 'deployments', kind: 'Deployment', namespaced: true },
  lease: { group: 'coordination.k8s.io', version: 'v1', resource: 'leases', kind: 'Lease', namespaced: true },
  event: { group: '', version: 'v1', resource: 'events', kind: 'Event', namespaced: true },
  validatingadmissionpolicy: {
    group: 'admissionregistration.k8s.io',
    version: 'v1',
    resource: 'validatingadmissionpolicies',
    kind: 'ValidatingAdmissionPolicy',
    namespaced: false,
  },
  validatingadmissionpolicybinding: {
    group: 'admissionregistration.k8s.io',
    version: 'v1',
    resource: 'validatingadmissionpolicybindings',
    kind: 'ValidatingAdmissionPolicyBinding',
    namespaced: false,
  },
} as const satisfies Record<string, ResourceRef>;

/**
 * A metav1.MicroTime (a Lease's acquireTime and renewTime): RFC 3339 UTC with exactly six
 * fractional digits, as the API server parses it ("2006-01-02T15:04:05.000000Z07:00");
 * three are refused (400).
 */
export function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

export const apiVersion = (r: ResourceRef): string => (r.group ? `${r.group}/${r.version}` : r.version);

/** The URL path of an object, or of the collection when `name` is undefined (all namespaces when `namespace` is too). */
export function pathOf(r: ResourceRef, namespace?: string, name?: string): string {
  const base = r.group ? `/apis/${r.group}/${r.version}` : `/api/${r.version}`;
  const ns = r.namespaced && namespace !== undefined ? `/namespaces/${encodeURIComponent(namespace)}` : '';
  return `${base}${ns}/${r.resource}${name === undefined ? '' : `/${encodeURIComponent(name)}`}`;
}

export const objectPath = (o: ObjectRef): string => pathOf(o, o.namespace, o.name);

/** "clusterrole/NAME", "serviceaccount/NAMESPACE/NAME": as users name objects in DRAINGUARD_GUARD. */
export function describe(o: ObjectRef): string {
  const kind = o.kind.toLowerCase();
  return o.namespaced && o.namespace !== undefined ? `${kind}/${o.namespace}/${o.name}` : `${kind}/${o.name}`;
}
