// `drainguard check`: the mistakes in an operator's manifests that would make
// drainguard fail at the one moment it matters (the stop, the uninstall), each
// with its fix. A pure function of the parsed objects, each placed in its
// namespace (namespace.ts); nothing is read or sent.

import { type GuardTarget, guardTargetKey, parseGuardList } from '../config/guard-list.ts';
import { GUARD_FORMS } from '../config/guard-kinds.ts';
import { RESOURCES } from '../kube/objects.ts';
import { type Finding, type Found, type Manifest, objectId } from './finding.ts';
import { type Container, type Placement, type PodSpec, drainguardCommand, flagOf, placementOf, podSpecOf, settingOf } from './pod.ts';
import { type Budget, checkBudget, drainBudget } from './budget.ts';
import { checkPairing } from './pairing.ts';
import { checkEntrypoint } from './entrypoint.ts';
import { checkGuardScope } from './guard-scope.ts';
import { checkGraces } from './grace.ts';
import { checkHooks } from './lifecycle.ts';
import { type Unreadable, checkStopSignal } from './stop-signal.ts';
import { checkMemory } from './memory.ts';
import { checkToken } from './token.ts';
import { checkIdleMetrics } from './idle-metrics.ts';
import { authorizerFor } from './rbac.ts';
import { checkHold } from './hold.ts';
import { uncoveredByPolicy } from './admission-policy.ts';
import { HOLD_FORM, type HoldKind, parseHoldList } from '../config/hold-list.ts';
import { type Configured, type LayersRow, layersTable } from './layers.ts';
import { GRACE_MARGIN_MS, graceNeeded } from '../config/grace-rule.ts';
import { RUN_TO_COMPLETION, checkOperatorPresent, isHook } from './workloads.ts';
import { checkAgainstPlain } from './plain.ts';

/** Architectures drainguard's executable and image are built for. */
export const ARCHITECTURES = ['amd64', 'arm64'] as const;

/** A deleted ServiceAccount's tokens are refused 60 s after its deletionTimestamp, finalizer or not. */
const SERVICE_ACCOUNT_TOKEN_MS = 60_000;

/** Helm (and Argo CD) do not delete an object so annotated at an uninstall. */
const KEEP_ANNOTATION = 'helm.sh/resource-policy';
const kept = (o: Manifest): boolean => (o.metadata.annotations as Record<string, string> | undefined)?.[KEEP_ANNOTATION] === 'keep';

/** What drainguard does in its own namespace besides the guarded objects. */
const OWN_NEEDS = [
  ...['create', 'list', 'patch', 'delete'].map((verb) => ({ verb, group: 'coordination.k8s.io', resource: 'leases' })),
  { verb: 'create', group: '', resource: 'events' },
  { verb: 'get', group: '', resource: 'pods' },
];

const podVariable = (field: string): string => `DRAINGUARD_POD_${field.toUpperCase()}`;

type Text = Pick<Finding, 'message' | 'fix'>;

/** What each finding says, and its fix: `account` is a ServiceAccount's NAMESPACE/NAME, `where` a container. */
const TEXT = {
  'no-drainguard': () => ({
    message: 'no container runs drainguard (run, or sidecar)',
    fix:
      'add drainguard in one of its modes: ' +
      'the kustomize components in deploy/components/, or the Helm library chart deploy/helm/drainguard/',
  }),
  'no-drainguard-beside': (running: readonly string[]) => ({
    message:
      "no container runs drainguard, though its ServiceAccount is bound to roles as an operator's is " +
      `and ${running.join(', ')} runs it: its stop is not drained and its RBAC not guarded`,
    fix:
      'add drainguard to this workload too, each with its own ServiceAccount and guard: ' +
      'the kustomize components in an overlay of its own (docs/deploy.md), ' +
      'the Helm library chart with one entry per Deployment (docs/helm.md)',
  }),
  'guard-invalid': (problem: string) => ({ message: problem, fix: `write the list as comma-separated ${GUARD_FORMS}` }),
  'hold-invalid': (problem: string) => ({
    message: problem,
    fix: `write DRAINGUARD_HOLD as comma-separated ${HOLD_FORM}: each the name of a CRD`,
  }),
  'pod-identity-missing': (where: string, guards: boolean, fields: readonly string[]) => ({
    message:
      `${where} ${guards ? 'guards objects' : 'holds its Deployment'} but does not get ${fields.map(podVariable).join(', ')} ` +
      'from the downward API: it cannot name its finalizer and Lease',
    fix: `add to ${where}: ${fields.map((f) => `{name: ${podVariable(f)}, valueFrom: {fieldRef: {fieldPath: metadata.${f}}}}`).join(', ')}`,
  }),
  'guarded-object-missing': (where: string, entry: string) => ({
    message:
      `the guard names ${entry}, which these manifests do not contain: most likely the render lost it ` +
      '(its template is a file only drainguard renders, or renders nothing with these values), ' +
      'and the uninstall would have nothing to hold; else the name is wrong',
    fix:
      `render ${entry} with the release: keep its template where Helm renders it (a file of templates/ with no _ in front; ` +
      'the library chart renders every other document of drainguard.operator.template as it is, where an older one dropped them), ' +
      'and check every file of a release together (-f, repeated); ' +
      `only when the release does not create it, fix the name in DRAINGUARD_GUARD of ${where} or leave ${entry} out of it ` +
      '(the library chart: drainguard.guard.serviceAccount: false)',
  }),
  'guard-not-covered': (account: string, lacking: readonly string[], entry: string, t: GuardTarget) => ({
    message: `ServiceAccount ${account} may not ${lacking.join(' or ')} ${entry}: drainguard cannot put its finalizer on it`,
    fix:
      `add to a ${t.namespace ? `Role in ${t.namespace}` : 'ClusterRole'} bound to ServiceAccount ${account}: ` +
      `{apiGroups: ["${RESOURCES[t.kind].group}"], resources: [${RESOURCES[t.kind].resource}], ` +
      `verbs: [get, patch], resourceNames: [${t.name}]}`,
  }),
  'release-unauthorised': (account: string, exposed: readonly string[]) => ({
    message:
      `ServiceAccount ${account} may patch ${exposed.join(', ')} only through roles and bindings the uninstall deletes: ` +
      "once the guard's release has taken the first of them away, the removals after it are refused (403) and keep this pod's finalizer",
    fix:
      `grant get and patch on them in drainguard's own Role or ClusterRole and its binding, annotated ${KEEP_ANNOTATION}: keep, ` +
      'and delete those after the uninstall with drainguard release --wait 2m --delete ' +
      '(deploy/components/rbac and the library chart do both)',
  }),
  'release-unpinnable': (account: string, unpinnable: readonly string[]) => ({
    message:
      `ServiceAccount ${account} may not delete ${unpinnable.join(', ')}: a delete that ignores ${KEEP_ANNOTATION} ` +
      '(kubectl delete -f of the whole manifest) takes them with the rest, and then no order of removals is safe; ' +
      "the release pins them to its anchor with a DELETE in the foreground, and without that right one keeps this pod's finalizer",
    fix:
      `grant delete on them, by resourceNames, in drainguard's own Role or ClusterRole and its binding ` +
      '(deploy/components/rbac and the library chart do: docs/guard.md, "Nothing stuck, whatever deletes it")',
  }),
  'serviceaccount-not-guarded': (account: string, where: string) => ({
    message:
      `the uninstall deletes ServiceAccount ${account} and the guard does not hold it: ` +
      'its tokens, which drainguard authenticates with, are refused once it is gone, and the release with them',
    fix: `add serviceaccount/${account} to DRAINGUARD_GUARD in ${where}, or annotate the ServiceAccount ${KEEP_ANNOTATION}: keep`,
  }),
  'admission-policy-missing': (account: string, uncovered: readonly string[] | undefined) => ({
    message:
      uncovered === undefined
        ? `no ValidatingAdmissionPolicy holds ServiceAccount ${account} to the finalizers of what drainguard guards: ` +
          "RBAC's patch lets that account, drainguard's and the operator's, change anything else of them too " +
          '(add a subject to a binding of a role it holds, say)'
        : `drainguard's admission policy for ServiceAccount ${account} does not cover ${uncovered.join(', ')}: ` +
          'that account may change more of them than their finalizers',
    fix:
      'use the components (deploy/components/rbac has the policy) or the library chart (drainguard.admissionPolicy: true), ' +
      'which ship it for Kubernetes 1.30 or later; on older clusters there is none to have',
  }),
  'own-not-covered': (namespace: string, account: string, own: readonly { verb: string; resource: string }[]) => ({
    message:
      `ServiceAccount ${account} may not ${own.map((n) => `${n.verb} ${n.resource}`).join(', ')} in ${namespace}: ` +
      'drainguard cannot keep its holder Lease or write its Events',
    fix:
      `add to a Role in ${namespace} bound to ServiceAccount ${account}: ` +
      'leases (coordination.k8s.io) create, list, patch, delete; events create; pods get',
  }),
  'serviceaccount-token-expires': ({ drainMs, stopMs }: Budget) => ({
    message:
      `the ServiceAccount is guarded, but drain ${drainMs / 1000}s + stop ${stopMs / 1000}s + ${GRACE_MARGIN_MS / 1000}s margin ` +
      'exceed the 60 s its tokens keep working after Helm deletes it: a long drain or cleanup ends in 401 Unauthorized',
    fix:
      'keep terminationGracePeriodSeconds at most 60 ' +
      `(or the drain timeout under ${(SERVICE_ACCOUNT_TOKEN_MS - graceNeeded(0, stopMs)) / 1000}s), ` +
      'or keep the ServiceAccount out of the release and of the guard',
  }),
  'unsupported-architecture': (arch: readonly string[]) => ({
    message: `the pod is scheduled only on ${arch.join(', ')} nodes; drainguard is built for ${ARCHITECTURES.join(' and ')}`,
    fix: `schedule the pod on ${ARCHITECTURES.join(' or ')} nodes (nodeSelector kubernetes.io/arch)`,
  }),
};

interface Workload {
  readonly object: Manifest;
  readonly id: string;
  readonly namespace: string;
  readonly pod: PodSpec;
  readonly placement: Placement;
}

/** Which of drainguard's layers the manifests configure, and what each covers. */
export function layersOf(objects: readonly Manifest[]): LayersRow[] | undefined {
  const placements = objects.flatMap((o) => {
    const pod = podSpecOf(o);
    const placement = pod && placementOf(pod);
    return placement ? [{ object: o, placement }] : [];
  });
  if (placements.length === 0) return undefined;
  const configured: Configured = {
    hook: objects.some(
      (o) =>
        o.kind === 'Job' &&
        isPreDeleteHook(o) &&
        [...(o.spec?.template?.spec?.containers ?? [])].some((c: Container) => drainguardCommand(c) === 'predelete'),
    ),
    hold: placements.some(({ object, placement }) => object.kind === 'Deployment' && holdOf(placement.supervisor).length > 0),
    guard: placements.some(({ placement }) => (settingOf(placement.supervisor, 'guard') ?? '').trim() !== ''),
  };
  return layersTable(configured);
}

/** The hold's kinds, none when the list does not parse (a finding of its own). */
function holdOf(c: Container): HoldKind[] {
  try {
    return parseHoldList(settingOf(c, 'hold') ?? '', 'DRAINGUARD_HOLD');
  } catch {
    return [];
  }
}

/**
 * The pods that run no drainguard and should: with none running it, every one
 * but a Job's or CronJob's (their pods run to completion); beside one that runs
 * it, each long-running workload (not a Helm hook, not a Pod) whose
 * ServiceAccount a binding in the manifests names, as an operator's.
 */
function withoutDrainguard(
  pods: readonly { object: Manifest; pod: PodSpec }[],
  workloads: readonly Workload[],
  objects: readonly Manifest[],
): Manifest[] {
  const running = new Set(workloads.map((w) => w.object));
  const others = pods.filter(({ object }) => !running.has(object) && !RUN_TO_COMPLETION.has(object.kind));
  if (workloads.length === 0) return others.map(({ object }) => object);
  const bindings = objects.filter((o) => o.kind === 'ClusterRoleBinding' || o.kind === 'RoleBinding');
  const bound = (namespace: string, account: string): boolean =>
    bindings.some((b) =>
      ((b.subjects ?? []) as { kind: string; name: string; namespace?: string }[]).some(
        (s) => s.kind === 'ServiceAccount' && s.name === account && (s.namespace || b.metadata.namespace) === namespace,
      ),
    );
  return others
    .filter(
      ({ object, pod }) =>
        object.kind !== 'Pod' && !isHook(object) && bound(object.metadata.namespace ?? 'default', pod.serviceAccountName ?? 'default'),
    )
    .map(({ object }) => object);
}

const isPreDeleteHook = (o: Manifest): boolean =>
  ((o.metadata.annotations as Record<string, string> | undefined)?.['helm.sh/hook'] ?? '')
    .split(',')
    .map((h) => h.trim())
    .includes('pre-delete');

/** The findings in OBJECTS; with PLAIN (--plain, the chart's render before drainguard), each object of it lost too. */
export function analyze(objects: readonly Manifest[], plain?: readonly Manifest[]): Finding[] {
  const findings: Finding[] = [];
  const pods = objects.flatMap((o) => {
    const pod = podSpecOf(o);
    return pod ? [{ object: o, pod }] : [];
  });
  const workloads: Workload[] = pods.flatMap(({ object, pod }) => {
    const placement = placementOf(pod);
    const namespace = object.metadata.namespace ?? 'default';
    return placement ? [{ object, pod, placement, namespace, id: objectId(object, namespace) }] : [];
  });
  for (const object of withoutDrainguard(pods, workloads, objects)) {
    findings.push({
      code: 'no-drainguard',
      severity: 'warning',
      object: objectId(object),
      ...(workloads.length === 0 ? TEXT['no-drainguard']() : TEXT['no-drainguard-beside'](workloads.map((w) => w.id))),
    });
  }
  findings.push(...checkOperatorPresent(objects, pods));
  if (plain) findings.push(...checkAgainstPlain(objects, plain));
  for (const w of workloads) findings.push(...checkWorkload(w, objects));
  return findings.sort((a, b) => a.object.localeCompare(b.object) || a.code.localeCompare(b.code));
}

function checkWorkload(w: Workload, objects: readonly Manifest[]): Finding[] {
  const out: Finding[] = [];
  const add = (code: string, severity: Finding['severity'], text: Text) => out.push({ code, severity, object: w.id, ...text });
  const take = (found: readonly Found[]) => out.push(...found.map((f) => ({ ...f, object: w.id })));
  const { supervisor, mode } = w.placement;
  const where = `container ${supervisor.name}`;

  // The pod: its drain budget, how drainguard and the operator find each other, what starts.
  const budget = drainBudget(w.pod, w.placement);
  take(checkBudget(w.pod, w.placement));
  take(checkGraces(w.placement, budget));
  take(checkPairing(w.pod, w.placement));
  take(checkIdleMetrics(w.placement));
  take(checkHooks(w.pod));
  take(checkEntrypoint(w.placement));
  take(checkMemory(supervisor, mode));

  const sa = w.pod.serviceAccountName ?? 'default';
  const subject = `${w.namespace}/${sa}`;
  const can = authorizerFor(objects, w.namespace, sa);
  take(checkStopSignal(w.pod, w.placement, podUnreadable(supervisor, w.namespace, subject, can)));

  // The pod's identity and the guard.
  const raw = settingOf(supervisor, 'guard') ?? '';
  let guard: GuardTarget[] = [];
  try {
    guard = parseGuardList(raw, `DRAINGUARD_GUARD in ${where}`);
  } catch (err) {
    add('guard-invalid', 'error', TEXT['guard-invalid']((err as Error).message));
  }
  let hold: HoldKind[] = [];
  try {
    hold = parseHoldList(settingOf(supervisor, 'hold') ?? '', `DRAINGUARD_HOLD in ${where}`);
  } catch (err) {
    add('hold-invalid', 'error', TEXT['hold-invalid']((err as Error).message));
  }
  if (guard.length === 0 && hold.length === 0) return out;
  // A literal value would be the same in every pod: only the downward API (or a flag) names this one.
  const fields = ['name', 'namespace', 'uid'].filter((f) => {
    if (flagOf(supervisor, `pod-${f}`)) return false;
    const e = (supervisor.env ?? []).find((x) => x.name === podVariable(f));
    return e?.valueFrom?.fieldRef?.fieldPath !== `metadata.${f}`;
  });
  if (fields.length > 0) {
    add('pod-identity-missing', 'error', TEXT['pod-identity-missing'](where, guard.length > 0, fields));
  }

  const account = objects.find((o) => o.kind === 'ServiceAccount' && o.metadata.name === sa && o.metadata.namespace === w.namespace);
  take(checkToken(supervisor, w.pod, account));
  if (hold.length > 0) {
    checkHold(
      hold,
      objects,
      { workloadKind: w.object.kind, deployment: w.object.metadata.name, namespace: w.namespace, serviceAccount: sa, where, can },
      add,
    );
  }
  if (guard.length > 0) {
    take(checkGuardScope(guard, objects, { namespace: w.namespace, serviceAccount: sa, where, kept }));
  }
  const present = new Set(objects.map((o) => objectId(o)));
  for (const t of guard) {
    const k = RESOURCES[t.kind];
    const entry = `${t.kind}/${t.namespace ? `${t.namespace}/` : ''}${t.name}`;
    if (!present.has(`${k.kind}/${t.namespace ? `${t.namespace}/` : ''}${t.name}`)) {
      add('guarded-object-missing', 'error', TEXT['guarded-object-missing'](where, entry));
    }
    const lacking = ['get', 'patch'].filter(
      (verb) => !can.allows({ verb, group: k.group, resource: k.resource, name: t.name, namespace: t.namespace }),
    );
    if (lacking.length > 0) {
      add('guard-not-covered', 'error', TEXT['guard-not-covered'](subject, lacking, entry, t));
    }
  }
  // The release: each removal must be authorised by RBAC that no earlier removal can take away,
  // objects the uninstall keeps; and the token it is sent with must outlive it.
  const firm = authorizerFor(objects.filter(kept), w.namespace, sa);
  const patch = (t: GuardTarget) => ({
    verb: 'patch',
    group: RESOURCES[t.kind].group,
    resource: RESOURCES[t.kind].resource,
    name: t.name,
    namespace: t.namespace,
  });
  const exposed = guard.filter((t) => can.allows(patch(t)) && !firm.allows(patch(t))).map(guardTargetKey);
  if (exposed.length > 0) {
    add('release-unauthorised', 'error', TEXT['release-unauthorised'](subject, exposed));
  }
  // What the release's pin deletes in the foreground: the guarded objects the release's permission rests on
  // (those the uninstall keeps), and the ServiceAccount.
  const keptIds = new Set(objects.filter(kept).map((o) => objectId(o)));
  const unpinnable = guard
    .filter(
      (t) =>
        keptIds.has(`${RESOURCES[t.kind].kind}/${t.namespace ? `${t.namespace}/` : ''}${t.name}`) ||
        (t.kind === 'serviceaccount' && t.name === sa),
    )
    .filter((t) => !can.allows({ ...patch(t), verb: 'delete' }))
    .map(guardTargetKey);
  // Only where drainguard's own RBAC is guarded: without that, nothing keeps it through such a delete, pin or not.
  const ownGuarded = guard.some(
    (t) => t.kind !== 'serviceaccount' && keptIds.has(`${RESOURCES[t.kind].kind}/${t.namespace ? `${t.namespace}/` : ''}${t.name}`),
  );
  if (exposed.length === 0 && ownGuarded && unpinnable.length > 0) {
    add('release-unpinnable', 'warning', TEXT['release-unpinnable'](subject, unpinnable));
  }
  if (
    guard.length > 0 &&
    account &&
    !kept(account) &&
    !guard.some((t) => t.kind === 'serviceaccount' && t.name === sa && t.namespace === w.namespace)
  ) {
    add('release-unauthorised', 'error', TEXT['serviceaccount-not-guarded'](subject, where));
  }
  const uncovered = uncoveredByPolicy(objects, w.namespace, sa, [
    ...guard,
    ...(hold.length > 0 ? [{ kind: 'deployment' as const, name: w.object.metadata.name }] : []),
  ]);
  if (uncovered === undefined || uncovered.length > 0) {
    add('admission-policy-missing', 'warning', TEXT['admission-policy-missing'](subject, uncovered));
  }
  const own = OWN_NEEDS.filter((n) => !can.allows({ ...n, namespace: w.namespace }));
  if (own.length > 0) {
    add('guard-not-covered', 'error', TEXT['own-not-covered'](w.namespace, subject, own));
  }

  if (guard.some((t) => t.kind === 'serviceaccount') && graceNeeded(budget.drainMs, budget.stopMs) > SERVICE_ACCOUNT_TOKEN_MS) {
    add('serviceaccount-token-expires', 'warning', TEXT['serviceaccount-token-expires'](budget));
  }

  const arch = architectureOf(w.pod);
  if (arch && !arch.some((a) => (ARCHITECTURES as readonly string[]).includes(a))) {
    add('unsupported-architecture', 'error', TEXT['unsupported-architecture'](arch));
  }
  return out;
}

/** Why drainguard in container `c` cannot read its own Pod (its stop signal, its grace period), or undefined when it can. */
function podUnreadable(c: Container, namespace: string, subject: string, can: ReturnType<typeof authorizerFor>): Unreadable | undefined {
  const missing = ['name', 'namespace'].filter((f) => settingOf(c, `pod-${f}`) === undefined).map(podVariable);
  if (missing.length > 0)
    return {
      why: `it is not given ${missing.join(' and ')}`,
      remedy: `set ${missing.join(' and ')} from the downward API (metadata.name, metadata.namespace)`,
    };
  if (!can.allows({ verb: 'get', group: '', resource: 'pods', namespace }))
    return {
      why: `ServiceAccount ${subject} may not get pods in ${namespace}`,
      remedy: `grant ServiceAccount ${subject} get on pods in ${namespace} (a Role and RoleBinding)`,
    };
  return undefined;
}

/** The architectures the pod may run on, when its nodeSelector or required node affinity pins them. */
function architectureOf(pod: PodSpec): string[] | undefined {
  const selected = pod.nodeSelector?.['kubernetes.io/arch'];
  if (selected) return [selected];
  const terms = pod.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms as
    { matchExpressions?: { key: string; operator: string; values?: string[] }[] }[] | undefined;
  const pinned = (terms ?? []).map(
    (t) => (t.matchExpressions ?? []).find((e) => e.key === 'kubernetes.io/arch' && e.operator === 'In')?.values,
  );
  if (pinned.length === 0 || pinned.some((v) => v === undefined)) return undefined;
  return [...new Set(pinned.flat() as string[])];
}
