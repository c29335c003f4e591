import { resolveSupervisorConfig, type SupervisorConfig } from '../config/supervisor.ts';
import type { CommandDef } from './command.ts';
import { superviseSidecar } from './supervise.ts';

export const sidecarCommand: CommandDef<SupervisorConfig> = {
  name: 'sidecar',
  summary: 'run beside the operator container in the same pod (native or plain sidecar)',
  usage: 'drainguard sidecar [OPTIONS]',
  description: `Serves the drain socket on a volume shared with the operator container, holds the
guard for the pod, and serves /healthz, /readyz and /metrics on DRAINGUARD_HTTP_ADDR.
The operator container's preStop hook (drainguard prestop, or an httpGet on /prestop
with the token) starts the drain and waits until the operator said drained or the drain
timeout passed; the kubelet's SIGTERM to the operator follows. On its own SIGTERM the
sidecar waits until the operator has disconnected (at once as a native sidecar, which
is stopped after the operator), then releases the guard and exits 0. A second SIGTERM or
SIGINT cuts the drain and the wait short.`,
  resolve: resolveSupervisorConfig,
  run: superviseSidecar,
};
