import { type CheckConfig, resolveCheckConfig } from '../config/commands.ts';
import { CHECK_OPTIONS } from '../config/options.ts';
import type { CommandDef } from './command.ts';

export const checkCommand: CommandDef<CheckConfig> = {
  name: 'check',
  summary: "find the mistakes in an operator's manifests that would break the drain or the guard",
  usage: 'drainguard check [-o json] PATH... (a file, a directory, or - for standard input) | --deployment NAMESPACE/NAME',
  description: `Reads rendered manifests (helm template ... | drainguard check -, or
kubectl kustomize ... | drainguard check -) and reports each mistake with its fix: a grace
period too short for the drain, the drain socket not on a volume both containers mount,
containers running as different users, a guard list drainguard's RBAC does not cover or that
names objects the manifests lack, a missing preStop hook in sidecar mode, a guarded
ServiceAccount whose tokens expire before the drain ends, an architecture drainguard is not
built for. With --deployment, the Deployment and the RBAC it relies on are read from the
Kubernetes API (kubeconfig or in-cluster, as kubectl) instead. Exit 0 when there is nothing
to report, 1 with findings, 2 for input it cannot read.`,
  extra: CHECK_OPTIONS,
  resolve: resolveCheckConfig,
  // The YAML parser and the analysis are loaded only when used.
  run: async (config, io) => (await import('../check/run.ts')).runCheck(config, io),
};
