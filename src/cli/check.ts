import { type CheckConfig, resolveCheckConfig } from '../config/commands.ts';
import { CHECK_OPTIONS } from '../config/options.ts';
import type { CommandDef } from './command.ts';

export const checkCommand: CommandDef<CheckConfig> = {
  name: 'check',
  summary: "find the mistakes in an operator's manifests that would break the drain or the guard",
  usage: 'drainguard check [-o json] [-n NAMESPACE] [-f PATH]... [PATH...] (a file, a directory, or - for standard input) | --deployment NAMESPACE/NAME',
  description: `Reads rendered manifests (helm template ... | drainguard check -n NAMESPACE -, or
kubectl kustomize ... | drainguard check -f -) and reports each mistake with its fix: a grace
period too short for the drain, the drain socket not on a volume both containers mount,
containers running as different users, a guard list drainguard's RBAC does not cover or that
names objects the manifests lack, a missing preStop hook in sidecar mode, a guarded
ServiceAccount whose tokens expire before the drain ends, an architecture drainguard is not
built for. Objects that name no namespace are read in the one -n gives (as kubectl apply -n
puts them; default without it), cluster-scoped kinds stay cluster-scoped, and an object that
names another namespace than -n is refused, as kubectl refuses it. RBAC is evaluated as the
API server does: ServiceAccount, User (system:serviceaccount:NS:NAME) and Group
(system:serviceaccounts, system:serviceaccounts:NS, system:authenticated) subjects, and
aggregated ClusterRoles with the rules of the ClusterRoles they select. With --deployment,
the Deployment and the RBAC it relies on are read from the Kubernetes API (kubeconfig or
in-cluster, as kubectl) instead. Exit 0 when there is nothing to report, 1 with findings, 2
for input it cannot read or that kubectl would refuse.`,
  extra: CHECK_OPTIONS,
  resolve: resolveCheckConfig,
  // The YAML parser and the analysis are loaded only when used.
  run: async (config, io) => (await import('../check/run.ts')).runCheck(config, io),
};
