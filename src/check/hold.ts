// `drainguard check` on the hold (DRAINGUARD_HOLD): the mistakes that leave an
// operator pod unable to hold its Deployment, each with its fix.

import { type HoldKind, holdKindName } from '../config/hold-list.ts';
import type { Finding, Manifest } from './finding.ts';
import type { Authorizer, Request } from './rbac.ts';

type Add = (code: string, severity: 'error' | 'warning', text: Pick<Finding, 'message' | 'fix'>) => void;

interface HoldContext {
  /** KIND of the object that holds the pod template. */
  readonly workloadKind: string;
  readonly deployment: string;
  readonly namespace: string;
  readonly serviceAccount: string;
  readonly where: string;
  readonly can: Authorizer;
}

const requestText = (n: Request): string =>
  `${n.verb} ${n.resource}${n.group ? `.${n.group}` : ''}${n.name ? `/${n.name}` : ''}` +
  (n.namespace ? ` in ${n.namespace}` : ' cluster-wide');

const TEXT = {
  'hold-needs-deployment': (c: HoldContext, kinds: readonly HoldKind[]) => ({
    message:
      `${c.where} holds ${kinds.map(holdKindName).join(', ')}, but its pod runs in a ${c.workloadKind}, not a Deployment: ` +
      'the hold holds the Deployment above the pod, so drainguard warns and runs without it',
    fix: `run the operator in a Deployment, or remove DRAINGUARD_HOLD from ${c.where}`,
  }),
  'hold-kind-missing': (c: HoldContext, k: HoldKind) => ({
    message:
      `the hold lists ${holdKindName(k)}, which no CustomResourceDefinition in these manifests defines: ` +
      'a wrong name holds nothing (the hold counts a kind that is not served as nothing left)',
    fix:
      `fix the entry in DRAINGUARD_HOLD of ${c.where} to PLURAL.GROUP of the CRD (spec.names.plural, spec.group), ` +
      "or leave it when the CRDs are installed apart (helm template --include-crds shows a chart's)",
  }),
  'hold-not-covered': (c: HoldContext, lacking: readonly Request[]) => ({
    message:
      `ServiceAccount ${c.namespace}/${c.serviceAccount} may not ${lacking.map(requestText).join(', ')}: ` +
      'drainguard cannot find its Deployment, hold its finalizer, or see which listed objects are still finalizing',
    fix:
      `add to a Role in ${c.namespace}: {apiGroups: [apps], resources: [replicasets], verbs: [get]} and ` +
      `{apiGroups: [apps], resources: [deployments], verbs: [get, list, watch, patch], resourceNames: [${c.deployment}]}; ` +
      'list and watch on each listed kind (in a ClusterRole for a cluster-scoped kind); ' +
      `both bound to ServiceAccount ${c.namespace}/${c.serviceAccount} ` +
      "(deploy/components/hold and the library chart's hold.kinds do this)",
  }),
};

/** What the hold needs of the manifests; ADD reports each mistake. */
export function checkHold(kinds: readonly HoldKind[], objects: readonly Manifest[], c: HoldContext, add: Add): void {
  if (c.workloadKind !== 'Deployment') {
    add('hold-needs-deployment', 'error', TEXT['hold-needs-deployment'](c, kinds));
    return;
  }
  const definitions = new Map(
    objects.filter((o) => o.kind === 'CustomResourceDefinition').map((o) => [`${o.spec?.names?.plural}.${o.spec?.group}`, o]),
  );
  const crds = new Set(definitions.keys());
  // drainguard lists a namespaced kind in its own namespace, a cluster-scoped (or unknown) one cluster-wide.
  const namespaceOf = (k: HoldKind): string | undefined =>
    definitions.get(holdKindName(k))?.spec?.scope === 'Namespaced' ? c.namespace : undefined;
  for (const k of kinds.filter((k) => !crds.has(holdKindName(k)))) {
    add('hold-kind-missing', 'warning', TEXT['hold-kind-missing'](c, k));
  }
  const needs: Request[] = [
    { verb: 'get', group: 'apps', resource: 'replicasets', namespace: c.namespace },
    ...['get', 'list', 'watch', 'patch'].map((verb) => ({
      verb,
      group: 'apps',
      resource: 'deployments',
      name: c.deployment,
      namespace: c.namespace,
    })),
    ...kinds.map((k) => ({ verb: 'list', group: k.group, resource: k.plural, namespace: namespaceOf(k) })),
  ];
  const lacking = needs.filter((n) => !c.can.allows(n));
  if (lacking.length > 0) add('hold-not-covered', 'error', TEXT['hold-not-covered'](c, lacking));
}
