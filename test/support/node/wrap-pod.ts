// A Pod in drainguard's wrap mode as deploy/components/install and wrap make it
// (the release image's `install` into an emptyDir, `drainguard run -- OPERATOR`
// in the operator's container, the socket on a volume), for a real node: the
// operator is a Node.js fixture of this checkout run from TOOLS_IMAGE, and what
// drainguard and the operator print goes to OUT/NAME.out and NAME.err on the host.
// Its volumes, install and mounts are a native sidecar pod's too.

import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { DRAINGUARD_IMAGE, TOOLS_IMAGE, toolsMounts } from './images.ts';
import type { RealNode } from './index.ts';

export interface WrapPod {
  readonly name: string;
  readonly namespace: string;
  readonly serviceAccountName: string;
  /** The operator fixture (a path in this checkout). */
  readonly operator: string;
  /** The API server's URL: the container's in-cluster address is set to it (nothing routes the Service's ClusterIP). */
  readonly apiUrl: string;
  readonly env?: Record<string, string>;
  readonly terminationGracePeriodSeconds?: number;
  /** The operator container's image: TOOLS_IMAGE, or one built from it (toolsImageStoppedBy). */
  readonly image?: string;
  /** The operator container's lifecycle.stopSignal (spec.os.name linux with it, as the API server requires). */
  readonly stopSignal?: string;
}

export const fieldRef = (name: string, fieldPath: string) => ({ name, valueFrom: { fieldRef: { fieldPath } } });

/**
 * What a pod of drainguard's on a real node has in either mode: the volumes (the host's out
 * directory, drainguard's emptyDir, the drain socket's, the tools), the init container of
 * deploy/components/install that copies drainguard in, and the operator container's mounts.
 */
export function installedParts(node: RealNode) {
  const tools = toolsMounts();
  return {
    volumes: [
      { name: 'out', hostPath: { path: node.outDir } },
      { name: 'drainguard', emptyDir: {} },
      { name: 'drainguard-socket', emptyDir: { medium: 'Memory' } },
      ...tools.volumes,
    ],
    install: {
      name: 'drainguard-install',
      image: DRAINGUARD_IMAGE,
      command: ['/drainguard/drainguard', 'install', '/shared'],
      volumeMounts: [{ name: 'drainguard', mountPath: '/shared' }],
    },
    operatorMounts: [
      { name: 'out', mountPath: '/out' },
      { name: 'drainguard', mountPath: '/drainguard', readOnly: true },
      { name: 'drainguard-socket', mountPath: '/run/drainguard' },
      ...tools.volumeMounts,
    ],
  };
}

export function wrapPod(node: RealNode, pod: WrapPod): object {
  const parts = installedParts(node);
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: pod.name, namespace: pod.namespace },
    spec: {
      nodeName: node.name,
      hostNetwork: true,
      serviceAccountName: pod.serviceAccountName,
      terminationGracePeriodSeconds: pod.terminationGracePeriodSeconds ?? 30,
      ...(pod.stopSignal && { os: { name: 'linux' } }),
      volumes: parts.volumes,
      initContainers: [
        {
          ...parts.install,
          securityContext: {
            runAsNonRoot: true,
            runAsUser: 65532,
            runAsGroup: 65532,
            readOnlyRootFilesystem: true,
            allowPrivilegeEscalation: false,
          },
        },
      ],
      containers: [
        {
          name: 'manager',
          image: pod.image ?? TOOLS_IMAGE,
          ...(pod.stopSignal && { lifecycle: { stopSignal: pod.stopSignal } }),
          // The shell only sends the output to the host: exec, so the kubelet's signals reach drainguard.
          command: [
            '/busybox',
            'sh',
            '-c',
            'exec /drainguard/drainguard run -- "$NODE" "$OPERATOR" >>/out/$DRAINGUARD_POD_NAME.out 2>>/out/$DRAINGUARD_POD_NAME.err',
          ],
          env: [
            fieldRef('DRAINGUARD_POD_NAME', 'metadata.name'),
            fieldRef('DRAINGUARD_POD_NAMESPACE', 'metadata.namespace'),
            fieldRef('DRAINGUARD_POD_UID', 'metadata.uid'),
            { name: 'DRAINGUARD_LEADER_LEASE', value: 'off' },
            { name: 'DRAINGUARD_SOCKET', value: '/run/drainguard/drain.sock' },
            { name: 'KUBERNETES_SERVICE_HOST', value: '127.0.0.1' },
            { name: 'KUBERNETES_SERVICE_PORT', value: new URL(pod.apiUrl).port },
            { name: 'NODE', value: process.execPath },
            { name: 'OPERATOR', value: pod.operator },
            ...Object.entries(pod.env ?? {}).map(([name, value]) => ({ name, value })),
          ],
          volumeMounts: parts.operatorMounts,
        },
      ],
    },
  };
}

/** The lines of `file` in the node's out directory so far (none before it is written). */
export function outLines(node: RealNode, file: string): string[] {
  try {
    return readFileSync(join(node.outDir, file), 'utf8').split('\n').filter(Boolean);
  } catch {
    return [];
  }
}

/** What the pod's drainguard and operator printed on stdout so far. */
export const wrapStdout = (node: RealNode, pod: string): string[] => outLines(node, `${pod}.out`);

/** drainguard's stderr so far, as written. */
export const wrapStderr = (node: RealNode, pod: string): string[] => outLines(node, `${pod}.err`);

/** drainguard's log lines so far. */
export function wrapLogs(node: RealNode, pod: string): { msg: string; [key: string]: unknown }[] {
  return wrapStderr(node, pod).flatMap((l) => {
    try {
      return [JSON.parse(l) as { msg: string }];
    } catch {
      return [];
    }
  });
}

/** The operator fixture's process of wrap-mode pod NAMESPACE/POD, on the host (its environment names the pod), for signals. */
export function wrapOperatorPid(namespace: string, pod: string): number {
  const mine = [`DRAINGUARD_POD_NAME=${pod}`, `DRAINGUARD_POD_NAMESPACE=${namespace}`];
  const pids = readdirSync('/proc').filter((p) => {
    try {
      if (!/^\d+$/.test(p)) return false;
      // Node.js on the fixture (drainguard's own command line names the fixture too).
      const [exe, script] = readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0');
      if (exe !== process.execPath || !script?.endsWith('fixtures/operator.ts')) return false;
      return mine.every((v) => readFileSync(`/proc/${p}/environ`, 'utf8').split('\0').includes(v));
    } catch {
      return false;
    }
  });
  if (pids.length !== 1) throw new Error(`not one operator process of ${namespace}/${pod}: ${pids.join(', ') || 'none'}`);
  return Number(pids[0]);
}
