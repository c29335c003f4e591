// The patch strategies of the built-in types' lists, as their Go types
// declare them (`patchStrategy`/`patchMergeKey` in k8s.io/api): strategic
// merge patches and server-side apply merge these lists element by element;
// every other list is atomic (replaced whole). Custom resources have none.

/** How a field merges: a map's fields, or a list's key and element. */
export interface FieldSchema {
  /** A map (object) with these fields. */
  readonly fields?: Readonly<Record<string, FieldSchema>>;
  /** A list merged by this key; `''` for a list of scalars merged as a set. */
  readonly mergeKey?: string;
  /** The element of a merged list. */
  readonly element?: FieldSchema;
  /** `retainKeys`: a patch that names the field drops the keys it does not name. */
  readonly retainKeys?: boolean;
}

const map = (fields: Record<string, FieldSchema>, retainKeys = false): FieldSchema => ({ fields, retainKeys });
const list = (mergeKey: string, element?: FieldSchema): FieldSchema => ({ mergeKey, element });
const set = (): FieldSchema => ({ mergeKey: '' });

const META = map({ finalizers: set(), ownerReferences: list('uid') });
const CONTAINER = map({ ports: list('containerPort'), env: list('name'), volumeMounts: list('mountPath'), volumeDevices: list('devicePath') });
const VOLUME: FieldSchema = { fields: {}, retainKeys: true };
const POD_SPEC = map({
  containers: list('name', CONTAINER),
  initContainers: list('name', CONTAINER),
  ephemeralContainers: list('name', CONTAINER),
  volumes: list('name', VOLUME),
  imagePullSecrets: list('name'),
  hostAliases: list('ip'),
  topologySpreadConstraints: list('topologyKey'),
  resourceClaims: list('name', VOLUME),
  schedulingGates: list('name'),
});
const TEMPLATE = map({ metadata: META, spec: POD_SPEC });
const CONDITIONS = map({ conditions: list('type') });

const KINDS: Record<string, FieldSchema> = {
  Pod: map({ metadata: META, spec: POD_SPEC, status: map({ conditions: list('type'), podIPs: list('ip'), hostIPs: list('ip'), resourceClaimStatuses: list('name') }) }),
  PodTemplate: map({ metadata: META, template: TEMPLATE }),
  Deployment: map({ metadata: META, spec: map({ template: TEMPLATE, strategy: { fields: {}, retainKeys: true } }), status: CONDITIONS }),
  ReplicaSet: map({ metadata: META, spec: map({ template: TEMPLATE }), status: CONDITIONS }),
  StatefulSet: map({ metadata: META, spec: map({ template: TEMPLATE }), status: CONDITIONS }),
  DaemonSet: map({ metadata: META, spec: map({ template: TEMPLATE }), status: CONDITIONS }),
  Job: map({ metadata: META, spec: map({ template: TEMPLATE }), status: CONDITIONS }),
  Node: map({ metadata: META, status: map({ conditions: list('type'), addresses: list('type') }) }),
  Namespace: map({ metadata: META, status: CONDITIONS }),
  Service: map({ metadata: META, spec: map({ ports: list('port') }) }),
  PodDisruptionBudget: map({ metadata: META, status: CONDITIONS }),
};

const DEFAULT = map({ metadata: META });

/** The schema of a built-in kind (only its metadata's lists merge, for kinds not listed). */
export function schemaOf(kind: string): FieldSchema {
  return KINDS[kind] ?? DEFAULT;
}
