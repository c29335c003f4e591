// What adopt writes for a plain manifest or a kustomize directory: the overlay
// of docs/deploy.md ("Adding drainguard to any other operator"), read from the
// input's own render. One Deployment, its container `manager`: the mode's
// component, guard-more for every other binding and role the ServiceAccount
// has, the drainguard ConfigMap with the names as the cluster will have them,
// and one patch for what the components cannot know (wrap mode's memory, a
// command of more than one word, a sidecar's user, a token). Where the
// components cannot serve, a Refusal names the step to do by hand.

import { stringify } from 'yaml';
import { DrainguardError } from '../errors.ts';
import type { Manifest } from '../check/finding.ts';
import { guardEntry, guardScope } from '../check/guard-scope.ts';
import { WRAP_MEMORY_MIB, quantityBytes } from '../check/memory.ts';
import { type Container, podSpecOf } from '../check/pod.ts';
import { OPERATOR_KINDS, RUN_TO_COMPLETION } from '../check/workloads.ts';
import { guardTargetKey } from '../config/guard-list.ts';
import type { Mode } from './plan.ts';

const SECTION = (title: string) => `docs/deploy.md, "${title}"`;
const ANY_OPERATOR = SECTION('Adding drainguard to any other operator');
const SIDECAR_USER = 65532;
const MIB = 1024 * 1024;
/** The first line of what adopt writes: how a second run knows the overlay is its own. */
export const MARKER = '# Written by drainguard adopt';

export const refuseOverlay = (message: string): DrainguardError =>
  new DrainguardError('DG_ADOPT_REFUSED', `${message}; nothing is written`);

export interface OverlayRequest {
  /** The operator's objects as kubectl applies them, each in its namespace. */
  readonly objects: readonly Manifest[];
  /** The same, as the input names them: a Deployment with no namespace there is refused. */
  readonly raw: readonly Manifest[];
  readonly mode?: Mode;
  readonly command?: readonly string[];
}

export interface OverlayPlan {
  readonly deployment: string;
  readonly namespace: string;
  readonly mode: Mode;
  readonly why?: string;
  /** data of the drainguard ConfigMap. */
  readonly data: Record<string, unknown>;
  /** guard-more's entries, when there are any. */
  readonly guard: readonly string[];
  /** The strategic-merge patch of the Deployment, when one is needed, and what each part is for. */
  readonly patch?: { readonly spec: Record<string, unknown>; readonly reasons: readonly string[] };
  readonly untouched: readonly string[];
}

const bindsRole = (objects: readonly Manifest[], namespace: string, account: string): Manifest[] =>
  guardScope(objects, namespace, account).filter((o) => o.kind === 'ClusterRoleBinding' || o.kind === 'RoleBinding');

export function planOverlay(r: OverlayRequest): OverlayPlan {
  const { objects } = r;
  const drainguard = objects.find(
    (o) =>
      (o.metadata.labels as Record<string, string> | undefined)?.['app.kubernetes.io/name'] === 'drainguard' ||
      (podSpecOf(o)?.containers ?? []).some((c) => (c.command ?? [])[0]?.endsWith('/drainguard')),
  );
  if (drainguard)
    throw refuseOverlay(
      `the input has drainguard already (${drainguard.kind} ${drainguard.metadata.name}): ` +
        "give adopt the operator's own manifests, not an overlay that adds drainguard",
    );
  const unplaced = r.raw.find((o) => o.kind === 'Deployment' && !o.metadata.namespace);
  if (unplaced)
    throw refuseOverlay(
      `the Deployment ${unplaced.metadata.name} names no namespace, and the components read drainguard's own names from it: ` +
        `set metadata.namespace in its manifest (or namespace: in its kustomization) (${ANY_OPERATOR}: "its namespace set")`,
    );
  const untouched: string[] = [];
  const operators: Manifest[] = [];
  for (const o of objects) {
    const pod = podSpecOf(o);
    if (!pod) continue;
    const account = pod.serviceAccountName ?? 'default';
    if (bindsRole(objects, o.metadata.namespace ?? 'default', account).length === 0) {
      untouched.push(`${o.kind} ${o.metadata.name}: the manifests bind its ServiceAccount to no role, nothing to guard`);
      continue;
    }
    if (RUN_TO_COMPLETION.has(o.kind)) {
      untouched.push(`${o.kind} ${o.metadata.name}: runs to completion, no operator to drain`);
      continue;
    }
    operators.push(o);
  }
  const other = operators.find((o) => o.kind !== 'Deployment');
  if (other)
    throw refuseOverlay(
      `the ${other.kind} ${other.metadata.name} runs as a ServiceAccount the manifests bind to roles, and the kustomize ` +
        `components add drainguard to a Deployment only: ${
          (OPERATOR_KINDS as readonly string[]).includes(other.kind)
            ? "the Helm library chart adds it to a StatefulSet or DaemonSet (docs/helm.md, 'A workload of another kind')"
            : 'run the operator as a Deployment'
        }, or place drainguard's pieces by hand (${ANY_OPERATOR})`,
    );
  if (operators.length === 0)
    throw refuseOverlay(
      'the manifests have no Deployment whose ServiceAccount they bind to a role: no operator to add drainguard to ' + `(${ANY_OPERATOR})`,
    );
  const deployments = objects.filter((o) => o.kind === 'Deployment');
  if (deployments.length > 1)
    throw refuseOverlay(
      `the manifests hold ${deployments.length} Deployments (${deployments.map((d) => d.metadata.name).join(', ')}), and the ` +
        'components add drainguard to every Deployment of the kustomization they are used in: make one kustomization per ' +
        `Deployment, each with its RBAC, and run adopt on each (${SECTION('More than one ClusterRole and binding')}: several operators)`,
    );
  const deployment = operators[0]!;
  const where = `the Deployment ${deployment.metadata.name}`;
  const namespace = deployment.metadata.namespace ?? 'default';
  const pod = podSpecOf(deployment)!;
  const container = pod.containers.find((c) => c.name === 'manager');
  if (!container)
    throw refuseOverlay(
      `${where}'s containers are ${pod.containers.map((c) => c.name).join(', ')}, and the components find the operator's ` +
        "container by its name, manager: rename it, or copy deploy/components/ and replace manager in the mode's " +
        "deployment.yaml and kustomization.yaml, and in wrap mode in guard-more's and hold's kustomization.yaml too " +
        `(${ANY_OPERATOR}, step 3)`,
    );
  const account = pod.serviceAccountName ?? 'default';
  const serviceAccount = objects.find(
    (o) => o.kind === 'ServiceAccount' && o.metadata.name === account && o.metadata.namespace === namespace,
  );
  const scope = guardScope(objects, namespace, account);
  const main = scope.find(
    (b) => b.kind === 'ClusterRoleBinding' && scope.some((c) => c.kind === 'ClusterRole' && c.metadata.name === b.roleRef?.name),
  );
  if (!main)
    throw refuseOverlay(
      `the manifests bind the ServiceAccount ${namespace}/${account} to no ClusterRole of their own with a ClusterRoleBinding, ` +
        "and the components guard one ClusterRole and its binding as the operator's: for Roles only, use the " +
        `kubebuilder-namespaced component's layout, or name them by hand (${SECTION('A namespace-scoped project')})`,
    );
  const clusterRole = main.roleRef.name as string;
  const base = new Set([`clusterrole/${clusterRole}`, `clusterrolebinding/${main.metadata.name}`]);
  const extra = scope.filter((o) => !base.has(guardTargetKey(guardEntry(o))));
  const guard = extra.map((o) => guardTargetKey(guardEntry(o)));
  const tokenOff = (pod.automountServiceAccountToken ?? (serviceAccount?.automountServiceAccountToken as boolean | undefined)) === false;
  let mode: Mode = r.mode ?? 'wrap';
  let why: string | undefined;
  if (tokenOff) {
    if (r.mode === 'wrap')
      throw refuseOverlay(
        `${where} mounts no ServiceAccount token (automountServiceAccountToken: false), and in wrap mode a token for drainguard ` +
          `would be the operator's too: use --mode native-sidecar (${ANY_OPERATOR}: a pod with automountServiceAccountToken: false)`,
      );
    if (r.mode === undefined) {
      mode = 'native-sidecar';
      why = 'its pod mounts no ServiceAccount token: drainguard gets its own in a sidecar';
    }
  }
  if (mode !== 'wrap' && container.lifecycle?.preStop !== undefined)
    throw refuseOverlay(
      `${where}: its container manager has a preStop hook of its own, and in mode ${mode} drainguard's is the one that ` +
        `drains: the two would merge into one handler the API server refuses; replace the container's own hook with ` +
        `drainguard's by the patch of ${ANY_OPERATOR}, step 3`,
    );
  const data: Record<string, unknown> = { serviceAccount: account, clusterRole, clusterRoleBinding: main.metadata.name };
  const spec: Record<string, unknown> = {};
  const reasons: string[] = [];
  const manager: Record<string, unknown> = { name: 'manager' };
  if (mode === 'wrap') {
    const command = container.command?.length ? container.command : r.command;
    if (!command)
      throw refuseOverlay(
        `${where}: its container manager sets no command (its image's ENTRYPOINT runs), and in wrap mode drainguard starts ` +
          'the operator itself; adopt reads no image, so give that entrypoint with --command PATH (`crane config IMAGE`, ' +
          `\`docker inspect IMAGE\`), or use --mode native-sidecar (${ANY_OPERATOR}: "in wrap mode, the program its container runs")`,
      );
    data.command = command[0];
    if (command.length > 1) {
      manager.command = ['/drainguard/drainguard', 'run', '--', ...command];
      reasons.push(`the command's ${command.length} words after \`--\`: the component takes one`);
    }
    const memory = wrapMemory(container, where);
    manager.resources = memory.resources;
    reasons.push(memory.reason);
  }
  const sidecar: Record<string, unknown> = { name: 'drainguard' };
  if (mode !== 'wrap') {
    const user = container.securityContext?.runAsUser ?? pod.securityContext?.runAsUser;
    if (user !== undefined && user !== SIDECAR_USER) {
      const group = container.securityContext?.runAsGroup ?? pod.securityContext?.runAsGroup ?? user;
      sidecar.securityContext = { runAsUser: user, runAsGroup: group };
      reasons.push(`drainguard runs as the operator's user ${user} (the drain socket is mode 0600)`);
    }
    if (tokenOff) {
      spec.volumes = [
        {
          name: 'drainguard-token',
          projected: {
            sources: [
              { serviceAccountToken: { path: 'token', expirationSeconds: 3607 } },
              { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
              { downwardAPI: { items: [{ path: 'namespace', fieldRef: { fieldPath: 'metadata.namespace' } }] } },
            ],
          },
        },
      ];
      sidecar.volumeMounts = [{ name: 'drainguard-token', mountPath: '/var/run/secrets/kubernetes.io/serviceaccount', readOnly: true }];
      reasons.push("a token in drainguard's container alone: the pod mounts none");
    }
  }
  if (Object.keys(manager).length > 1) spec.containers = [manager];
  if (Object.keys(sidecar).length > 1) spec[mode === 'native-sidecar' ? 'initContainers' : 'containers'] = [sidecar];
  if (guard.length > 0) {
    data.guard = guard.join(',');
    data.guardNames = [...new Set(extra.map((o) => o.metadata.name))];
  }
  if (serviceAccount === undefined)
    untouched.push(
      `ServiceAccount ${namespace}/${account}: not in the manifests; it is guarded all the same, keep it until the pod is gone`,
    );
  return {
    deployment: deployment.metadata.name,
    namespace,
    mode,
    ...(why && { why }),
    data,
    guard,
    ...(Object.keys(spec).length > 0 && { patch: { spec: { template: { spec } }, reasons } }),
    untouched,
  };
}

/** Wrap mode's resources for the manager container: its memory request and limit raised by drainguard's. */
function wrapMemory(c: Container, where: string): { resources: Record<string, unknown>; reason: string } {
  const mib = (raw: string | number | undefined, what: string): number | undefined => {
    if (raw === undefined) return undefined;
    const bytes = quantityBytes(raw);
    if (bytes === undefined)
      throw refuseOverlay(
        `${where}: the manager's memory ${what} ${JSON.stringify(raw)} is no quantity adopt can add to (${ANY_OPERATOR}, step 4)`,
      );
    return Math.ceil(bytes / MIB);
  };
  const request = mib(c.resources?.requests?.memory, 'request');
  const limit = mib(c.resources?.limits?.memory, 'limit');
  const resources: Record<string, unknown> = { requests: { memory: `${(request ?? 0) + WRAP_MEMORY_MIB.request}Mi` } };
  if (limit !== undefined) resources.limits = { memory: `${limit + WRAP_MEMORY_MIB.limit}Mi` };
  const text = (v: number | undefined, add: number) => (v === undefined ? `none, now ${add}Mi` : `${v}Mi + ${add}Mi`);
  return {
    resources,
    reason:
      `wrap mode: drainguard runs in the manager container, its memory request ${text(request, WRAP_MEMORY_MIB.request)}` +
      (limit === undefined ? ' (no limit set, none added)' : `, limit ${text(limit, WRAP_MEMORY_MIB.limit)}`),
  };
}

export interface OverlayFiles {
  readonly 'kustomization.yaml': string;
  readonly 'drainguard.yaml': string;
}

/** The overlay's two files for PLAN: BASE is the input as its kustomization names it, COMPONENT(NAME) where each component is. */
export function overlayFiles(plan: OverlayPlan, base: string, component: (name: string) => string, source: string): OverlayFiles {
  const components = [component(plan.mode), ...(plan.guard.length > 0 ? [component('guard-more')] : [])];
  const kustomization: Record<string, unknown> = {
    apiVersion: 'kustomize.config.k8s.io/v1beta1',
    kind: 'Kustomization',
    resources: [base, 'drainguard.yaml'],
    components,
  };
  const head = [
    `${MARKER} from ${source}: the Deployment ${plan.namespace}/${plan.deployment} in ${plan.mode} mode.`,
    `# Run it again after changing ${source}; check: kubectl kustomize DIR | drainguard check -`,
  ];
  let patches = '';
  if (plan.patch) {
    const body = stringify({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'any' }, spec: plan.patch.spec });
    patches =
      `${plan.patch.reasons.map((r) => `# ${r}`).join('\n')}\n` +
      stringify({ patches: [{ target: { kind: 'Deployment' }, patch: body.trimEnd() }] }, { blockQuote: 'literal' });
  }
  const configMap = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'drainguard', annotations: { 'config.kubernetes.io/local-config': 'true' } },
    data: plan.data,
  };
  return {
    'kustomization.yaml': `${head.join('\n')}\n${stringify(kustomization)}${patches}`,
    'drainguard.yaml': `${MARKER}: the operator's names, read by the components, never applied (local-config).\n${stringify(configMap)}`,
  };
}
