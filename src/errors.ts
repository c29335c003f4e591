// Every error a user of drainguard can see, under a stable code: the one table
// docs/errors.md is generated from (npm run generate). A code never changes
// meaning once released; the message text after it may improve.
//
// An error keeps its own message; where it is shown (the command's last line,
// a log line, the protocol's `error` message) the code comes first:
//   drainguard run: DG_CONFIG_DURATION: DRAINGUARD_STOP_TIMEOUT: expected ...
//
// Every module may import this one, so it imports none: a fix points at what
// the message or the README lists rather than copying it here.

export interface ErrorSpec {
  /** The exit status when it ends a command; undefined for errors that end no command (the protocol's). */
  readonly exit?: 1 | 2;
  readonly meaning: string;
  readonly fix: string;
}

export const ERRORS = {
  // Configuration: found before anything was started (exit 2).
  DG_CONFIG_UNKNOWN_COMMAND: {
    exit: 2,
    meaning: 'drainguard was given a command it does not have',
    fix: "see 'drainguard --help' for the list",
  },
  DG_CONFIG_UNKNOWN_OPTION: {
    exit: 2,
    meaning: 'a flag the command does not have',
    fix: "see 'drainguard COMMAND --help' for its options",
  },
  DG_CONFIG_OPTION_USAGE: {
    exit: 2,
    meaning: 'a flag given twice, a value given to a switch, or a flag without its value',
    fix: 'give each flag once, with a value where its help shows one',
  },
  DG_CONFIG_ARGUMENTS: {
    exit: 2,
    meaning:
      'the arguments after the options are missing or too many (the COMMAND of run, the DIR of install, ' +
      'the RESOURCEs of predelete, the manifests of check, the objects of release)',
    fix: "name them as the command's usage line shows",
  },
  DG_CONFIG_CONFIRM: {
    exit: 2,
    meaning: 'release --all was given without --yes',
    fix: 'add --yes: --all also takes the guard from pods that still live',
  },
  DG_CONFIG_DURATION: {
    exit: 2,
    meaning: 'a duration option is not a duration of at most 24h',
    fix: 'write 500ms, 30s, 2m, 1m30s or a number of seconds',
  },
  DG_CONFIG_SIGNAL: {
    exit: 2,
    meaning:
      'the stop signal is not a signal name or number, or one that cannot stop a process; ' +
      'or a drain signal is none, or one drainguard cannot catch',
    fix: 'name a signal such as SIGTERM, TERM or 15 (not SIGSTOP or SIGCHLD; a drain signal not SIGKILL, SIGSEGV or SIGPIPE either)',
  },
  DG_CONFIG_CHOICE: {
    exit: 2,
    meaning: 'an option that takes one of a few words got another',
    fix: 'use one of the words the message lists',
  },
  DG_CONFIG_VALUE: {
    exit: 2,
    meaning: 'an option value is not of the form it needs (a namespace, container names, a label selector, a Deployment, a path)',
    fix: 'give a value of the form the message names',
  },
  DG_CONFIG_TIMEOUTS: {
    exit: 2,
    meaning: 'the drain timeout and the stop timeout do not fit in the grace period',
    fix: 'shorten the drain or stop timeout, or raise terminationGracePeriodSeconds with DRAINGUARD_GRACE_PERIOD',
  },
  DG_CONFIG_GUARD_LIST: {
    exit: 2,
    meaning: 'DRAINGUARD_GUARD (--guard) names an object in a form drainguard does not know',
    fix: 'use the forms the message lists (those of DRAINGUARD_GUARD in the README), comma-separated',
  },
  DG_CONFIG_HOLD_LIST: {
    exit: 2,
    meaning: 'DRAINGUARD_HOLD (--hold) names a kind not as PLURAL.GROUP, the name of its CustomResourceDefinition',
    fix:
      'use the CRD names, comma-separated, such as installations.operator.tigera.io,apiservers.operator.tigera.io ' +
      '(kubectl get crd lists them)',
  },
  DG_CONFIG_POD_IDENTITY: {
    exit: 2,
    meaning: 'DRAINGUARD_POD_NAME, _NAMESPACE or _UID is not a valid pod name, namespace or UID',
    fix: 'set them from the downward API (fieldRef metadata.name, metadata.namespace, metadata.uid)',
  },
  DG_CONFIG_POD_MISSING: {
    exit: 2,
    meaning: 'the guard, the hold or DRAINGUARD_OPERATOR_CONTAINER needs to know its pod, and DRAINGUARD_POD_* are not set',
    fix: 'set DRAINGUARD_POD_NAME, DRAINGUARD_POD_NAMESPACE and DRAINGUARD_POD_UID from the downward API',
  },
  DG_CONFIG_PRESTOP_TOKEN: {
    exit: 2,
    meaning: 'the preStop token is given twice, its file cannot be read, or it is shorter than 16 characters or holds spaces',
    fix: 'give DRAINGUARD_PRESTOP_TOKEN or DRAINGUARD_PRESTOP_TOKEN_FILE, a random string of 16 characters or more',
  },
  DG_CONFIG_NO_API: {
    exit: 2,
    meaning: 'the command needs the Kubernetes API and no way to reach it is configured, or its configuration cannot be read',
    fix: 'set KUBECONFIG, create ~/.kube/config, or run in a pod with a service account token',
  },
  DG_SOCKET_PATH: {
    exit: 2,
    meaning:
      'the drain socket path is too long, its directory is missing or not a directory, or a file that is not a socket is in its place',
    fix: 'choose a path of at most 107 bytes in a directory that exists (an emptyDir volume in a pod)',
  },
  DG_SOCKET_IN_USE: {
    exit: 2,
    meaning: 'another process already serves the drain socket path',
    fix: 'stop the other drainguard or choose another path',
  },
  DG_SOCKET_LISTEN: {
    exit: 2,
    meaning: 'drainguard cannot listen on the drain socket path, or cannot make the private directory for the default one',
    fix: 'make the directory writable for this user, or choose another path',
  },
  DG_HTTP_ADDR: { exit: 2, meaning: 'DRAINGUARD_HTTP_ADDR is not HOST:PORT', fix: 'write 127.0.0.1:9404, :9404 or [::1]:9404' },
  DG_HTTP_LISTEN: {
    exit: 2,
    meaning: 'drainguard cannot listen on DRAINGUARD_HTTP_ADDR (in use, no such local address, or no permission)',
    fix: 'choose a free port on an address of this host',
  },
  DG_CHILD_SPAWN: {
    exit: 2,
    meaning: 'the COMMAND of drainguard run cannot be started (not found, not executable)',
    fix: 'check the path and the executable bit of COMMAND in the container',
  },
  DG_PREDELETE_RESOURCE: {
    exit: 2,
    meaning: 'a RESOURCE of predelete is malformed, unknown to the API server, or ambiguous',
    fix: 'name it as kubectl does, TYPE[.GROUP][/NAME], with the group when two APIs share the type',
  },
  DG_CHECK_INPUT: {
    exit: 2,
    meaning:
      'drainguard check cannot read a manifest (missing file, not YAML, or a document that is not a Kubernetes object), ' +
      'or the input holds no object at all (a helm template or kubectl kustomize that failed in the pipe)',
    fix:
      'pass rendered manifests (helm template, kubectl kustomize) or - for standard input; ' +
      'run the render alone to see why it printed nothing',
  },
  DG_ADOPT_INPUT: {
    exit: 2,
    meaning: 'drainguard adopt was given no chart directory (no Chart.yaml in it), or a helm it cannot run',
    fix: 'name the directory of the chart (the one holding Chart.yaml); install Helm 3.8 or later, or give it with --helm PATH',
  },
  DG_ADOPT_RENDER: {
    exit: 1,
    meaning: 'helm could not render the chart with the values given, before or after drainguard was added (its message follows)',
    fix: "give adopt the values the chart installs with (-f, --set); for a render-time message of drainguard's, see docs/helm.md",
  },
  DG_ADOPT_REFUSED: {
    exit: 1,
    meaning: 'the chart has a shape drainguard adopt cannot decide for (the message names it): the chart is left as it was',
    fix: 'do the step of docs/helm.md the message names by hand, or give adopt what it lacks (--command, --mode)',
  },
  DG_ADOPT_CHECK: {
    exit: 1,
    meaning: 'drainguard check found mistakes in the render with drainguard added: the chart is left as it was',
    fix: 'fix what each finding names (or tell adopt so: --command, --mode), then run adopt again',
  },
  DG_KUBEBUILDER_REQUEST: {
    exit: 2,
    meaning:
      'drainguard kubebuilder-plugin read no kubebuilder PluginRequest on its standard input (not JSON, or no command), ' +
      'or was given a flag of its own it does not have (--mode)',
    fix: 'let kubebuilder run it (kubebuilder edit --plugins=drainguard.dev/v1-alpha, after drainguard kubebuilder-plugin install)',
  },
  DG_KUBEBUILDER_REFUSED: {
    exit: 1,
    meaning: 'the kubebuilder plugin found the project in a shape it cannot add drainguard to (the message names it): nothing was written',
    fix: 'do the step of docs/deploy.md or docs/helm.md the message names by hand, then run the plugin again',
  },
  DG_KUBEBUILDER_INSTALL: {
    exit: 2,
    meaning: 'drainguard kubebuilder-plugin install could not write the plugin under the plugins path (the message names the path)',
    fix: 'give a directory you may write (drainguard kubebuilder-plugin install DIR, then EXTERNAL_PLUGINS_PATH=DIR for kubebuilder)',
  },
  DG_INSTALL_DIR: {
    exit: 2,
    meaning: 'the DIR of drainguard install exists and is not a directory',
    fix: 'name a directory, or a path where one can be made',
  },

  // Failures after the start (exit 1).
  DG_KUBE_API: {
    exit: 1,
    meaning: 'the Kubernetes API server answered a call with an error status (forbidden, not found, conflict, ...)',
    fix: "read the server's message after the code; 403 means drainguard's RBAC lacks the verb on that resource",
  },
  DG_KUBE_UNREACHABLE: {
    exit: 1,
    meaning: 'the Kubernetes API server did not answer (connection refused or reset, DNS, TLS, or the call timed out)',
    fix: 'check the server address in the kubeconfig and the network between the pod and the API server',
  },
  DG_KUBE_CREDENTIALS: {
    exit: 1,
    meaning:
      'drainguard could not get credentials for the Kubernetes API: ' +
      "the kubeconfig's exec plugin failed or printed no ExecCredential, or a token file cannot be read",
    fix:
      'run the exec plugin command yourself (kubectl runs the same); ' +
      'check the token file path in the kubeconfig or the service account mount',
  },
  DG_KUBE_CONTAINER: {
    exit: 1,
    meaning: 'DRAINGUARD_OPERATOR_CONTAINER names a container this pod does not have',
    fix: "name the operator's containers as the pod spec does",
  },
  DG_IDLE_METRICS: {
    exit: 1,
    meaning:
      "with DRAINGUARD_IDLE_METRICS, a scrape of the operator's metrics failed " +
      '(refused, no answer within 1s, not 200, or a sample drainguard cannot read); warned at once, once per distinct error, ' +
      'and the drain waits on for an idle scrape or the deadline; drain ended tells how many failed and the last error',
    fix:
      "point DRAINGUARD_IDLE_METRICS at the operator's controller-runtime metrics endpoint (its metrics bind address), " +
      "reachable from drainguard; for https, let the pod's ServiceAccount get /metrics",
  },
  DG_GUARD_HOLD: {
    exit: 1,
    meaning: 'the guard could not put its finalizer on some guarded objects (logged while drainguard keeps trying)',
    fix: 'check that the objects exist and that drainguard may patch them',
  },
  DG_PREDELETE_NOT_READY: {
    exit: 1,
    meaning: 'predelete --require-ready found no ready operator pod, so it deleted nothing',
    fix: 'start the operator (or fix the selector) and run the hook again',
  },
  DG_PREDELETE_NAMESPACE: {
    exit: 1,
    meaning: 'a namespaced object was named together with --all-namespaces',
    fix: 'give -n NAMESPACE for named objects',
  },
  DG_PREDELETE_DISCOVERY: {
    exit: 1,
    meaning:
      'predelete found no RESOURCE of that type in the API groups it could read, ' +
      'and the discovery of a group that may serve it failed (an aggregated API that is down)',
    fix: 'see that API served (kubectl get apiservices names the unavailable ones) and run the hook again',
  },
  DG_PREDELETE_TIMEOUT: {
    exit: 1,
    meaning: 'predelete --timeout passed before every resource was gone; the message names what is left and its finalizers',
    fix: 'check that the operator removing those finalizers runs, or raise --timeout',
  },
  DG_PRESTOP_UNREACHABLE: {
    exit: 1,
    meaning: 'drainguard prestop cannot connect to the sidecar, or lost the connection before the drain ended',
    fix: "check that the sidecar runs and that both containers mount the socket's volume at the same path",
  },
  DG_PRESTOP_REFUSED: {
    exit: 1,
    meaning: 'the supervisor refused the drain request (an old drainguard, or drainguard run, which drains on SIGTERM)',
    fix: 'use prestop with drainguard sidecar of the same version',
  },
  DG_PRESTOP_PROTOCOL: {
    exit: 1,
    meaning: 'what answered on the socket is not drainguard',
    fix: "point --socket at the sidecar's drain socket",
  },
  DG_PRESTOP_NO_ANSWER: {
    exit: 1,
    meaning: 'the sidecar accepted the connection but did not answer in time',
    fix: 'look at the sidecar log; it may be stuck or overloaded',
  },
  DG_INSTALL_SOURCE: {
    exit: 1,
    meaning:
      'drainguard install cannot gather what it copies (not the built executable, no launcher for this architecture, ' +
      'a library the loader cannot find)',
    fix: 'run install from the drainguard executable or image, on x86-64 or arm64 with glibc 2.33 or later',
  },
  DG_INSTALL_COPY: {
    exit: 1,
    meaning: 'the copy drainguard install made does not start',
    fix: 'the message shows why; check the file system of DIR (noexec mounts)',
  },
  DG_INSTALL_WRITE: {
    exit: 1,
    meaning: 'drainguard install cannot write a file into DIR',
    fix: 'make DIR writable for this user (an emptyDir volume)',
  },

  // The drain protocol: sent as the `error` message, then the connection is closed (docs/protocol.md).
  DG_PROTOCOL_LINE: {
    meaning: 'a line longer than 64 KiB, or not UTF-8',
    fix: 'send one JSON object of at most 64 KiB per line, in UTF-8',
  },
  DG_PROTOCOL_JSON: { meaning: 'a line that is not JSON', fix: 'send one JSON object per line' },
  DG_PROTOCOL_MESSAGE: {
    meaning: 'a message that is not a JSON object or lacks a field of the right type',
    fix: 'see the message types in the spec',
  },
  DG_PROTOCOL_HELLO_FIRST: { meaning: 'a message before hello', fix: 'send hello first' },
  DG_PROTOCOL_HELLO_TIMEOUT: {
    meaning: 'a connection that said neither hello nor asked for a drain within 10 s of connecting',
    fix: 'send hello as soon as the connection is made',
  },
  DG_PROTOCOL_BUSY: {
    meaning: "a connection past the drain socket's caps: 1024 connections, 128 of them yet to say hello",
    fix: 'connect once per process and keep the connection; close connections that are not used',
  },
  DG_PROTOCOL_VERSION: {
    meaning: 'a protocol version this drainguard does not speak',
    fix: 'use protocol 1, or a client of the same release',
  },
  DG_PROTOCOL_DRAIN_REFUSED: {
    meaning: 'a drain request to drainguard run, which drains on SIGTERM',
    fix: 'use prestop with drainguard sidecar',
  },
} as const satisfies Record<string, ErrorSpec>;

export type ErrorCode = keyof typeof ERRORS;
type CodeOf<E> = { [C in ErrorCode]: (typeof ERRORS)[C] extends { exit: E } ? C : never }[ErrorCode];
/** Codes of errors found before the start: exit 2. */
export type UsageErrorCode = CodeOf<2>;
export type FailureCode = CodeOf<1>;
export type ProtocolErrorCode = Exclude<ErrorCode, UsageErrorCode | FailureCode>;

/** An error with a code from the table; `cause` is kept as given. */
export class DrainguardError extends Error {
  override name = 'DrainguardError';
  readonly code: ErrorCode;
  constructor(code: ErrorCode, message: string, options?: ErrorOptions) {
    super(message, options);
    this.code = code;
  }
}

/** A usage or configuration error: drainguard exits 2 before anything is started. */
export class ConfigError extends DrainguardError {
  override name = 'ConfigError';
  declare readonly code: UsageErrorCode;
  constructor(code: UsageErrorCode, message: string, options?: ErrorOptions) {
    super(code, message, options);
  }
}

export const isCoded = (err: unknown): err is Error & { code: ErrorCode } => {
  const code = (err as { code?: unknown } | undefined)?.code;
  return err instanceof Error && typeof code === 'string' && Object.hasOwn(ERRORS, code);
};

/** The exit status of an error that ends a command: the table's, 1 for any other. */
export function exitStatus(err: unknown): 1 | 2 {
  return (isCoded(err) && (ERRORS[err.code] as ErrorSpec).exit) || 1;
}

/** The text a user sees: the code, then the message. */
export function describe(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  return isCoded(err) ? `${err.code}: ${message}` : message;
}
