// What each built-in type adds to the generic REST semantics of registry.ts:
// defaults, admission (namespace lifecycle, ServiceAccount, default
// tolerations), validation, and which fields a write may change
// (pkg/registry/*/strategy.go and plugin/pkg/admission in kube-apiserver).

import { randomBytes } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { policyBindingStrategy, policyStrategy } from './admission.ts';
import { ApiError, type FieldError, forbidden, invalid } from './errors.ts';
import { type PolicyRule, type RbacView, type UserInfo, authorize, formatRule, isSuperuser, onlyGcFieldsChanged, rulesFor, uncovered } from './rbac.ts';
import type { ResourceType } from './resources.ts';
import type { KubeObject } from './store.ts';

export interface WriteContext {
  /** The type written (its served version). */
  readonly type: ResourceType;
  readonly user: UserInfo;
  readonly now: number;
  /** The authorizer's view, for the escalation checks. */
  readonly rbac: RbacView;
  /** A stored object, read for admission (ServiceAccounts of pods, roles of bindings). */
  get(storage: string, namespace: string | undefined, name: string): KubeObject | undefined;
}

export interface Strategy {
  /** Defaults and admission of a new object; throws to refuse it. */
  create?(obj: KubeObject, ctx: WriteContext): void;
  /** A write of the main resource: `obj` is what will be stored unless this throws. */
  update?(obj: KubeObject, old: KubeObject, ctx: WriteContext): void;
  /** Fields of the spec whose change counts as a new generation (default: all but metadata and status). */
  specChanged?(obj: KubeObject, old: KubeObject): boolean;
}

// ---- names, finalizers, times ------------------------------------------------

const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const QUALIFIED_NAME = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const STANDARD_FINALIZERS = new Set(['kubernetes', 'orphan', 'foregroundDeletion']);

const GENERATE_ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';
export const randomSuffix = (n = 5): string => [...randomBytes(n)].map((b) => GENERATE_ALPHABET[b % GENERATE_ALPHABET.length]).join('');

/** A path segment name: what RBAC objects and a few others accept. */
const pathSegmentError = (name: string): string | undefined =>
  name === '.' || name === '..' ? `may not be '${name}'` : /[/%]/.test(name) ? `may not contain '${name.includes('/') ? '/' : '%'}'` : undefined;

export function nameErrors(type: ResourceType, name: string): FieldError[] {
  if (!name) return [{ field: 'metadata.name', message: 'Required value: name or generateName is required', reason: 'FieldValueRequired' }];
  if (type.group === 'rbac.authorization.k8s.io') {
    const e = pathSegmentError(name);
    return e ? [{ field: 'metadata.name', message: `Invalid value: "${name}": ${e}` }] : [];
  }
  const label = type.resource === 'namespaces' || (type.group === '' && type.resource === 'services');
  const ok = label ? DNS_LABEL.test(name) && name.length <= 63 : DNS_SUBDOMAIN.test(name) && name.length <= 253;
  if (ok) return [];
  const what = label
    ? `a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`
    : `a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`;
  return [{ field: 'metadata.name', message: `Invalid value: "${name}": ${what}` }];
}

export function finalizerErrors(finalizers: unknown): FieldError[] {
  if (finalizers === undefined || finalizers === null) return [];
  if (!Array.isArray(finalizers)) return [{ field: 'metadata.finalizers', message: 'Invalid value: must be a list' }];
  const errors: FieldError[] = [];
  finalizers.forEach((f, i) => {
    if (typeof f !== 'string' || !(STANDARD_FINALIZERS.has(f) || (f.includes('/') && QUALIFIED_NAME.test(f)))) {
      errors.push({ field: `metadata.finalizers[${i}]`, message: `Invalid value: ${JSON.stringify(f)}: name is neither a standard finalizer name nor is it fully qualified` });
    }
  });
  if (finalizers.includes('orphan') && finalizers.includes('foregroundDeletion')) {
    errors.push({ field: 'metadata.finalizers', message: `Invalid value: []string{${finalizers.map((f) => JSON.stringify(f)).join(', ')}}: finalizer orphan and foregroundDeletion cannot be both set`, reason: 'FieldValueInvalid' });
  }
  return errors;
}

const TIME_FIELDS = new Set([
  'creationTimestamp', 'deletionTimestamp', 'lastTransitionTime', 'lastProbeTime', 'lastHeartbeatTime', 'lastUpdateTime', 'startTime', 'completionTime',
  'startedAt', 'finishedAt', 'firstTimestamp', 'lastTimestamp', 'deprecatedFirstTimestamp', 'deprecatedLastTimestamp', 'lastScheduleTime', 'lastSuccessfulTime', 'expirationTimestamp', 'time',
]);
const MICRO_TIME_FIELDS = new Set(['acquireTime', 'renewTime', 'eventTime', 'lastObservedTime']);

/** metav1.Time: RFC 3339 in whole seconds, UTC. */
export const timestamp = (ms: number): string => new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
/** metav1.MicroTime: RFC 3339 with six fractional digits, UTC. */
export const microTimestamp = (ms: number, micros = 0): string => `${new Date(ms).toISOString().slice(0, 19)}.${String((Math.floor(ms) % 1000) * 1000 + micros).padStart(6, '0')}Z`;

function parseTime(text: string, kind: string, field: string): { ms: number; micros: number } {
  const m = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(\.(\d+))?(Z|[+-]\d{2}:\d{2})$/.exec(text);
  const ms = m ? Date.parse(`${m[1]}${m[4]}`) : NaN;
  if (!m || Number.isNaN(ms)) throw new ApiError(400, `${kind} in version "v1" cannot be handled as a ${kind}: ${field}: parsing time "${text}" as "2006-01-02T15:04:05Z07:00": cannot parse "${text}" as "2006"`);
  const frac = (m[3] ?? '').padEnd(9, '0');
  return { ms: ms + Number(frac.slice(0, 3)), micros: Number(frac.slice(3, 6)) };
}

/** metav1.MicroTime's layout (RFC3339Micro), element by element as Go's time.Parse reads it. */
const MICRO_LAYOUT: readonly (readonly [string, RegExp])[] = [
  ['2006', /^\d{4}/], ['-', /^-/], ['01', /^\d{2}/], ['-', /^-/], ['02', /^\d{2}/], ['T', /^T/], ['15', /^\d{2}/], [':', /^:/], ['04', /^\d{2}/], [':', /^:/], ['05', /^\d{2}/],
  // A fixed ".000000" takes exactly six digits: three, or none, are refused (kubernetes-facts.md).
  ['.000000', /^\.\d{6}/],
  ['Z07:00', /^(Z|[+-]\d{2}:\d{2})/],
];

/**
 * metav1.MicroTime as UnmarshalJSON reads it: time.Parse with "2006-01-02T15:04:05.000000Z07:00",
 * refused as the real server refuses it (400, Go's error naming the element that did not parse, no field).
 */
function parseMicroTime(text: string, kind: string): { ms: number; micros: number } {
  const refuse = (detail: string) => new ApiError(400, `${kind} in version "v1" cannot be handled as a ${kind}: parsing time "${text}"${detail}`);
  let rest = text;
  for (const [element, pattern] of MICRO_LAYOUT) {
    const m = pattern.exec(rest);
    if (!m) throw refuse(` as "2006-01-02T15:04:05.000000Z07:00": cannot parse "${rest}" as "${element}"`);
    rest = rest.slice(m[0].length);
  }
  if (rest !== '') throw refuse(`: extra text: "${rest}"`);
  const ms = Date.parse(`${text.slice(0, 19)}${text.slice(26)}`);
  if (Number.isNaN(ms)) throw refuse(': day out of range');
  return { ms: ms + Number(text.slice(20, 23)), micros: Number(text.slice(23, 26)) };
}

/** Times as the Go types hold them: seconds for metav1.Time, microseconds for MicroTime. */
export function normalizeTimes(x: unknown, kind: string): void {
  if (Array.isArray(x)) return x.forEach((e) => normalizeTimes(e, kind));
  if (x === null || typeof x !== 'object') return;
  const o = x as Record<string, unknown>;
  for (const [k, v] of Object.entries(o)) {
    if (typeof v === 'string' && TIME_FIELDS.has(k)) o[k] = timestamp(parseTime(v, kind, k).ms);
    else if (typeof v === 'string' && MICRO_TIME_FIELDS.has(k)) {
      const t = parseMicroTime(v, kind);
      o[k] = microTimestamp(t.ms, t.micros);
    } else normalizeTimes(v, kind);
  }
}

// ---- RBAC: escalation, bind, roleRef --------------------------------------------

const RBAC = 'rbac.authorization.k8s.io';

function escalationCheck(type: ResourceType, obj: KubeObject, old: KubeObject | undefined, ctx: WriteContext): void {
  const { user, rbac } = ctx;
  if (isSuperuser(user)) return;
  if (old && onlyGcFieldsChanged(old, obj)) return;
  const namespace = type.namespaced ? obj.metadata.namespace : undefined;
  const name = obj.metadata.name;
  let wanted: PolicyRule[];
  if (type.resource === 'clusterroles' || type.resource === 'roles') {
    if (authorize(rbac, user, { verb: 'escalate', apiGroup: RBAC, resource: type.resource, namespace, name, path: '' })) return;
    wanted = obj.rules ?? [];
  } else {
    const ref = obj.roleRef ?? {};
    const refResource = ref.kind === 'Role' ? 'roles' : 'clusterroles';
    if (authorize(rbac, user, { verb: 'bind', apiGroup: RBAC, resource: refResource, namespace: ref.kind === 'Role' ? namespace : undefined, name: ref.name, path: '' })) return;
    const role = ref.kind === 'Role' ? rbac.roles(namespace!).find((r) => r.metadata.name === ref.name) : rbac.clusterRoles().find((r) => r.metadata.name === ref.name);
    if (!role) throw new ApiError(404, `${refResource}.${RBAC} "${ref.name}" not found`, { details: { name: ref.name, group: RBAC, kind: refResource } });
    wanted = role.rules ?? [];
  }
  const missing = uncovered(rulesFor(rbac, user, namespace), wanted);
  if (missing.length === 0) return;
  const groups = `[${user.groups.map((g) => JSON.stringify(g)).join(' ')}]`;
  throw forbidden({ resource: type.resource, group: RBAC, name }, `user "${user.name}" (groups=${groups}) is attempting to grant RBAC permissions not currently held:\n${missing.map(formatRule).join('\n')}`);
}

const role: Strategy = {
  create(obj, ctx) {
    obj.rules ??= [];
    escalationCheck(ctx.type, obj, undefined, ctx);
  },
  update(obj, old, ctx) {
    escalationCheck(ctx.type, obj, old, ctx);
  },
};

function bindingErrors(obj: KubeObject, namespaced: boolean): FieldError[] {
  const ref = obj.roleRef;
  const errors: FieldError[] = [];
  if (!ref?.name) errors.push({ field: 'roleRef.name', message: 'Required value', reason: 'FieldValueRequired' });
  if (ref?.apiGroup !== RBAC) errors.push({ field: 'roleRef.apiGroup', message: `Unsupported value: "${ref?.apiGroup ?? ''}": supported values: "${RBAC}"`, reason: 'FieldValueNotSupported' });
  const kinds = namespaced ? ['Role', 'ClusterRole'] : ['ClusterRole'];
  if (!kinds.includes(ref?.kind)) errors.push({ field: 'roleRef.kind', message: `Unsupported value: "${ref?.kind ?? ''}": supported values: ${kinds.map((k) => `"${k}"`).join(', ')}`, reason: 'FieldValueNotSupported' });
  (obj.subjects ?? []).forEach((s: any, i: number) => {
    if (!['User', 'Group', 'ServiceAccount'].includes(s.kind)) errors.push({ field: `subjects[${i}].kind`, message: `Unsupported value: "${s.kind}": supported values: "ServiceAccount", "User", "Group"`, reason: 'FieldValueNotSupported' });
    if (s.kind === 'ServiceAccount' && !namespaced && !s.namespace) errors.push({ field: `subjects[${i}].namespace`, message: 'Required value', reason: 'FieldValueRequired' });
  });
  return errors;
}

function bindingStrategy(namespaced: boolean, kind: string): Strategy {
  return {
    create(obj, ctx) {
      const errors = bindingErrors(obj, namespaced);
      if (errors.length) throw invalid(kind, RBAC, obj.metadata.name, errors);
      escalationCheck(ctx.type, obj, undefined, ctx);
    },
    update(obj, old, ctx) {
      if (!isDeepStrictEqual(obj.roleRef, old.roleRef)) {
        throw invalid(kind, RBAC, obj.metadata.name, [{ field: 'roleRef', message: `Invalid value: ${goValue(obj.roleRef)}: cannot change roleRef` }]);
      }
      escalationCheck(ctx.type, obj, old, ctx);
    },
  };
}

/** Go's %#v of a RoleRef, as in the roleRef immutability message. */
const goValue = (ref: any) => `rbac.RoleRef{APIGroup:${JSON.stringify(ref?.apiGroup ?? '')}, Kind:${JSON.stringify(ref?.kind ?? '')}, Name:${JSON.stringify(ref?.name ?? '')}}`;

// ---- Pods ------------------------------------------------------------------------

const TOKEN_MOUNT = '/var/run/secrets/kubernetes.io/serviceaccount';

function containerDefaults(c: any): void {
  const image = String(c.image ?? '');
  const tag = image.includes('@') ? 'digest' : /:[^/:]+$/.exec(image)?.[0]?.slice(1);
  c.imagePullPolicy ??= tag === undefined || tag === 'latest' ? 'Always' : 'IfNotPresent';
  c.resources ??= {};
  c.terminationMessagePath ??= '/dev/termination-log';
  c.terminationMessagePolicy ??= 'File';
  for (const p of c.ports ?? []) p.protocol ??= 'TCP';
  for (const probe of [c.readinessProbe, c.livenessProbe, c.startupProbe]) {
    if (!probe) continue;
    probe.timeoutSeconds ??= 1;
    probe.periodSeconds ??= 10;
    probe.successThreshold ??= 1;
    probe.failureThreshold ??= 3;
    if (probe.httpGet) probe.httpGet.scheme ??= 'HTTP';
    if (probe.httpGet && probe.httpGet.path === undefined) probe.httpGet.path = '/';
  }
  for (const e of c.env ?? []) if (e.valueFrom?.fieldRef) e.valueFrom.fieldRef.apiVersion ??= 'v1';
}

/** PodSpec defaults (pkg/apis/core/v1/defaults.go), also for pod templates. */
export function podSpecDefaults(spec: any): void {
  spec.restartPolicy ??= 'Always';
  spec.terminationGracePeriodSeconds ??= 30;
  spec.dnsPolicy ??= 'ClusterFirst';
  spec.securityContext ??= {};
  spec.schedulerName ??= 'default-scheduler';
  spec.enableServiceLinks ??= true;
  for (const c of [...(spec.initContainers ?? []), ...(spec.containers ?? [])]) containerDefaults(c);
  for (const v of spec.volumes ?? []) {
    if (v.configMap) v.configMap.defaultMode ??= 420;
    if (v.secret) v.secret.defaultMode ??= 420;
    if (v.projected) v.projected.defaultMode ??= 420;
    if (v.emptyDir === null) v.emptyDir = {};
  }
}

function podErrors(pod: KubeObject): FieldError[] {
  const errors: FieldError[] = [];
  const spec = pod.spec ?? {};
  if (!Array.isArray(spec.containers) || spec.containers.length === 0) errors.push({ field: 'spec.containers', message: 'Required value', reason: 'FieldValueRequired' });
  const names = new Set<string>();
  for (const [list, field] of [[spec.initContainers ?? [], 'spec.initContainers'], [spec.containers ?? [], 'spec.containers']] as const) {
    (list as any[]).forEach((c, i) => {
      if (!c.name) errors.push({ field: `${field}[${i}].name`, message: 'Required value', reason: 'FieldValueRequired' });
      else if (names.has(c.name)) errors.push({ field: `${field}[${i}].name`, message: `Duplicate value: "${c.name}"`, reason: 'FieldValueDuplicate' });
      names.add(c.name);
      if (!c.image) errors.push({ field: `${field}[${i}].image`, message: 'Required value', reason: 'FieldValueRequired' });
    });
  }
  if (!['Always', 'OnFailure', 'Never'].includes(spec.restartPolicy)) errors.push({ field: 'spec.restartPolicy', message: `Unsupported value: "${spec.restartPolicy}": supported values: "Always", "OnFailure", "Never"`, reason: 'FieldValueNotSupported' });
  return errors;
}

function qosClass(spec: any): string {
  const containers = [...(spec.initContainers ?? []), ...(spec.containers ?? [])];
  const any = containers.some((c) => Object.keys(c.resources?.requests ?? {}).length || Object.keys(c.resources?.limits ?? {}).length);
  if (!any) return 'BestEffort';
  const guaranteed = containers.every((c) => ['cpu', 'memory'].every((r) => c.resources?.limits?.[r] !== undefined && (c.resources?.requests?.[r] ?? c.resources.limits[r]) === c.resources.limits[r]));
  return guaranteed ? 'Guaranteed' : 'Burstable';
}

const pod: Strategy = {
  create(obj, ctx) {
    const spec = (obj.spec ??= {});
    podSpecDefaults(spec);
    // ServiceAccount admission: the pod's ServiceAccount must exist, and its token is mounted.
    spec.serviceAccountName ??= spec.serviceAccount ?? 'default';
    spec.serviceAccount = spec.serviceAccountName;
    const ns = obj.metadata.namespace;
    const sa = ctx.get('/serviceaccounts', ns, spec.serviceAccountName);
    if (!sa) throw forbidden({ resource: 'pods', group: '', name: obj.metadata.name }, `error looking up service account ${ns}/${spec.serviceAccountName}: serviceaccount "${spec.serviceAccountName}" not found`);
    const automount = spec.automountServiceAccountToken ?? sa.automountServiceAccountToken ?? true;
    const mounted = [...(spec.initContainers ?? []), ...(spec.containers ?? [])].some((c: any) => (c.volumeMounts ?? []).some((m: any) => m.mountPath === TOKEN_MOUNT));
    if (automount && !mounted) {
      const volume = `kube-api-access-${randomSuffix()}`;
      spec.volumes = [
        ...(spec.volumes ?? []),
        {
          name: volume,
          projected: {
            defaultMode: 420,
            sources: [
              { serviceAccountToken: { expirationSeconds: 3607, path: 'token' } },
              { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
              { downwardAPI: { items: [{ fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' }, path: 'namespace' }] } },
            ],
          },
        },
      ];
      for (const c of [...(spec.initContainers ?? []), ...(spec.containers ?? [])]) c.volumeMounts = [...(c.volumeMounts ?? []), { name: volume, readOnly: true, mountPath: TOKEN_MOUNT }];
    }
    // DefaultTolerationSeconds admission.
    const tolerations: any[] = (spec.tolerations ??= []);
    for (const key of ['node.kubernetes.io/not-ready', 'node.kubernetes.io/unreachable']) {
      if (!tolerations.some((t) => t.key === key || (t.operator === 'Exists' && !t.key))) tolerations.push({ key, operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 });
    }
    spec.priority ??= 0;
    spec.preemptionPolicy ??= 'PreemptLowerPriority';
    const errors = podErrors(obj);
    if (errors.length) throw invalid('Pod', '', obj.metadata.name, errors);
    obj.status = { phase: 'Pending', qosClass: qosClass(spec) };
  },
  update(obj, old) {
    // Only images, activeDeadlineSeconds and added tolerations may change (pkg/apis/core/validation ValidatePodUpdate).
    const strip = (spec: any) => {
      const s = structuredClone(spec ?? {});
      for (const c of [...(s.initContainers ?? []), ...(s.containers ?? [])]) delete c.image;
      delete s.activeDeadlineSeconds;
      delete s.tolerations;
      return s;
    };
    if (!isDeepStrictEqual(strip(obj.spec), strip(old.spec))) {
      throw invalid('Pod', '', obj.metadata.name, [{ field: 'spec', message: 'Forbidden: pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)', reason: 'FieldValueForbidden' }]);
    }
  },
};

// ---- Namespaces, ServiceAccounts, Events, Secrets, Nodes, Leases ----------------

const namespace: Strategy = {
  create(obj) {
    obj.metadata.labels = { ...obj.metadata.labels, 'kubernetes.io/metadata.name': obj.metadata.name };
    obj.spec = { finalizers: ['kubernetes'] };
    obj.status = { phase: 'Active' };
  },
  update(obj, old) {
    // spec.finalizers change only through /finalize; the name label is kept.
    obj.spec = structuredClone(old.spec);
    obj.metadata.labels = { ...obj.metadata.labels, 'kubernetes.io/metadata.name': obj.metadata.name };
  },
};

function eventErrors(obj: KubeObject): FieldError[] {
  const ns = obj.involvedObject?.namespace;
  if (ns !== undefined && ns !== '' && ns !== obj.metadata.namespace) return [{ field: 'involvedObject.namespace', message: `Invalid value: "${ns}": does not match event.namespace` }];
  return [];
}

const event: Strategy = {
  create(obj) {
    const errors = eventErrors(obj);
    if (errors.length) throw invalid('Event', '', obj.metadata.name, errors);
  },
};

const secret: Strategy = {
  create(obj) {
    obj.type ??= 'Opaque';
  },
};

const node: Strategy = {
  create(obj) {
    obj.status ??= {};
  },
};

// ---- Workloads -------------------------------------------------------------------

function templateDefaults(template: any): void {
  template.metadata ??= {};
  if (template.metadata.creationTimestamp === undefined) template.metadata.creationTimestamp = null;
  podSpecDefaults((template.spec ??= {}));
}

function selectorErrors(obj: KubeObject): FieldError[] {
  const match = obj.spec?.selector?.matchLabels ?? {};
  const labels = obj.spec?.template?.metadata?.labels ?? {};
  if (!obj.spec?.selector) return [{ field: 'spec.selector', message: 'Required value', reason: 'FieldValueRequired' }];
  if (Object.entries(match).some(([k, v]) => labels[k] !== v)) return [{ field: 'spec.template.metadata.labels', message: `Invalid value: ${goMap(labels)}: \`selector\` does not match template \`labels\`` }];
  return [];
}

const goMap = (m: Record<string, string>) => `map[string]string{${Object.entries(m).sort().map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v)}`).join(', ')}}`;

const deployment: Strategy = {
  create(obj) {
    const spec = (obj.spec ??= {});
    spec.replicas ??= 1;
    spec.strategy ??= { type: 'RollingUpdate' };
    if (spec.strategy.type === undefined) spec.strategy.type = 'RollingUpdate';
    if (spec.strategy.type === 'RollingUpdate') spec.strategy.rollingUpdate = { maxUnavailable: '25%', maxSurge: '25%', ...spec.strategy.rollingUpdate };
    spec.revisionHistoryLimit ??= 10;
    spec.progressDeadlineSeconds ??= 600;
    templateDefaults((spec.template ??= {}));
    const errors = selectorErrors(obj);
    if (errors.length) throw invalid('Deployment', 'apps', obj.metadata.name, errors);
    obj.status = {};
  },
  update(obj) {
    if (obj.spec?.template) templateDefaults(obj.spec.template);
  },
};

const replicaSet: Strategy = {
  create(obj) {
    const spec = (obj.spec ??= {});
    spec.replicas ??= 1;
    templateDefaults((spec.template ??= {}));
    const errors = selectorErrors(obj);
    if (errors.length) throw invalid('ReplicaSet', 'apps', obj.metadata.name, errors);
    obj.status = { replicas: 0 };
  },
};

const job: Strategy = {
  create(obj) {
    const spec = (obj.spec ??= {});
    spec.parallelism ??= 1;
    spec.completions ??= 1;
    spec.backoffLimit ??= 6;
    spec.completionMode ??= 'NonIndexed';
    spec.suspend ??= false;
    spec.podReplacementPolicy ??= 'TerminatingOrFailed';
    const template = (spec.template ??= {});
    templateDefaults(template);
    const uid = obj.metadata.uid;
    const labels = { 'batch.kubernetes.io/controller-uid': uid, 'batch.kubernetes.io/job-name': obj.metadata.name, 'controller-uid': uid, 'job-name': obj.metadata.name };
    spec.selector ??= { matchLabels: { 'batch.kubernetes.io/controller-uid': uid } };
    template.metadata.labels = { ...labels, ...template.metadata.labels };
    const restart = template.spec.restartPolicy;
    if (restart !== 'Never' && restart !== 'OnFailure') {
      throw invalid('Job', 'batch', obj.metadata.name, [{ field: 'spec.template.spec.restartPolicy', message: `Required value: valid values: "OnFailure", "Never"`, reason: 'FieldValueRequired' }]);
    }
    obj.status = {};
  },
  update(obj, old) {
    if (!isDeepStrictEqual(obj.spec?.template, old.spec?.template) || !isDeepStrictEqual(obj.spec?.selector, old.spec?.selector)) {
      throw invalid('Job', 'batch', obj.metadata.name, [{ field: 'spec.template', message: `Invalid value: ${JSON.stringify(obj.spec?.template)}: field is immutable`, reason: 'FieldValueInvalid' }]);
    }
  },
};

const STRATEGIES: Record<string, Strategy> = {
  '/pods': pod,
  '/namespaces': namespace,
  events: event,
  '/secrets': secret,
  '/nodes': node,
  'rbac.authorization.k8s.io/clusterroles': role,
  'rbac.authorization.k8s.io/roles': role,
  'rbac.authorization.k8s.io/clusterrolebindings': bindingStrategy(false, 'ClusterRoleBinding'),
  'rbac.authorization.k8s.io/rolebindings': bindingStrategy(true, 'RoleBinding'),
  'apps/deployments': deployment,
  'apps/replicasets': replicaSet,
  'batch/jobs': job,
  'admissionregistration.k8s.io/validatingadmissionpolicies': policyStrategy,
  'admissionregistration.k8s.io/validatingadmissionpolicybindings': policyBindingStrategy,
};

export const strategyOf = (type: ResourceType): Strategy => STRATEGIES[type.storage] ?? {};
