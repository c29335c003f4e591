// Where `kubectl apply -n NAMESPACE -f` puts each object of a render: a
// namespaced object that names no namespace goes into NAMESPACE (default
// without -n, as kubectl with no namespace in its context); a cluster-scoped
// one has none, whatever it names (the API server ignores it). Offline there is
// no discovery: the built-in cluster-scoped kinds are listed here, a custom
// kind is cluster-scoped when a CRD in the same manifests says so, any other
// is namespaced. An object that names another namespace than -n stays in its
// own, as `helm install -n` creates it (kubectl apply -n would refuse it; Helm's
// renders are what users pipe into check).

import type { Manifest } from './finding.ts';

/** GROUP/KIND of the cluster-scoped kinds Kubernetes serves (v1.32). */
const CLUSTER_SCOPED: ReadonlySet<string> = new Set([
  ...['Namespace', 'Node', 'PersistentVolume', 'ComponentStatus'].map((k) => `/${k}`),
  ...['ClusterRole', 'ClusterRoleBinding'].map((k) => `rbac.authorization.k8s.io/${k}`),
  'apiextensions.k8s.io/CustomResourceDefinition',
  'apiregistration.k8s.io/APIService',
  ...[
    'MutatingWebhookConfiguration',
    'ValidatingWebhookConfiguration',
    'ValidatingAdmissionPolicy',
    'ValidatingAdmissionPolicyBinding',
    'MutatingAdmissionPolicy',
    'MutatingAdmissionPolicyBinding',
  ].map((k) => `admissionregistration.k8s.io/${k}`),
  ...['StorageClass', 'CSIDriver', 'CSINode', 'VolumeAttachment', 'VolumeAttributesClass'].map((k) => `storage.k8s.io/${k}`),
  'scheduling.k8s.io/PriorityClass',
  'node.k8s.io/RuntimeClass',
  ...['IngressClass', 'IPAddress', 'ServiceCIDR'].map((k) => `networking.k8s.io/${k}`),
  ...['CertificateSigningRequest', 'ClusterTrustBundle'].map((k) => `certificates.k8s.io/${k}`),
  ...['FlowSchema', 'PriorityLevelConfiguration'].map((k) => `flowcontrol.apiserver.k8s.io/${k}`),
  ...['DeviceClass', 'ResourceSlice'].map((k) => `resource.k8s.io/${k}`),
]);

const groupKind = (o: Manifest): string => `${o.apiVersion.includes('/') ? o.apiVersion.split('/')[0] : ''}/${o.kind}`;

/** The namespace -n gave (NAME), and the flag or variable it came from (SOURCE), for messages. */
export interface GivenNamespace {
  readonly name: string;
  readonly source: string;
}

/** OBJECTS each in the namespace `helm install -n GIVEN` would create it in (new objects where that differs). */
export function placeInNamespace(objects: readonly Manifest[], given?: GivenNamespace): Manifest[] {
  const clusterScoped = new Set([
    ...CLUSTER_SCOPED,
    ...objects
      .filter((o) => o.kind === 'CustomResourceDefinition' && o.spec?.scope === 'Cluster')
      .map((crd) => `${crd.spec.group}/${crd.spec.names?.kind}`),
  ]);
  return objects.map((o): Manifest => {
    const { namespace, ...rest } = o.metadata;
    if (clusterScoped.has(groupKind(o))) return Object.hasOwn(o.metadata, 'namespace') ? { ...o, metadata: rest } : o;
    // An empty or null namespace (a template's `namespace: {{ .Values.unset }}`) is none, to kubectl and Helm too.
    if (!namespace) return { ...o, metadata: { ...o.metadata, namespace: given?.name ?? 'default' } };
    return o;
  });
}
