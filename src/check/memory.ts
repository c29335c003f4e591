// drainguard's memory in the operator's pod, as the kubelet counts it: the
// working set (usage minus inactive file pages: what `kubectl top` shows and
// the eviction ranks pods by), measured on the real kubelet in every mode,
// idle, after a reclaim pass, in a drain of 1000 clients and at the guard
// release (test/tooling/bench/pod-memory.ts; docs/performance.md, "What
// drainguard costs a pod"). The requests and limits the chart and the
// components ship follow from it:
//   request: what it adds to the pod for nearly all of the pod's life, the p99
//            of the idle samples (a reclaim pass's included), a quarter on top, to 8Mi;
//   limit:   the most its container held beyond the operator's at any read (the
//            drain of 1000 clients and the stop included), plus what the drain
//            socket's caps let clients make it hold (test/protocol/load.test.ts), to 32Mi.
// Wrap mode puts drainguard under the operator container's limit: the chart
// adds both to the container's (the components' patch names the sums). A
// limit below what drainguard was measured at plus the least an operator is
// given (kubebuilder's 128Mi) leaves the operator less than it was sized for,
// and a sidecar's limit below what it was measured at leaves it less than it
// used: the container is OOM-killed, at the worst during the drain, when the
// clients are many and the operator works too.

import type { Found } from './finding.ts';
import type { Container, Mode } from './pod.ts';

/**
 * Measured in a pod (docs/performance.md), in MiB, the worst mode and page-cache state: the idle p99 of the
 * working set drainguard adds to its pod, and the most its container held beyond the operator's.
 */
export const MEASURED_MIB = { idleAddedP99: 47.5, containerMax: 53.6 } as const;
/**
 * The most the `install` init container's cgroup held, in MiB, with no limit (`memory.max_usage_in_bytes`): the page
 * cache of its own start, its copy and the check that runs the copy, on a disk that reads ahead 8 MiB.
 */
export const INSTALL_PEAK_MIB = 215;
/** What clients can make drainguard hold beyond that within the drain socket's caps (1024 connections, 128 not greeted, 64 KiB lines). */
export const PROTOCOL_CAPS_MIB = 96;

const upTo = (mib: number, step: number) => Math.ceil(mib / step) * step;

/** The request and limit that measured figures give (the rule above), in MiB. */
export function sizedMemory(measured: { idleAddedP99: number; containerMax: number }): { request: number; limit: number } {
  const request = upTo(measured.idleAddedP99 * 1.25, 8);
  return { request, limit: Math.max(request, upTo(measured.containerMax + PROTOCOL_CAPS_MIB, 32)) };
}

/** drainguard's container in the sidecar modes, and what wrap mode adds to the operator container's, in MiB (drainguard.resources). */
export const WRAP_MEMORY_MIB: { readonly request: number; readonly limit: number } = sizedMemory(MEASURED_MIB);
/**
 * The install init container's: drainguard's request, and a limit above its page cache's peak with a tenth on top, to 32Mi.
 * Under the peak, the init container's own reclaim takes the pages it runs for pages in use, and the pod keeps them
 * active when it ends (16.5 MiB at 192Mi, 25.9 at 160Mi, 0.7 at 256Mi: docs/performance.md, "A pod's pages").
 */
export const INSTALL_MEMORY_MIB = { request: WRAP_MEMORY_MIB.request, limit: upTo(INSTALL_PEAK_MIB * 1.1, 32) } as const;
/** The least memory limit an operator is given on its own, in MiB: kubebuilder's scaffold's. */
export const OPERATOR_MEMORY_FLOOR_MIB = 128;
/** Below these limits, in MiB, check warns: wrap mode's container (drainguard beside the operator's floor), a sidecar's own. */
export const LIMIT_FLOOR_MIB = {
  wrap: Math.ceil(MEASURED_MIB.containerMax + OPERATOR_MEMORY_FLOOR_MIB),
  sidecar: Math.ceil(MEASURED_MIB.containerMax),
} as const;

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

const MEASURED =
  `drainguard was measured at up to ${MEASURED_MIB.containerMax} MiB in its container, ` +
  'in a drain of 1000 clients (docs/performance.md)';

const TEXT = {
  wrap: (where: string, limit: string) =>
    `${where} runs drainguard and the operator under a memory limit of ${limit}: ${MEASURED}, ` +
    `which leaves the operator less than the ${OPERATOR_MEMORY_FLOOR_MIB}Mi an operator is given on its own; ` +
    'the container is OOM-killed, at the worst during the drain',
  wrapFix: (where: string, limit: number) =>
    `raise the memory request of ${where} by ${WRAP_MEMORY_MIB.request}Mi and its limit by ${WRAP_MEMORY_MIB.limit}Mi ` +
    `(to at least ${limit}Mi here): the Helm library chart does it in wrap mode; with the kustomize components, ` +
    "patch resources.limits.memory and resources.requests.memory of the operator's container (docs/deploy.md)",
  sidecar: (where: string, limit: string) =>
    `${where} runs drainguard under a memory limit of ${limit}, below what it uses: ${MEASURED}; ` +
    'the container is OOM-killed, at the worst during the drain, and the operator loses its drain and its guard',
  sidecarFix: (where: string) =>
    `give ${where} a memory limit of at least ${WRAP_MEMORY_MIB.limit}Mi and a request of ${WRAP_MEMORY_MIB.request}Mi, ` +
    "as the components and the chart's drainguard.resources do",
};

/** The memory limit of drainguard's container against what drainguard was measured at (wrap mode: with the operator's floor beside it). */
export function checkMemory(c: Container, mode: Mode): Found[] {
  const raw = c.resources?.limits?.memory;
  const bytes = raw === undefined ? undefined : quantityBytes(raw);
  if (bytes === undefined) return [];
  const where = `container ${c.name}`;
  if (mode === 'wrap') {
    if (bytes >= LIMIT_FLOOR_MIB.wrap * MIB) return [];
    return [
      {
        code: 'wrap-memory-too-low',
        severity: 'warning',
        message: TEXT.wrap(where, String(raw)),
        fix: TEXT.wrapFix(where, Math.ceil(bytes / MIB) + WRAP_MEMORY_MIB.limit),
      },
    ];
  }
  if (bytes >= LIMIT_FLOOR_MIB.sidecar * MIB) return [];
  return [{ code: 'sidecar-memory-too-low', severity: 'warning', message: TEXT.sidecar(where, String(raw)), fix: TEXT.sidecarFix(where) }];
}
