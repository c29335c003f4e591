// What adopt reads from the chart's plain render: each operator workload (a
// Deployment, StatefulSet or DaemonSet whose ServiceAccount the chart binds to
// a role), its template file, container, command and token; the files that
// hold the RBAC; and, where it cannot decide, the step of docs/helm.md to do
// by hand (a Refusal). The library chart itself finds the guard in those files.

import { DrainguardError } from '../errors.ts';
import type { Manifest } from '../check/finding.ts';
import { OPERATOR_KINDS, RUN_TO_COMPLETION } from '../check/workloads.ts';
import type { Rendered } from './helm.ts';

export type Mode = 'wrap' | 'native-sidecar' | 'sidecar';

export interface Operator {
  readonly kind: string;
  readonly name: string;
  /** Its file under templates/, as the chart has it. */
  readonly file: string;
  readonly mode: Mode;
  /** wrap mode, a container that sets none: the entrypoint given with --command. */
  readonly command?: readonly string[];
  /** Why the mode is not the one asked for (a pod without a token). */
  readonly why?: string;
}

export interface Plan {
  readonly operators: readonly Operator[];
  /** Files under templates/ that render a ServiceAccount or RBAC (the operators' own files aside). */
  readonly guardTemplates: readonly string[];
  /** What adopt saw and leaves as it is, for the summary. */
  readonly untouched: readonly string[];
}

export interface PlanRequest {
  readonly namespace: string;
  readonly mode?: Mode;
  readonly command?: readonly string[];
}

const RBAC = new Set(['ServiceAccount', 'Role', 'ClusterRole', 'RoleBinding', 'ClusterRoleBinding']);
const SECTION = (title: string) => `docs/helm.md, "${title}"`;

export const refuse = (message: string): DrainguardError =>
  new DrainguardError('DG_ADOPT_REFUSED', `${message}; the chart is left as it was`);

interface PodSpec {
  serviceAccountName?: string;
  automountServiceAccountToken?: boolean;
  containers?: { name: string; command?: string[]; lifecycle?: { preStop?: unknown } }[];
}

/** The pod spec of a workload of any kind: a Pod's own, a CronJob's job's, else spec.template's. */
function podOf(o: Manifest): PodSpec | undefined {
  const spec = o.spec as any;
  if (o.kind === 'Pod') return spec;
  if (o.kind === 'CronJob') return spec?.jobTemplate?.spec?.template?.spec;
  const pod = spec?.template?.spec;
  return Array.isArray(pod?.containers) ? pod : undefined;
}

export function planAdoption(rendered: readonly Rendered[], r: PlanRequest): Plan {
  const nsOf = (o: Manifest) => (o.metadata.namespace as string | undefined) ?? r.namespace;
  const bound = (o: Manifest, pod: PodSpec) => {
    const ns = nsOf(o);
    const sa = pod.serviceAccountName ?? 'default';
    return rendered.some(
      ({ object: b }) =>
        (b.kind === 'RoleBinding' || b.kind === 'ClusterRoleBinding') &&
        ((b.subjects ?? []) as { kind: string; name: string; namespace?: string }[]).some(
          (s) =>
            (s.kind === 'ServiceAccount' && s.name === sa && (s.namespace ?? nsOf(b)) === ns) ||
            (s.kind === 'User' && s.name === `system:serviceaccount:${ns}:${sa}`),
        ),
    );
  };
  const untouched: string[] = [];
  const workloads: { r: Rendered; pod: PodSpec }[] = [];
  for (const doc of rendered) {
    const pod = podOf(doc.object);
    if (!pod || doc.hook) continue;
    const id = `${doc.object.kind} ${doc.object.metadata.name}`;
    if (doc.file === undefined) {
      untouched.push(`${id}: a subchart's (add drainguard to that chart)`);
      continue;
    }
    if (!bound(doc.object, pod)) {
      untouched.push(`${id} (templates/${doc.file}): the chart binds its ServiceAccount to no role, nothing to guard`);
      continue;
    }
    workloads.push({ r: doc, pod });
  }
  const operators = workloads.filter((w) => (OPERATOR_KINDS as readonly string[]).includes(w.r.object.kind));
  for (const w of workloads.filter((x) => !operators.includes(x))) {
    const { kind } = w.r.object;
    const { name } = w.r.object.metadata;
    const sharesFile = operators.some((o) => o.r.file === w.r.file);
    if (RUN_TO_COMPLETION.has(kind) && !sharesFile) {
      untouched.push(`${kind} ${name} (templates/${w.r.file}): runs to completion, no operator to drain`);
      continue;
    }
    throw refuse(
      `templates/${w.r.file} renders the ${kind} ${name}, which runs as a ServiceAccount the chart binds to roles, ` +
        'and drainguard adds itself to a Deployment, StatefulSet or DaemonSet only: ' +
        `move it into a template of its own if it is not the operator, else place drainguard's pieces by hand ` +
        `(${SECTION('A workload of another kind')})`,
    );
  }
  const completing = workloads.find((w) => !operators.includes(w));
  if (operators.length === 0 && completing) {
    const { kind } = completing.r.object;
    throw refuse(
      `templates/${completing.r.file} renders the ${kind} ${completing.r.object.metadata.name}, and no Deployment, StatefulSet or ` +
        `DaemonSet runs beside it: a ${kind}'s pods run to completion, and drainguard adds itself to those three kinds only; ` +
        `run the operator as one of them (${SECTION('A workload of another kind')})`,
    );
  }
  if (operators.length === 0) {
    throw refuse(
      'the render has no Deployment, StatefulSet or DaemonSet whose ServiceAccount the chart binds to a role: ' +
        'no operator to add drainguard to (is it switched off by a value? give adopt the values it installs with: -f, --set)',
    );
  }
  const byFile = new Map<string, string[]>();
  for (const o of operators) byFile.set(o.r.file!, [...(byFile.get(o.r.file!) ?? []), `${o.r.object.kind} ${o.r.object.metadata.name}`]);
  for (const [file, names] of byFile) {
    if (names.length > 1)
      throw refuse(
        `templates/${file} renders ${names.length} workloads (${names.join(', ')}): ` +
          `put each in a file of its own, then run adopt again (${SECTION('A workload of another kind')}: two workloads in one file)`,
      );
  }
  const accounts = new Map(
    rendered.filter((d) => d.object.kind === 'ServiceAccount').map((d) => [`${nsOf(d.object)}/${d.object.metadata.name}`, d.object]),
  );
  const planned = operators.map(({ r: doc, pod }) =>
    operatorOf(doc, pod, accounts.get(`${nsOf(doc.object)}/${pod.serviceAccountName ?? 'default'}`), r),
  );
  const own = new Set(planned.map((o) => o.file));
  const guardTemplates = [
    ...new Set(rendered.filter((d) => d.file !== undefined && RBAC.has(d.object.kind) && !own.has(d.file)).map((d) => d.file!)),
  ].sort();
  return { operators: planned, guardTemplates, untouched };
}

function operatorOf(doc: Rendered, pod: PodSpec, account: Manifest | undefined, r: PlanRequest): Operator {
  const { kind } = doc.object;
  const name = doc.object.metadata.name;
  const where = `the ${kind} ${name} (templates/${doc.file})`;
  const containers = pod.containers ?? [];
  const container = containers.length === 1 ? containers[0] : containers.find((c) => c.name === 'manager');
  if (!container) {
    throw refuse(
      `${where} has ${containers.length} containers and none is named manager: adopt cannot tell which is the operator; ` +
        'set drainguard.operator.container by hand (docs/helm.md, "Settings")',
    );
  }
  const token = (pod.automountServiceAccountToken ?? (account?.automountServiceAccountToken as boolean | undefined) ?? true) !== false;
  let mode: Mode = r.mode ?? 'wrap';
  let why: string | undefined;
  if (!token) {
    if (r.mode === 'wrap')
      throw refuse(
        `${where} mounts no ServiceAccount token (automountServiceAccountToken: false), and in wrap mode a token for drainguard ` +
          `would be the operator's too: use --mode native-sidecar (${SECTION('A pod without a ServiceAccount token')})`,
      );
    if (r.mode === undefined) {
      mode = 'native-sidecar';
      why = 'its pod mounts no ServiceAccount token: drainguard gets its own in a sidecar';
    }
  }
  if (mode !== 'wrap' && container.lifecycle?.preStop !== undefined) {
    throw refuse(
      `${where}: its container ${container.name} has a preStop hook of its own, and in mode ${mode} drainguard's is the one ` +
        "that drains: remove the chart's hook or set drainguard.operator.replacePreStop: true " +
        `(${SECTION('A container with a `preStop` hook of its own')})` +
        (why ? ` (${mode}, because ${why})` : ''),
    );
  }
  let command: readonly string[] | undefined;
  if (mode === 'wrap' && !(container.command?.length ?? 0)) {
    if (!r.command)
      throw refuse(
        `${where}: its container ${container.name} sets no command (its image's ENTRYPOINT runs), and in wrap mode drainguard ` +
          'starts the operator itself; adopt reads no image, so give that entrypoint with --command PATH (`crane config IMAGE`, ' +
          `\`docker inspect IMAGE\`), or use --mode native-sidecar (${SECTION('A container that names no command')})`,
      );
    command = r.command;
  }
  return { kind, name, file: doc.file!, mode, ...(command && { command }), ...(why && { why }) };
}
