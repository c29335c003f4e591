// Wrap mode puts drainguard in the operator's container, under the operator's
// memory limit. Both renders raise the container's request and limit by what
// drainguard's own container gets in the sidecar modes (the chart's
// drainguard.resources: 96Mi, 192Mi; idle RSS of `drainguard run` is 47 MiB
// installed, about 59 MiB with the guard's API client, docs/deploy.md
// "Resources"). A limit below what drainguard is expected to use (its
// request) plus the least an operator scaffold is given (kubebuilder's 128Mi)
// leaves the operator less than it was sized for: the container is
// OOM-killed, at the worst at the drain, when both work.

import type { Found } from './finding.ts';
import type { Container } from './pod.ts';

/** What drainguard adds to the operator container's memory request and limit in wrap mode, in MiB (its sidecar container's resources). */
export const WRAP_MEMORY_MIB = { request: 96, limit: 192 } as const;
/** The least memory limit an operator is given on its own, in MiB: kubebuilder's scaffold's. */
export const OPERATOR_MEMORY_FLOOR_MIB = 128;

const MIB = 1024 * 1024;
const SUFFIX: Record<string, number> = {
  '': 1,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  Ki: 1024,
  Mi: MIB,
  Gi: 1024 * MIB,
  Ti: 1024 * 1024 * MIB,
  m: 1e-3,
};

/** A Kubernetes quantity (128Mi, 1G, 134217728, 1e9) in bytes; undefined when it does not parse. */
export function quantityBytes(raw: string | number): number | undefined {
  const m = /^([0-9.]+(?:[eE][-+]?[0-9]+)?)(Ki|Mi|Gi|Ti|k|M|G|T|m)?$/.exec(String(raw).trim());
  return m ? Number(m[1]) * SUFFIX[m[2] ?? '']! : undefined;
}

const TEXT = {
  message: (where: string, limit: string) =>
    `${where} runs drainguard and the operator under a memory limit of ${limit}: ` +
    `drainguard is sized at ${WRAP_MEMORY_MIB.request}Mi of it, ` +
    `which leaves the operator less than the ${OPERATOR_MEMORY_FLOOR_MIB}Mi an operator is given on its own; ` +
    'the container is OOM-killed, at the worst during the drain',
  fix: (where: string, limit: number) =>
    `raise the memory request of ${where} by ${WRAP_MEMORY_MIB.request}Mi and its limit by ${WRAP_MEMORY_MIB.limit}Mi ` +
    `(to at least ${limit}Mi here): the Helm library chart does it in wrap mode; with the kustomize components, ` +
    "patch resources.limits.memory and resources.requests.memory of the operator's container (docs/deploy.md)",
};

export function checkWrapMemory(c: Container): Found[] {
  const raw = c.resources?.limits?.memory;
  const bytes = raw === undefined ? undefined : quantityBytes(raw);
  if (bytes === undefined || bytes >= (WRAP_MEMORY_MIB.request + OPERATOR_MEMORY_FLOOR_MIB) * MIB) return [];
  const where = `container ${c.name}`;
  return [
    {
      code: 'wrap-memory-too-low',
      severity: 'warning',
      message: TEXT.message(where, String(raw)),
      fix: TEXT.fix(where, Math.ceil(bytes / MIB) + WRAP_MEMORY_MIB.limit),
    },
  ];
}
