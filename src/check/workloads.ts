// Whether the manifests run the operator at all. A render that lost the
// operator's workload (a library chart that rendered only a Deployment of its
// template, dropping a StatefulSet) leaves its ServiceAccount and RBAC and
// nothing for the other checks to read: without this they would say "no
// findings". The same for an operator of a kind drainguard is not added to.

import { type Finding, type Manifest, objectId } from './finding.ts';
import { type PodSpec, drainguardCommand } from './pod.ts';

/** The kinds an operator runs as, which drainguard's chart and components add it to. */
export const OPERATOR_KINDS = ['Deployment', 'StatefulSet', 'DaemonSet'] as const;

/** Kinds whose pods run to completion: no operator, nothing drainguard drains. */
export const RUN_TO_COMPLETION: ReadonlySet<string> = new Set(['Job', 'CronJob']);

export const isHook = (o: Manifest): boolean =>
  (o.metadata.annotations as Record<string, string> | undefined)?.['helm.sh/hook'] !== undefined;

export interface PodOf {
  readonly object: Manifest;
  readonly pod: PodSpec;
}

const OWN_LABEL = 'app.kubernetes.io/name';
const kinds = `a ${OPERATOR_KINDS.slice(0, -1).join(', ')} or ${OPERATOR_KINDS.at(-1)}`;

const TEXT = {
  'workload-missing': (account: string, bindings: readonly string[]) => ({
    message:
      `ServiceAccount ${account} is bound to roles (${bindings.join(', ')}) as an operator's, ` +
      'but no workload of these manifests runs as it, and none runs at all (Helm hooks aside): ' +
      "the render lost the operator's workload, and drainguard with it",
    fix:
      "render the operator's workload with the rest: the library chart renders the workload of drainguard.operator.template " +
      `(${kinds}) with drainguard added and fails on any other kind, where an older one rendered only a Deployment; ` +
      "check every file of a release together (-f, repeated), and compare with the chart's render before drainguard: " +
      '--plain PATH names each object lost',
  }),
  'workload-kind-unsupported': (kind: string, account: string, bindings: readonly string[]) => ({
    message:
      `this ${kind} runs as ServiceAccount ${account}, which ${bindings.join(', ')} binds to roles as an operator's, ` +
      `and no other workload of these manifests runs at all: a ${kind}'s pods run to completion, ` +
      `drainguard is added to ${kinds}, and nothing here drains or guards this one`,
    fix:
      `run the operator as ${kinds} (the library chart adds drainguard to it in drainguard.operator.template); ` +
      `a ${kind} that is not the operator needs no drainguard: check it together with the operator's manifests`,
  }),
};

/** The bindings of OBJECTS that name ServiceAccount NAMESPACE/NAME itself (a ServiceAccount subject, or its user). */
function bindingsOf(objects: readonly Manifest[], namespace: string, name: string): string[] {
  return objects
    .filter((b) => b.kind === 'ClusterRoleBinding' || b.kind === 'RoleBinding')
    .filter((b) =>
      ((b.subjects ?? []) as { kind: string; name: string; namespace?: string }[]).some(
        (s) =>
          (s.kind === 'ServiceAccount' && s.name === name && (s.namespace || b.metadata.namespace) === namespace) ||
          (s.kind === 'User' && s.name === `system:serviceaccount:${namespace}:${name}`),
      ),
    )
    .map((b) => objectId(b));
}

/**
 * When nothing long-running is in the manifests (no Deployment, StatefulSet,
 * DaemonSet, Pod or custom kind with pods; Jobs, CronJobs and Helm hooks
 * aside): each ServiceAccount bound as an operator's that no workload runs as
 * (workload-missing), and each Job or CronJob that runs as one without drainguard.
 */
export function checkOperatorPresent(objects: readonly Manifest[], pods: readonly PodOf[]): Finding[] {
  const running = pods.filter(({ object }) => !isHook(object));
  if (running.some(({ object }) => !RUN_TO_COMPLETION.has(object.kind))) return [];
  const out: Finding[] = [];
  for (const account of objects.filter((o) => o.kind === 'ServiceAccount')) {
    if ((account.metadata.labels as Record<string, string> | undefined)?.[OWN_LABEL] === 'drainguard') continue;
    const namespace = account.metadata.namespace ?? 'default';
    const bindings = bindingsOf(objects, namespace, account.metadata.name);
    if (bindings.length === 0) continue;
    const id = `${namespace}/${account.metadata.name}`;
    const runners = running.filter(
      ({ object, pod }) =>
        (object.metadata.namespace ?? 'default') === namespace && (pod.serviceAccountName ?? 'default') === account.metadata.name,
    );
    if (runners.length === 0) {
      out.push({
        code: 'workload-missing',
        severity: 'warning',
        object: objectId(account, namespace),
        ...TEXT['workload-missing'](id, bindings),
      });
      continue;
    }
    for (const { object, pod } of runners) {
      if ([...pod.containers, ...(pod.initContainers ?? [])].some((c) => drainguardCommand(c) !== undefined)) continue;
      out.push({
        code: 'workload-kind-unsupported',
        severity: 'warning',
        object: objectId(object),
        ...TEXT['workload-kind-unsupported'](object.kind, id, bindings),
      });
    }
  }
  return out;
}
