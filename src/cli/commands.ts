// Every `drainguard COMMAND` as help shows it, in help's order, and where its
// code is. A command's module is loaded when it runs: run's and sidecar's are
// in the main script, which every start compiles; the others are not
// (sidecar/build/lazy.ts makes every dynamic import a lazily loaded asset).

import { ADOPT_OPTIONS, CHECK_OPTIONS, PREDELETE_OPTIONS, RELEASE_OPTIONS, STATUS_OPTIONS } from '../config/options.ts';
import type { CommandDef } from './command.ts';
import * as run from './run.ts';
import * as sidecar from './sidecar.ts';

export const COMMANDS: readonly CommandDef[] = [
  {
    name: 'run',
    summary: 'start COMMAND as a child and supervise it (local wrapper, or the container entrypoint)',
    usage: 'drainguard run [OPTIONS] -- COMMAND [ARGS...]',
    description: `Starts COMMAND with DRAINGUARD_SOCKET in its environment and passes signals on to it.
On the first SIGTERM or SIGINT it tells connected clients to drain, and passes the stop
signal on once they all said drained, the operator exited, or the drain timeout passed;
a second SIGTERM or SIGINT passes it on at once. SIGKILL follows after the stop timeout.`,
    stopAtPositional: true,
    load: async () => run,
  },
  {
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
    load: async () => sidecar,
  },
  {
    name: 'prestop',
    summary: 'for a preStop exec hook: ask the sidecar to drain, block until drained or the deadline',
    usage: 'drainguard prestop [OPTIONS]',
    description: `Connects to the drainguard sidecar's socket, asks it to drain, and waits until every
operator client said drained (or disconnected), or the drain deadline passed; then exits 0
and the kubelet sends SIGTERM to the operator. It never waits past the deadline the sidecar
announces (or --drain-timeout, when shorter). Exits 1 with a message saying what to check
when the sidecar cannot be reached, refuses, or does not answer within 5s.`,
    load: () => import('./prestop.ts'),
  },
  {
    name: 'install',
    summary: 'copy drainguard and what it needs to start into DIR (for an init container)',
    usage: 'drainguard install [OPTIONS] DIR',
    description: `Writes DIR/drainguard, a static launcher, and DIR/lib/: the executable, glibc's dynamic
loader and the shared libraries it needs. DIR/drainguard then runs in any x86-64 Linux
image, also one with no libc and no shell (distroless/static, scratch), for example as
DIR/drainguard run -- /manager or DIR/drainguard prestop. Files are replaced one by one
and the launcher is written last. DIR is created when missing.`,
    load: () => import('./install.ts'),
  },
  {
    name: 'predelete',
    summary: 'delete custom resources and wait until they are gone (a Helm pre-delete hook Job)',
    usage: 'drainguard predelete [OPTIONS] RESOURCE...',
    description: `Deletes the named resources while the operator still runs, and waits until its
finalizers have let every one go. RESOURCE names them as kubectl does: TYPE[.GROUP]/NAME for
one object, TYPE[.GROUP] for all of a type (installations.operator.tigera.io/default,
apiservers.operator.tigera.io). Exits 0 once all are gone, 1 when --timeout passes first
(naming what is left and which finalizers hold it), 2 for a usage error such as a type the
API server does not know.`,
    extra: PREDELETE_OPTIONS,
    load: () => import('./predelete.ts'),
  },
  {
    name: 'release',
    summary: 'remove guard finalizers whose holder is gone (recovery, post-delete hook)',
    usage: 'drainguard release [--guard LIST | -f FILE] [--all-objects] [--all --yes] [--wait DURATION] [--delete LIST]',
    description: `Removes the drainguard.dev/holder-* finalizers of stale holders (holder Lease gone,
expired, or not owned by its Pod) from the objects in --guard (DRAINGUARD_GUARD), or from every
object that carries one with --all-objects; with --hold (DRAINGUARD_HOLD), also from the
Deployments of the namespace that carry one (the hold's). Holders are judged by the Leases of
--pod-namespace (the guarding pods' namespace; default the kubeconfig's, else default). Live
holders keep theirs unless --all --yes is given. Only finalizers are written, and with --delete,
once no live holder is left, the objects it names are deleted (drainguard's own RBAC and
admission policy, which the uninstall keeps until then). With -f FILE (- for standard
input), the lists come from the manifests that were applied: kubectl kustomize DIR |
drainguard release --wait 2m -f -. Exit status 0 when every stale
finalizer was removed (and every --delete object deleted), 1 when some could not be (or, with
--wait, when live holders remained at its end).`,
    extra: RELEASE_OPTIONS,
    load: () => import('./release.ts'),
  },
  {
    name: 'status',
    summary: 'print the state of the guard and the hold: guarded objects, holders, staleness, what the hold waits for',
    usage: 'drainguard status [--guard LIST] [--hold KINDS] [--all-objects] [-o json]',
    description: `Prints the objects in --guard (DRAINGUARD_GUARD) and, with --all-objects or when no
list is given, every object that carries a drainguard.dev/holder- finalizer: whether it exists
or is being deleted, and its holders, live or stale (holder Lease gone, expired or not owned by
its Pod), judged by the Leases of --pod-namespace (default the kubeconfig's). Then the holder
Leases themselves. With --hold (DRAINGUARD_HOLD), also the Deployments of the namespace
that carry a holder finalizer (the hold), and what a hold waits for: the objects of those kinds
that are being deleted and still carry a finalizer. Reads only.`,
    extra: STATUS_OPTIONS,
    load: () => import('./status.ts'),
  },
  {
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
    load: () => import('./check.ts'),
  },
  {
    name: 'adopt',
    summary: "add drainguard to an operator's Helm chart in place, or write the kustomize overlay of its manifests; then check",
    usage:
      'drainguard adopt [-n NAMESPACE] [-f FILE]... [--set KEY=VALUE]... [--mode MODE] [--command PATH] [--dry-run] CHART\n' +
      '       drainguard adopt [-n NAMESPACE] [--mode MODE] [--command PATH] [--out DIR] [--components DIR] [--dry-run] FILE|DIR',
    description: `Does docs/helm.md's steps to CHART (a directory with Chart.yaml): renders it with the real helm
template (-f, --set as the chart installs), finds each operator (a Deployment, StatefulSet or DaemonSet
whose ServiceAccount the chart binds to a role), and writes the library chart's dependency into
Chart.yaml, renames each operator's template to a partial, adds templates/drainguard.yaml, the
drainguard settings in values.yaml (mode, template, the RBAC templates to guard, a command
given with --command), the schema property and the notes. The edits are made in a copy,
rendered again and checked as drainguard check --plain does; only then are they written into
CHART, and printed as a summary of what changed and what did not. A shape it cannot decide for
(a container without command in wrap mode, a workload of another kind, two in one file) is
refused naming the step of docs/helm.md to do by hand, and CHART is left as it was.
On a manifest FILE (what kubectl apply -f takes) or a kustomize DIR (kustomization.yaml), it
writes docs/deploy.md's overlay into drainguard/ beside it (--out DIR): kustomization.yaml with
the mode's component, guard-more for the ServiceAccount's other bindings and roles, and the patch
wrap mode's memory needs; drainguard.yaml with the names; a FILE is copied in (kustomize reads no
file above the overlay). The overlay is rendered by the real kubectl kustomize and checked against
the input's render before anything is written; a StatefulSet, a second Deployment, a container not
named manager are refused with the step of docs/deploy.md. Run twice, the second run changes
nothing. Exit 0 when the result has drainguard and check finds nothing, 1 when refused or check
found something, 2 for a usage error (no input, no helm or kubectl).`,
    extra: ADOPT_OPTIONS,
    load: () => import('./adopt.ts'),
  },
  {
    name: 'kubebuilder-plugin',
    summary: "kubebuilder's external plugin drainguard.dev/v1-alpha: adds drainguard to a kubebuilder project",
    usage: 'drainguard kubebuilder-plugin [install [DIR]]',
    description: `With no argument, answers the one request kubebuilder v4 writes on standard input (the external
plugin protocol, v1alpha1): for init and edit, config/drainguard (an overlay of config/default with
drainguard's components for the project's layout, docs/deploy.md) and, when the project has the chart
of helm/v2-alpha, drainguard's library chart in it (docs/helm.md); create api and create webhook change
nothing. kubebuilder passes --mode (wrap, native-sidecar or sidecar; default wrap). A project it cannot
add drainguard to is refused with the step to do by hand, and nothing is written; run again, it
changes nothing. With install, writes the plugin where kubebuilder finds it: DIR, else
$EXTERNAL_PLUGINS_PATH, else $XDG_CONFIG_HOME/kubebuilder/plugins, else ~/.config/kubebuilder/plugins,
as drainguard.dev/v1-alpha/drainguard.dev, a script that runs this drainguard. Then:
kubebuilder init --plugins=go/v4,drainguard.dev/v1-alpha, or kubebuilder edit --plugins=drainguard.dev/v1-alpha.
Exit 0 once it answered (a refusal is an answer kubebuilder shows), 2 when standard input holds no request.`,
    load: () => import('./kubebuilder-plugin.ts'),
  },
];
