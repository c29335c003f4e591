import { type CheckConfig, resolveCheckConfig } from '../config/commands.ts';
import { CHECK_OPTIONS } from '../config/options.ts';
import type { CommandDef } from './command.ts';

export const checkCommand: CommandDef<CheckConfig> = {
  name: 'check',
  summary: "find the mistakes in an operator's manifests that would break the drain or the guard",
  usage:
    'drainguard check [-o json] [-n NAMESPACE] [-f PATH]... [PATH...] ' +
    '(a file, a directory, or - for standard input) | --deployment NAMESPACE/NAME',
  description: `Reads rendered manifests (helm template REL CHART -n NAMESPACE | drainguard check -n NAMESPACE -,
or kubectl kustomize ... | drainguard check -f -) and reports each mistake with its fix: a grace
period too short for the drain, the drain socket not on a volume both containers mount,
containers running as different users, a guard list drainguard's RBAC does not cover, that
names objects the manifests lack, or that leaves out a binding of the operator's
ServiceAccount (in any namespace), a role of the manifests it binds or a ClusterRole
aggregated into a guarded one; a wrap whose COMMAND is not the image's, a pod without a token
for drainguard, a lifecycle hook with two actions, a missing preStop hook in sidecar mode, a
wrap-mode memory limit with no room for drainguard, a guarded ServiceAccount whose tokens
expire before the drain ends, an operator Deployment without drainguard beside one with it, an
architecture drainguard is not built for. Objects that name no namespace are read in the one
-n gives (as helm install -n creates them; default without it), an object that names another
namespace stays there, cluster-scoped kinds stay cluster-scoped. RBAC is evaluated as the API
server does: ServiceAccount, User (system:serviceaccount:NS:NAME) and Group
(system:serviceaccounts, system:serviceaccounts:NS, system:authenticated) subjects, and
aggregated ClusterRoles with the rules of the ClusterRoles they select. With --deployment,
the Deployment and the RBAC it relies on are read from the Kubernetes API (kubeconfig or
in-cluster, as kubectl) instead. Exit 0 when there is nothing to report, 1 with findings, 2
for input it cannot read or that holds no object (a render that failed in the pipe).`,
  extra: CHECK_OPTIONS,
  resolve: resolveCheckConfig,
  // The YAML parser and the analysis are loaded only when used.
  run: async (config, io) => (await import('../check/run.ts')).runCheck(config, io),
};
