// How drainguard and the operator find each other in the pod: the drain socket
// on a volume (wrap mode: on a read-only root filesystem too), and in the
// sidecar modes one socket both containers mount, one user both run as (the
// socket is mode 0600), and the operator's preStop hook that asks for the drain.

import type { Found } from './finding.ts';
import { optionDefault } from './budget.ts';
import { type Placement, type PodSpec, envOf, groupOf, mountFor, settingOf, userOf } from './pod.ts';

/** The socket path the sidecars default to: where the components and the chart mount the shared volume. */
const SHARED_SOCKET = optionDefault('socket', 'sidecar');
const PRESTOP = 'lifecycle: {preStop: {exec: {command: [/drainguard/drainguard, prestop]}}}';

const TEXT = {
  'socket-not-on-volume': (where: string, socket: string | undefined) => ({
    message:
      `the root filesystem of ${where} is read-only and the drain socket ${socket ?? '(default, under /tmp)'} is not on a volume: ` +
      'drainguard cannot listen',
    fix: `mount an emptyDir (medium: Memory) at /run/drainguard in ${where} and set DRAINGUARD_SOCKET=${SHARED_SOCKET}`,
  }),
  'operator-container-missing': () => ({
    message: 'drainguard runs as a sidecar, but the pod has no other container to drain',
    fix: 'add the operator container, or run drainguard in wrap mode',
  }),
  'socket-unset': (operator: string, socket: string) => ({
    message: `container ${operator} has no DRAINGUARD_SOCKET: the operator's client cannot find the drain socket`,
    fix: `set DRAINGUARD_SOCKET=${socket} in container ${operator}`,
  }),
  'socket-not-shared': (where: string, socket: string, operator: string, theirs: string, supervisor: string) => ({
    message: `the drain socket (${socket} in ${where}, ${theirs} in container ${operator}) is not on one volume both containers mount`,
    fix:
      `mount one emptyDir (medium: Memory) at ${dirname(socket)} in both containers ${supervisor} and ${operator}, ` +
      `and set DRAINGUARD_SOCKET=${socket} in ${operator}`,
  }),
  'different-users': (where: string, a: number, operator: string, b: number, group: number) => ({
    message:
      `${where} runs as user ${a} and container ${operator} as user ${b}: ` + 'the drain socket is mode 0600, the operator cannot connect',
    fix:
      `run drainguard as the operator's user: the Helm library chart: drainguard.runAsUser: ${b} and drainguard.runAsGroup: ${group}; ` +
      `the kustomize components: a patch of the Deployment setting securityContext: {runAsUser: ${b}, runAsGroup: ${group}} ` +
      `in ${where} (docs/deploy.md, step 3)`,
  }),
  'prestop-missing': (operator: string, own: readonly string[]) => ({
    message:
      own.length > 0
        ? `the preStop hook of container ${operator} (${own.join(', ')}) does not run drainguard prestop: ` +
          "the chart's own hook took the place of drainguard's, and the kubelet's SIGTERM reaches the operator before any drain"
        : `container ${operator} has no preStop hook running drainguard prestop: ` +
          "the kubelet's SIGTERM reaches the operator before any drain",
    fix:
      `make the preStop hook of container ${operator} drainguard's alone: ` +
      `${PRESTOP}, with the install volume mounted at /drainguard ` +
      "(it waits for the drain, which a pause of the chart's own only guesses at)",
  }),
};

export function checkPairing(pod: PodSpec, { mode, supervisor, operator }: Placement): Found[] {
  const out: Found[] = [];
  const error = (code: string, text: { message: string; fix: string }) => out.push({ code, severity: 'error', ...text });
  const where = `container ${supervisor.name}`;
  if (mode === 'wrap') {
    const socket = settingOf(supervisor, 'socket');
    if (supervisor.securityContext?.readOnlyRootFilesystem && (socket === undefined || !mountFor(supervisor, dirname(socket))))
      error('socket-not-on-volume', TEXT['socket-not-on-volume'](where, socket));
    return out;
  }
  if (!operator) {
    error('operator-container-missing', TEXT['operator-container-missing']());
    return out;
  }
  const socket = settingOf(supervisor, 'socket') ?? SHARED_SOCKET;
  const theirs = envOf(operator, {}).DRAINGUARD_SOCKET;
  const here = mountFor(supervisor, dirname(socket));
  const there = theirs === undefined ? undefined : mountFor(operator, dirname(theirs));
  if (theirs === undefined) {
    error('socket-not-shared', TEXT['socket-unset'](operator.name, socket));
  } else if (!here || !there || here.name !== there.name || relative(socket, here.mountPath) !== relative(theirs, there.mountPath)) {
    error('socket-not-shared', TEXT['socket-not-shared'](where, socket, operator.name, theirs, supervisor.name));
  }
  const [a, b] = [userOf(supervisor, pod), userOf(operator, pod)];
  if (a !== undefined && b !== undefined && a !== b)
    error('different-users', TEXT['different-users'](where, a, operator.name, b, groupOf(operator, pod) ?? b));
  const preStop = operator.lifecycle?.preStop;
  const execs = preStop?.exec?.command ?? [];
  const viaExec = /(^|\/)drainguard$/.test(execs[0] ?? '') && execs.includes('prestop');
  const viaHttp = preStop?.httpGet?.path === '/prestop';
  if (!viaExec && !viaHttp) {
    const own = preStop ? Object.keys(preStop).filter((k) => (preStop as Record<string, unknown>)[k] != null) : [];
    error('prestop-missing', TEXT['prestop-missing'](operator.name, own));
  }
  return out;
}

const dirname = (path: string): string => path.slice(0, Math.max(1, path.lastIndexOf('/')));
const relative = (path: string, mount: string): string => path.slice(mount.replace(/\/$/, '').length);
