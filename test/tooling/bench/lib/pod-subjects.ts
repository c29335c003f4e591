// The pods the pod benchmark measures on a real node (test/support/node): the
// Go client's example operator (clients/go/example, static, FROM scratch) as
// /manager of an image of its own, and drainguard in front of it in each mode
// as deploy/components makes the pod (its volumes, init containers, variables,
// securityContext and resources):
//   alone         the operator image, no drainguard: what every other pod is measured against
//   wrap-install  wrap mode, drainguard copied in by the release image's `install` (components install + wrap)
//   wrap-image    wrap mode, drainguard in the operator's image (COPY --from the release image's /drainguard)
//   sidecar       the native sidecar (components install + native-sidecar): `drainguard sidecar` beside the
//                 operator, `drainguard prestop` its preStop hook
// Pods use hostNetwork, and reach the API server at its loopback address
// (test/support/node/README.md): the sidecar's listener on a free port.

import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { INSTALL_MEMORY_MIB, OPERATOR_MEMORY_FLOOR_MIB, WRAP_MEMORY_MIB } from '../../../../src/check/memory.ts';
import { GO, goEnv } from '../../../support/go.ts';
import { DRAINGUARD_IMAGE, type RealNode, buildContainerImage, fieldRef, saveImage } from '../../../support/node/index.ts';

export const MODES = ['alone', 'wrap-install', 'wrap-image', 'sidecar'] as const;
export type Mode = (typeof MODES)[number];

export const MODE_TITLES: Readonly<Record<Mode, string>> = {
  alone: 'the operator alone',
  'wrap-install': 'wrap mode, drainguard from the install init container',
  'wrap-image': "wrap mode, drainguard in the operator's image",
  sidecar: 'native sidecar mode',
};

/** The container drainguard runs in (wrap: beside the operator in `manager`), or none. */
export const DRAINGUARD_CONTAINER: Readonly<Record<Mode, string | undefined>> = {
  alone: undefined,
  'wrap-install': 'manager',
  'wrap-image': 'manager',
  sidecar: 'drainguard',
};

export const OPERATOR_IMAGE = 'drainguard.test/operator:1';
export const OPERATOR_DRAINGUARD_IMAGE = 'drainguard.test/operator-drainguard:1';

/** A kubebuilder scaffold's resources for its manager: what the operator alone gets. */
const OPERATOR_RESOURCES = { requests: { cpu: '10m', memory: '64Mi' }, limits: { cpu: '500m', memory: `${OPERATOR_MEMORY_FLOOR_MIB}Mi` } };
/** drainguard's container in the sidecar modes, and what wrap mode adds to the operator's (the chart's drainguard.resources). */
const DRAINGUARD_RESOURCES = {
  requests: { cpu: '10m', memory: `${WRAP_MEMORY_MIB.request}Mi` },
  limits: { cpu: '500m', memory: `${WRAP_MEMORY_MIB.limit}Mi` },
};
/** The install init container's (the chart's drainguard.installResources). */
const INSTALL_RESOURCES = {
  requests: { cpu: '10m', memory: `${INSTALL_MEMORY_MIB.request}Mi` },
  limits: { cpu: '500m', memory: `${INSTALL_MEMORY_MIB.limit}Mi` },
};
const WRAPPED_RESOURCES = {
  requests: { cpu: '10m', memory: `${64 + WRAP_MEMORY_MIB.request}Mi` },
  limits: { cpu: '500m', memory: `${OPERATOR_MEMORY_FLOOR_MIB + WRAP_MEMORY_MIB.limit}Mi` },
};
/** The components' securityContext of every container. */
const RESTRICTED = {
  runAsNonRoot: true,
  runAsUser: 65532,
  runAsGroup: 65532,
  allowPrivilegeEscalation: false,
  readOnlyRootFilesystem: true,
  capabilities: { drop: ['ALL'] },
  seccompProfile: { type: 'RuntimeDefault' },
};

/**
 * Builds the example operator (static: the image has no libc) and its two images, saved as
 * archives in `dir` for RealNode.importImages. Needs DRAINGUARD_IMAGE built (startNode does it).
 */
export function buildOperatorImages(dir: string): string[] {
  const context = join(dir, 'operator');
  mkdirSync(context, { recursive: true });
  execFileSync(GO, ['build', '-o', join(context, 'manager'), './example'], {
    cwd: resolve(import.meta.dirname, '../../../../clients/go'),
    env: { ...goEnv(), CGO_ENABLED: '0' },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  buildContainerImage(context, OPERATOR_IMAGE, 'FROM scratch\nCOPY manager /manager\nUSER 65532:65532\nENTRYPOINT ["/manager"]\n');
  buildContainerImage(
    context,
    OPERATOR_DRAINGUARD_IMAGE,
    `FROM scratch\nCOPY --from=${DRAINGUARD_IMAGE} /drainguard /drainguard\nCOPY manager /manager\nUSER 65532:65532\nENTRYPOINT ["/manager"]\n`,
  );
  return [OPERATOR_IMAGE, OPERATOR_DRAINGUARD_IMAGE].map((tag, i) => saveImage(tag, join(dir, `operator-${i}.tar`)));
}

export interface SubjectContext {
  readonly node: RealNode;
  readonly namespace: string;
  readonly serviceAccountName: string;
  /** The API server's URL: its port is the in-cluster address's (nothing routes the Service's ClusterIP here). */
  readonly apiUrl: string;
  /** DRAINGUARD_GUARD: the objects the components guard. */
  readonly guard: string;
  /** The sidecar's listener port on the host's loopback (hostNetwork). */
  readonly httpPort: number;
}

const SOCKET_VOLUME = { name: 'drainguard-socket', emptyDir: { medium: 'Memory', sizeLimit: '1Mi' } };
const INSTALL_VOLUME = { name: 'drainguard', emptyDir: { sizeLimit: '256Mi' } };
export const SOCKET_VOLUME_NAME = SOCKET_VOLUME.name;

const INSTALL = {
  name: 'drainguard-install',
  image: DRAINGUARD_IMAGE,
  command: ['/drainguard/drainguard', 'install', '/shared'],
  volumeMounts: [{ name: 'drainguard', mountPath: '/shared' }],
  securityContext: RESTRICTED,
  resources: INSTALL_RESOURCES,
};

function drainguardEnv(ctx: SubjectContext): object[] {
  return [
    fieldRef('DRAINGUARD_POD_NAME', 'metadata.name'),
    fieldRef('DRAINGUARD_POD_NAMESPACE', 'metadata.namespace'),
    fieldRef('DRAINGUARD_POD_UID', 'metadata.uid'),
    { name: 'DRAINGUARD_GUARD', value: ctx.guard },
    { name: 'DRAINGUARD_HOLD', value: '' },
    // The example operator holds no leader Lease.
    { name: 'DRAINGUARD_LEADER_LEASE', value: 'off' },
    { name: 'KUBERNETES_SERVICE_HOST', value: '127.0.0.1' },
    { name: 'KUBERNETES_SERVICE_PORT', value: new URL(ctx.apiUrl).port },
  ];
}

/** The pod of `mode`, named `name`. */
export function subjectPod(mode: Mode, name: string, ctx: SubjectContext): object {
  const socket = { name: 'DRAINGUARD_SOCKET', value: '/run/drainguard/drain.sock' };
  const socketMount = { name: SOCKET_VOLUME.name, mountPath: '/run/drainguard' };
  const installedMount = { name: 'drainguard', mountPath: '/drainguard', readOnly: true };
  const wrap = ['/drainguard/drainguard', 'run', '--', '/manager'];
  const manager: Record<Mode, object> = {
    alone: { image: OPERATOR_IMAGE, command: ['/manager'], resources: OPERATOR_RESOURCES },
    'wrap-install': {
      image: OPERATOR_IMAGE,
      command: wrap,
      env: [...drainguardEnv(ctx), socket],
      volumeMounts: [installedMount, socketMount],
      resources: WRAPPED_RESOURCES,
    },
    'wrap-image': {
      image: OPERATOR_DRAINGUARD_IMAGE,
      command: wrap,
      env: [...drainguardEnv(ctx), socket],
      volumeMounts: [socketMount],
      resources: WRAPPED_RESOURCES,
    },
    sidecar: {
      image: OPERATOR_IMAGE,
      command: ['/manager'],
      env: [socket],
      lifecycle: { preStop: { exec: { command: ['/drainguard/drainguard', 'prestop'] } } },
      volumeMounts: [installedMount, socketMount],
      resources: OPERATOR_RESOURCES,
    },
  };
  const sidecar = {
    name: 'drainguard',
    image: DRAINGUARD_IMAGE,
    restartPolicy: 'Always',
    command: ['/drainguard/drainguard', 'sidecar'],
    env: [...drainguardEnv(ctx), { name: 'DRAINGUARD_HTTP_ADDR', value: `127.0.0.1:${ctx.httpPort}` }],
    startupProbe: { httpGet: { host: '127.0.0.1', path: '/healthz', port: ctx.httpPort }, periodSeconds: 1, failureThreshold: 30 },
    livenessProbe: { httpGet: { host: '127.0.0.1', path: '/healthz', port: ctx.httpPort }, periodSeconds: 10 },
    readinessProbe: { httpGet: { host: '127.0.0.1', path: '/readyz', port: ctx.httpPort }, periodSeconds: 5 },
    volumeMounts: [socketMount],
    securityContext: RESTRICTED,
    resources: DRAINGUARD_RESOURCES,
  };
  const installs = mode === 'wrap-install' || mode === 'sidecar';
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: ctx.namespace, labels: { 'drainguard.test/mode': mode } },
    spec: {
      nodeName: ctx.node.name,
      hostNetwork: true,
      serviceAccountName: ctx.serviceAccountName,
      terminationGracePeriodSeconds: 60,
      volumes: mode === 'alone' ? [] : installs ? [INSTALL_VOLUME, SOCKET_VOLUME] : [SOCKET_VOLUME],
      initContainers: [...(installs ? [INSTALL] : []), ...(mode === 'sidecar' ? [sidecar] : [])],
      containers: [{ name: 'manager', securityContext: RESTRICTED, ...manager[mode] }],
    },
  };
}
