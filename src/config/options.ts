// The one list of drainguard's options and their defaults. Flags, environment
// variables, `--help`, the README's table of variables and the types of the
// parsed values (OptionValues) all come from it.

import { MAX_DURATION_MS, formatDuration, parseDuration } from './duration.ts';
import { invalid } from './errors.ts';
import { GRACE_MARGIN_MS } from './grace-rule.ts';
import { GUARD_FORMS, POLICY_FORMS } from './guard-kinds.ts';
import { HOLD_FORM, type HoldKind, parseHoldList } from './hold-list.ts';
import { CATCHABLE, TERMINATING, canonicalSignal, parseSignal } from './signals.ts';

export type Command =
  'run' | 'sidecar' | 'prestop' | 'release' | 'predelete' | 'status' | 'install' | 'check' | 'adopt' | 'kubebuilder-plugin';

/**
 * What each option's parser returns, by key: the table below is the one source
 * of the names and types (the one cast from text to types is in load.ts).
 */
export type OptionValues = { [S in (typeof EVERY_OPTION)[number] as S['key']]: Shared<ReturnType<S['parse']>> };

/** A parsed list is read-only: every reader of the options gets the same one. */
type Shared<T> = T extends readonly (infer E)[] ? readonly E[] : T;

/** The keys whose table entry has one default for every command: they always have a value. */
export type DefaultedKey = KeyWithDefault<(typeof EVERY_OPTION)[number]>;
type KeyWithDefault<S> = S extends { readonly key: infer K; readonly default: infer D }
  ? D extends (command: Command) => unknown
    ? never
    : K
  : never;

/** DRAINGUARD_LEADER_LEASE: the operator's leader Lease found by its holder's identity, named, or left alone. */
export type LeaderLeaseSetting = 'auto' | 'off' | { readonly name: string };

export interface HostPort {
  readonly host: string;
  readonly port: number;
}

export interface OptionSpec {
  /** Field name in the parsed values (OptionValues is made of these). */
  readonly key: string;
  /** Long flag without dashes; the variable is DRAINGUARD_ + its upper snake case. */
  readonly flag: string;
  readonly short?: string;
  /** Placeholder shown in help; undefined for boolean switches. */
  readonly value?: string;
  readonly description: string;
  /** The default value (of the parsed type); a function when it depends on the command. */
  readonly default?: unknown;
  /** How help shows the default value; String(value) when not given. */
  readonly format?: (value: any) => string;
  /** What help says when there is no default value: the default is computed, or the option is off. */
  readonly defaultText?: string | ((command: Command) => string);
  readonly commands: readonly Command[];
  /** Parses the raw text; `source` names the flag or variable for the message. */
  readonly parse: (raw: string, source: string) => unknown;
  /** Not read from the environment (for example --all, which must be deliberate). */
  readonly flagOnly?: boolean;
  /** May be given more than once: its parser returns a list, and the lists are joined (kubectl's -f). */
  readonly repeatable?: boolean;
  /** An empty variable leaves it unset (how Kubernetes manifests unset a value); elsewhere the parser judges the empty text. */
  readonly emptyIsUnset?: boolean;
}

export const envName = (spec: OptionSpec): string => `DRAINGUARD_${spec.flag.toUpperCase().replaceAll('-', '_')}`;

/** The option's default for this command, or undefined when it has none (computed, or off). */
export function defaultValue(spec: OptionSpec, command: Command): unknown {
  return typeof spec.default === 'function' ? spec.default(command) : spec.default;
}

/** The default as help and the README show it: the value formatted, else the description. */
export function defaultShown(spec: OptionSpec, command: Command): string {
  const value = defaultValue(spec, command);
  if (value !== undefined) return (spec.format ?? String)(value);
  const text = typeof spec.defaultText === 'function' ? spec.defaultText(command) : spec.defaultText;
  if (text === undefined) throw new TypeError(`option --${spec.flag} has neither a default for ${command} nor a text for its absence`);
  return text;
}

const hostPortText = (a: HostPort): string => (a.host.includes(':') ? `[${a.host}]:${a.port}` : `${a.host}:${a.port}`);
const onOff = (v: boolean): string => (v ? 'on' : 'off');

const SUPERVISING: readonly Command[] = ['run', 'sidecar'];
const ALL: readonly Command[] = ['run', 'sidecar', 'prestop', 'release', 'predelete', 'status', 'install'];
const GUARD_USERS: readonly Command[] = ['run', 'sidecar', 'release', 'status'];

export function duration(raw: string, source: string): number {
  const ms = parseDuration(raw);
  if (ms === undefined) throw invalid('DG_CONFIG_DURATION', source, 'a duration such as 500ms, 30s, 2m or a number of seconds', raw);
  if (ms > MAX_DURATION_MS) throw invalid('DG_CONFIG_DURATION', source, 'a duration of at most 24h', raw);
  return ms;
}

function signal(raw: string, source: string): NodeJS.Signals {
  const sig = parseSignal(raw);
  if (!sig) throw invalid('DG_CONFIG_SIGNAL', source, 'a signal name or number such as SIGTERM, TERM or 15', raw);
  if (sig === 'SIGSTOP' || sig === 'SIGCHLD')
    throw invalid('DG_CONFIG_SIGNAL', source, 'a signal that stops a process (not SIGSTOP or SIGCHLD)', raw);
  return sig;
}

/** DRAINGUARD_DRAIN_SIGNALS: signals drainguard catches, by their conventional names, each once. */
function drainSignals(raw: string, source: string): NodeJS.Signals[] {
  const out: NodeJS.Signals[] = [];
  for (const word of raw
    .split(',')
    .map((w) => w.trim())
    .filter(Boolean)) {
    const known = parseSignal(word);
    if (!known) throw invalid('DG_CONFIG_SIGNAL', source, 'signal names or numbers separated by commas, such as SIGQUIT,SIGHUP', raw);
    const sig = canonicalSignal(known);
    const why = sig === 'SIGKILL' || sig === 'SIGSTOP' ? 'cannot be caught' : 'is not one drainguard catches';
    if (!CATCHABLE.includes(sig))
      throw invalid(
        'DG_CONFIG_SIGNAL',
        source,
        `signals drainguard can catch (${sig} ${why}): ` +
          'a container whose stop signal is such a one cannot be drained; give it another, such as SIGTERM',
        raw,
      );
    if (!out.includes(sig)) out.push(sig);
  }
  return out;
}

function oneOf<T extends string>(...choices: T[]) {
  return (raw: string, source: string): T => {
    const value = raw.trim().toLowerCase();
    if (!(choices as string[]).includes(value)) throw invalid('DG_CONFIG_CHOICE', source, `one of ${choices.join(', ')}`, raw);
    return value as T;
  };
}

/** A manifest path as kubectl apply -f takes it (repeatable: each one a list of one). */
function manifestPath(raw: string, source: string): string[] {
  if (raw === '') throw invalid('DG_CONFIG_VALUE', source, 'a file, a directory, or - for standard input', raw);
  return [raw];
}

function nonEmpty(raw: string, source: string): string {
  const value = raw.trim();
  if (value === '') throw invalid('DG_CONFIG_VALUE', source, 'a non-empty value', raw);
  return value;
}

// The pod's identity names what the guard writes: the finalizer drainguard.dev/holder-UID
// (a qualified name: at most 63 characters after the '/') and the Lease drainguard-UID.
const POD_NAME = /^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const NAMESPACE = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const POD_UID = /^[a-z0-9]([-a-z0-9]{0,54}[a-z0-9])?$/;

function podField(pattern: RegExp, what: string) {
  return (raw: string, source: string): string => {
    const value = raw.trim();
    if (!pattern.test(value)) throw invalid('DG_CONFIG_POD_IDENTITY', source, `${what}; set it from the downward API`, raw);
    return value;
  };
}

// A Lease's name is a DNS subdomain.
const LEASE_NAME = /^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

function leaderLease(raw: string, source: string): LeaderLeaseSetting {
  const value = raw.trim();
  if (value === 'auto' || value === 'off') return value;
  if (!LEASE_NAME.test(value))
    throw invalid(
      'DG_CONFIG_VALUE',
      source,
      "auto, off, or the name of the operator's leader Lease (a DNS subdomain such as 3f4a1c2b.example.com)",
      raw,
    );
  return { name: value };
}

function socketPath(raw: string, source: string): string {
  const value = raw.trim();
  if (value === '') throw invalid('DG_SOCKET_PATH', source, 'the path of a Unix socket, such as /run/drainguard/drain.sock', raw);
  // sun_path holds 108 bytes including the terminating NUL.
  if (Buffer.byteLength(value) > 107)
    throw invalid('DG_SOCKET_PATH', source, 'a socket path of at most 107 bytes (the Unix socket limit)', raw);
  return value;
}

function hostPort(raw: string, source: string): HostPort {
  const value = raw.trim();
  const match = /^(?:\[([0-9a-fA-F:.]+)\]|([^:\s]*)):(\d{1,5})$/.exec(value);
  const port = match ? Number(match[3]) : NaN;
  if (!match || port > 65535) throw invalid('DG_HTTP_ADDR', source, 'HOST:PORT such as 127.0.0.1:9404, :9404 or [::1]:9404', raw);
  return { host: match[1] ?? (match[2] || '0.0.0.0'), port };
}

function metricsUrl(raw: string, source: string): URL {
  let url: URL | undefined;
  try {
    url = new URL(raw.trim());
  } catch {
    // Reported below.
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:'))
    throw invalid('DG_CONFIG_VALUE', source, 'an http or https URL such as http://127.0.0.1:8080/metrics', raw);
  return url;
}

function boolean(raw: string, source: string): boolean {
  const value = oneOf('true', 'false', '1', '0', 'yes', 'no')(raw, source);
  return value === 'true' || value === '1' || value === 'yes';
}

const SHARED_OPTIONS = [
  {
    key: 'socket',
    flag: 'socket',
    value: 'PATH',
    parse: socketPath,
    commands: ['run', 'sidecar', 'prestop'],
    description: 'path of the drain socket (Unix domain, stream, mode 0600)',
    default: (c: Command) => (c === 'run' ? undefined : '/run/drainguard/drain.sock'),
    defaultText: 'a fresh private path per process',
  },
  {
    key: 'gracePeriodMs',
    flag: 'grace-period',
    value: 'DURATION',
    parse: duration,
    commands: SUPERVISING,
    description:
      "the pod's terminationGracePeriodSeconds; " +
      "once read from the Pod (when the API is reachable) the Pod's wins, unless this is shorter; " +
      "a deletion's own deadline (the Pod's deletionTimestamp, read at the stop) wins when it comes sooner",
    default: 30_000,
    format: formatDuration,
  },
  {
    key: 'nodeShutdownGraceMs',
    flag: 'node-shutdown-grace',
    value: 'DURATION',
    parse: duration,
    commands: SUPERVISING,
    description:
      'what the kubelet gives this pod in a graceful node shutdown (shutdownGracePeriod less shutdownGracePeriodCriticalPods, ' +
      "or the pod's shutdownGracePeriodByPodPriority bucket), which the cluster publishes nowhere; " +
      "capped by the Pod's grace period, used when the Pod's DisruptionTarget condition says the node is shutting down",
    defaultText: "unset: the Pod's grace period, the best bound drainguard can prove",
    format: formatDuration,
  },
  {
    key: 'nodePressureGraceMs',
    flag: 'node-pressure-grace',
    value: 'DURATION',
    parse: duration,
    commands: SUPERVISING,
    description:
      'what the kubelet gives this pod in a soft node-pressure eviction (its evictionMaxPodGracePeriod), ' +
      'which the cluster publishes nowhere; ' +
      "capped by the Pod's grace period, used when the Pod's DisruptionTarget condition says the node was low on a resource, " +
      'and as a bound for a stop that says nothing',
    defaultText: "unset: the Pod's grace period, the best bound drainguard can prove",
    format: formatDuration,
  },
  {
    key: 'drainTimeoutMs',
    flag: 'drain-timeout',
    value: 'DURATION',
    parse: duration,
    commands: ['run', 'sidecar', 'prestop'],
    description: 'how long to wait for the drain acknowledgement',
    defaultText: (c) =>
      c === 'prestop' ? 'the deadline the supervisor announces' : `grace period - stop timeout - ${formatDuration(GRACE_MARGIN_MS)}`,
  },
  {
    key: 'stopSignal',
    flag: 'stop-signal',
    value: 'SIGNAL',
    parse: signal,
    commands: ['run'],
    description: 'the signal passed on to the operator after the drain',
    default: 'SIGTERM',
  },
  {
    key: 'drainSignals',
    flag: 'drain-signals',
    value: 'SIGNALS',
    parse: drainSignals,
    commands: SUPERVISING,
    emptyIsUnset: true,
    description:
      `signals that start the drain as ${TERMINATING.join(' and ')} do, comma-separated (SIGQUIT,SIGHUP): ` +
      "the container's stop signal where the Pod does not tell it (an image's STOPSIGNAL, no API); " +
      'a drain signal is not passed on to the operator, which gets the stop signal after the drain',
    default: [],
    format: (signals: readonly NodeJS.Signals[]) =>
      signals.length === 0 ? `${TERMINATING.join(', ')} and the stop signal the Pod gives the container` : signals.join(','),
  },
  {
    key: 'stopTimeoutMs',
    flag: 'stop-timeout',
    value: 'DURATION',
    parse: duration,
    commands: SUPERVISING,
    description: 'after passing the signal on, how long before SIGKILL',
    default: 5_000,
    format: formatDuration,
  },
  {
    key: 'signalTarget',
    flag: 'signal-target',
    value: 'group|child',
    parse: oneOf('group', 'child'),
    commands: ['run'],
    description: "where forwarded signals go: the child's process group, or the child alone",
    default: 'group',
  },
  {
    key: 'guard',
    flag: 'guard',
    value: 'LIST',
    parse: (raw: string) => raw,
    commands: GUARD_USERS,
    emptyIsUnset: true,
    description: `objects whose deletion is held back while this pod lives: comma-separated ${GUARD_FORMS}`,
    defaultText: 'empty: no guard',
  },
  {
    key: 'hold',
    flag: 'hold',
    value: 'KINDS',
    parse: parseHoldList,
    commands: GUARD_USERS,
    description:
      `custom resource kinds (comma-separated ${HOLD_FORM}) ` +
      'whose finalizers must run before this pod stops when its Deployment is deleted: ' +
      "the Deployment is held with the guard's finalizer until no object of these kinds that is being deleted carries a finalizer",
    default: [],
    format: (kinds: readonly HoldKind[]) => (kinds.length === 0 ? 'empty: no hold' : kinds.map((k) => `${k.plural}.${k.group}`).join(',')),
  },
  {
    key: 'holdTimeoutMs',
    flag: 'hold-timeout',
    value: 'DURATION',
    parse: duration,
    commands: SUPERVISING,
    description: 'how long the hold keeps the Deployment once its deletion was seen, whatever is still being finalized',
    default: 300_000,
    format: formatDuration,
  },
  {
    key: 'holdSettleMs',
    flag: 'hold-settle',
    value: 'DURATION',
    parse: duration,
    commands: SUPERVISING,
    description:
      'how long the Deployment is deleting before the hold looks for objects being finalized ' +
      '(kubectl delete -f, -k and Flux delete the Deployment before the custom resources listed after it)',
    default: 5_000,
    format: formatDuration,
  },
  {
    key: 'leaseDurationMs',
    flag: 'lease-duration',
    value: 'DURATION',
    parse: duration,
    commands: SUPERVISING,
    description:
      "how long the guard's holder Lease stays valid without renewal (renewed every third of it); " +
      'a holder that stops renewing is stale after it',
    default: 60_000,
    format: formatDuration,
  },
  {
    key: 'podName',
    flag: 'pod-name',
    value: 'NAME',
    parse: podField(POD_NAME, "the pod's name (lowercase letters, digits, '-' and '.'), fieldRef metadata.name"),
    commands: GUARD_USERS,
    description: 'this pod, from the downward API (metadata.name)',
    defaultText: '-',
  },
  {
    key: 'podNamespace',
    flag: 'pod-namespace',
    value: 'NAMESPACE',
    parse: podField(NAMESPACE, "the pod's namespace (lowercase letters, digits and '-', at most 63), fieldRef metadata.namespace"),
    commands: GUARD_USERS,
    description: 'this pod, from the downward API (metadata.namespace)',
    defaultText: '-',
  },
  {
    key: 'podUid',
    flag: 'pod-uid',
    value: 'UID',
    parse: podField(
      POD_UID,
      "the pod's UID (lowercase letters, digits and '-', such as 6f1c2b9e-0d7a-4c1e-9a57-2f0c8e4b1d33), fieldRef metadata.uid",
    ),
    commands: GUARD_USERS,
    description: 'this pod, from the downward API (metadata.uid)',
    defaultText: '-',
  },
  {
    key: 'httpAddr',
    flag: 'http-addr',
    value: 'HOST:PORT',
    parse: hostPort,
    commands: SUPERVISING,
    description: 'health, readiness and metrics listener',
    default: (c: Command) => (c === 'sidecar' ? { host: '127.0.0.1', port: 9404 } : undefined),
    format: hostPortText,
    defaultText: 'off',
  },
  {
    key: 'idleMetrics',
    flag: 'idle-metrics',
    value: 'URL',
    parse: metricsUrl,
    commands: SUPERVISING,
    description:
      'for an operator that speaks no drain protocol (no client said hello): its controller-runtime metrics URL; ' +
      'the drain then lasts until a scrape (every 50ms) shows controller_runtime_active_workers summing to 0, ' +
      'or the deadline. A failed scrape (refused, no answer within 1s, not 200, unreadable) is warned at once, ' +
      'once per distinct error, and drain ended counts them. Best effort: intake is not stopped. ' +
      "https sends the pod's ServiceAccount token and accepts a self-signed certificate on loopback only",
    defaultText: 'off: with no client the drain ends at once',
  },
  {
    key: 'leaderLease',
    flag: 'leader-lease',
    value: 'auto|off|NAME',
    parse: leaderLease,
    commands: SUPERVISING,
    description:
      "once the operator has exited, empty the leader Lease it still holds in this pod's namespace " +
      "(holderIdentity `<pod name>_…`, client-go's), as client-go's ReleaseOnCancel does, " +
      'so the next leader takes it at its next retry instead of after the lease duration: ' +
      "auto finds it among the namespace's Leases (list), NAME reads only that one (get); off leaves Leases alone. " +
      "Needs DRAINGUARD_POD_NAME and _NAMESPACE, and get/list/update on leases (the operator's own leader-election rights); docs/leader.md",
    default: 'auto',
    format: (v: LeaderLeaseSetting) => (typeof v === 'string' ? v : v.name),
  },
  {
    key: 'evictionResponder',
    flag: 'eviction-responder',
    value: 'auto|off',
    parse: oneOf('auto', 'off'),
    commands: SUPERVISING,
    description:
      "auto: where the API server serves lifecycle.k8s.io/v1alpha1 (KEP-4563's EvictionRequest, gate EvictionRequestAPI) and the Pod's " +
      'spec.evictionResponders names drainguard.dev/drain, drain when an Eviction of this pod makes that responder Active, before any ' +
      'SIGTERM, heartbeat its status.responders[] entry while the drain runs and set completionTime once drained. ' +
      'Needs DRAINGUARD_POD_NAME, _NAMESPACE and _UID, and list/watch on evictions and patch on evictions/status; off: never asks',
    default: 'auto',
  },
  {
    key: 'prestopToken',
    flag: 'prestop-token',
    value: 'TOKEN',
    parse: (raw: string) => raw.trim(),
    commands: ['sidecar'],
    description:
      'deprecated, warned at start: the preStop token as a value, which anyone who can read the pod spec (the view role) can read; ' +
      'use --prestop-token-file',
    defaultText: 'no /prestop route',
  },
  {
    key: 'prestopTokenFile',
    flag: 'prestop-token-file',
    value: 'PATH',
    parse: nonEmpty,
    commands: ['sidecar'],
    description:
      'turns on the httpGet preStop route /prestop on the HTTP listener: ' +
      'requests must carry the token in this file ' +
      '(a mounted Secret; at least 16 characters, a trailing newline ignored) ' +
      'in the X-Drainguard-Token header. The file is read again when it changes, as the kubelet rotates a Secret volume',
    defaultText: 'no /prestop route',
  },
  {
    key: 'operatorContainer',
    flag: 'operator-container',
    value: 'NAMES',
    commands: ['sidecar'],
    parse: (raw: string, source: string) => {
      const names = raw
        .split(',')
        .map((n) => n.trim())
        .filter(Boolean);
      if (names.length === 0 || names.some((n) => !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(n)))
        throw invalid('DG_CONFIG_VALUE', source, 'container names separated by commas, such as manager', raw);
      return names;
    },
    description:
      "the operator's container(s) in this pod: " +
      'before releasing the guard, a plain sidecar also waits until the Kubernetes API reports them terminated ' +
      '(needed when the operator does not speak the drain protocol)',
    defaultText: 'go by the drain socket connections alone',
  },
  {
    key: 'logLevel',
    flag: 'log-level',
    value: 'LEVEL',
    parse: oneOf('debug', 'info', 'warn', 'error'),
    commands: ALL,
    description: 'debug, info, warn or error',
    default: 'info',
  },
  {
    key: 'logFormat',
    flag: 'log-format',
    value: 'FORMAT',
    parse: oneOf('json', 'text'),
    commands: ALL,
    description: 'json or text',
    defaultText: 'json when stderr is not a terminal',
  },
] as const satisfies readonly OptionSpec[];

/**
 * The options that several commands share (the lists below are single commands' own), as plain specs:
 * the literal types stay with SHARED_OPTIONS, for OptionValues.
 */
export const OPTIONS: readonly OptionSpec[] = SHARED_OPTIONS;

// `drainguard check`: the options only it has (the command's extra options).
/** How status and check print what they found. */
const OUTPUT = {
  key: 'output',
  flag: 'output',
  short: 'o',
  value: 'FORMAT',
  commands: ['status', 'check'],
  parse: oneOf('text', 'json'),
  description: 'text or json',
  default: 'text',
} as const satisfies OptionSpec;

/** predelete's and check's -n: one variable, DRAINGUARD_NAMESPACE, as kubectl's one flag. */
const NAMESPACE_OPTION = {
  key: 'namespace',
  flag: 'namespace',
  short: 'n',
  value: 'NAMESPACE',
  commands: ['predelete', 'check', 'adopt'],
  parse: (raw, source) => {
    if (!NAMESPACE.test(raw)) throw invalid('DG_CONFIG_VALUE', source, 'a namespace name (a DNS label)', raw);
    return raw;
  },
  description:
    'namespace of namespaced resources; predelete: also of the pods --require-ready looks for; ' +
    'check: of the objects that name none, as helm install -n creates them (an object naming another namespace is checked there); ' +
    'adopt: the namespace the chart is rendered into (helm template -n)',
  defaultText: (c) => (c === 'check' || c === 'adopt' ? 'default' : "the kubeconfig context's namespace, in a pod its own, else default"),
} as const satisfies OptionSpec;

export const CHECK_OPTIONS = [
  OUTPUT,
  NAMESPACE_OPTION,
  {
    key: 'filenames',
    flag: 'filename',
    short: 'f',
    value: 'PATH',
    commands: ['check'],
    flagOnly: true,
    repeatable: true,
    parse: manifestPath,
    description:
      'manifests to check, as kubectl apply -f: ' +
      'a file, a directory (its .yaml, .yml and .json files, recursively) or - for standard input; ' +
      'repeatable, and the same as naming them as arguments',
    defaultText: 'the paths named as arguments',
  },
  {
    key: 'plain',
    flag: 'plain',
    value: 'PATH',
    commands: ['check'],
    flagOnly: true,
    repeatable: true,
    parse: manifestPath,
    description:
      "the chart's render before drainguard was added (a file, a directory or -; repeatable): " +
      'each object in it must be in the manifests checked, or check reports it lost (object-lost)',
    defaultText: 'no comparison',
  },
  {
    key: 'checkDeployment',
    flag: 'deployment',
    value: 'NAMESPACE/NAME',
    commands: ['check'],
    parse: (raw, source) => {
      const [namespace, name, ...rest] = raw.trim().split('/');
      if (rest.length > 0 || !namespace || !name || !NAMESPACE.test(namespace) || !POD_NAME.test(name))
        throw invalid('DG_CONFIG_VALUE', source, 'NAMESPACE/NAME of a Deployment, such as operator-system/my-operator', raw);
      return { namespace, name } as const;
    },
    description:
      'check this Deployment as the Kubernetes API has it (with the RBAC objects and ServiceAccounts there) instead of manifests',
    defaultText: 'read the manifests named as arguments',
  },
] as const satisfies readonly OptionSpec[];

// `drainguard predelete`: the options only it has.
export const PREDELETE_OPTIONS = [
  NAMESPACE_OPTION,
  {
    key: 'allNamespaces',
    flag: 'all-namespaces',
    short: 'A',
    commands: ['predelete'],
    parse: boolean,
    description: 'delete the named types in every namespace',
    default: false,
    format: onOff,
  },
  {
    key: 'timeoutMs',
    flag: 'timeout',
    value: 'DURATION',
    commands: ['predelete'],
    parse: duration,
    description: 'give up (exit 1, naming what is left) when not everything is gone by then',
    default: 300_000,
    format: formatDuration,
  },
  {
    key: 'order',
    flag: 'order',
    commands: ['predelete'],
    parse: boolean,
    description:
      'delete in stages: each RESOURCE argument is deleted and gone before the next starts (join types of one stage with commas)',
    default: false,
    format: (v: boolean) => (v ? 'on' : 'off: all at once'),
  },
  {
    key: 'propagation',
    flag: 'propagation',
    value: 'POLICY',
    commands: ['predelete'],
    parse: (raw, source) => {
      const v = oneOf('background', 'foreground', 'orphan')(raw, source);
      return ({ background: 'Background', foreground: 'Foreground', orphan: 'Orphan' } as const)[v];
    },
    description: 'propagationPolicy of the deletes',
    default: 'Background',
    format: (v: string) => v.toLowerCase(),
  },
  {
    key: 'requireReady',
    flag: 'require-ready',
    value: 'SELECTOR',
    commands: ['predelete'],
    parse: (raw, source) => {
      if (raw.trim() === '')
        throw invalid('DG_CONFIG_VALUE', source, 'a label selector of the operator pods, such as app=my-operator', raw);
      return raw.trim();
    },
    description:
      'refuse to delete anything unless a ready pod matches this label selector in the namespace ' +
      '(the operator that removes the finalizers)',
    defaultText: 'no check',
  },
] as const satisfies readonly OptionSpec[];

const ALL_OBJECTS = {
  key: 'allObjects',
  flag: 'all-objects',
  parse: boolean,
  commands: ['release', 'status'],
  description:
    'every ClusterRole, ClusterRoleBinding, Role, RoleBinding and ServiceAccount that carries a drainguard.dev/holder- finalizer, ' +
    'besides the --guard list',
  default: false,
  format: onOff,
} as const satisfies OptionSpec;

// `drainguard release`: the options only it has.
export const RELEASE_OPTIONS = [
  ALL_OBJECTS,
  {
    key: 'all',
    flag: 'all',
    parse: boolean,
    commands: ['release'],
    flagOnly: true,
    description: 'also remove the finalizers of live holders (their pods lose their guard); needs --yes',
    default: false,
    format: onOff,
  },
  {
    key: 'yes',
    flag: 'yes',
    parse: boolean,
    commands: ['release'],
    flagOnly: true,
    description: 'confirm --all',
    default: false,
    format: onOff,
  },
  {
    key: 'waitMs',
    flag: 'wait',
    value: 'DURATION',
    parse: duration,
    commands: ['release'],
    description:
      'keep going until no holder finalizer is left on the objects, removing each as its holder goes stale, ' +
      'for at most DURATION (a post-delete hook runs while the operator pods still drain); exit 1 if live holders remain then',
    defaultText: 'one pass',
  },
  {
    key: 'delete',
    flag: 'delete',
    value: 'LIST',
    parse: nonEmpty,
    commands: ['release'],
    flagOnly: true,
    description:
      `then delete these objects (the forms of --guard, and ${POLICY_FORMS}), ` +
      'once no live holder is left on any of them or on the --guard list: ' +
      "drainguard's own RBAC, kept through the uninstall so that every release is authorised; nothing is deleted while a holder lives",
    defaultText: 'delete nothing',
  },
  {
    key: 'releaseManifests',
    flag: 'filename',
    short: 'f',
    value: 'FILE',
    parse: nonEmpty,
    commands: ['release'],
    flagOnly: true,
    description:
      "take the guard list, its pods' namespace and the objects to --delete from the manifests that were applied " +
      '(a file, a directory, or - for standard input: kubectl kustomize DIR | drainguard release -f -): ' +
      "every DRAINGUARD_GUARD in them, and drainguard's own RBAC (label app.kubernetes.io/name=drainguard)",
    defaultText: 'none',
  },
] as const satisfies readonly OptionSpec[];

// `drainguard status`: the options only it has.
export const STATUS_OPTIONS = [{ ...ALL_OBJECTS, commands: ['status'] }, OUTPUT] as const satisfies readonly OptionSpec[];

/** The shared options and those of single commands: the default of every key. */

/** A path-like value of adopt's: any text but the empty one. */
function pathValue(raw: string, source: string): string[] {
  if (raw === '') throw invalid('DG_CONFIG_VALUE', source, 'a path', raw);
  return [raw];
}

// `drainguard adopt`: the options only it has (all flags: it is run by a person, once, on a chart).
export const ADOPT_OPTIONS = [
  NAMESPACE_OPTION,
  {
    key: 'values',
    flag: 'values',
    short: 'f',
    value: 'FILE',
    commands: ['adopt'],
    flagOnly: true,
    repeatable: true,
    parse: pathValue,
    description: "a values file to render the chart with, as helm template -f (repeatable): the values the chart's users install with",
    defaultText: "the chart's values.yaml",
  },
  {
    key: 'set',
    flag: 'set',
    value: 'KEY=VALUE',
    commands: ['adopt'],
    flagOnly: true,
    repeatable: true,
    parse: (raw, source) => {
      if (!/^[^=]+=/.test(raw)) throw invalid('DG_CONFIG_VALUE', source, 'KEY=VALUE, as helm template --set', raw);
      return [raw];
    },
    description: 'a value to render the chart with, as helm template --set (repeatable)',
    defaultText: 'none',
  },
  {
    key: 'dryRun',
    flag: 'dry-run',
    parse: boolean,
    commands: ['adopt'],
    flagOnly: true,
    description: 'print the changes and what check says of them, and write nothing',
    default: false,
    format: onOff,
  },
  {
    key: 'helm',
    flag: 'helm',
    value: 'PATH',
    commands: ['adopt'],
    flagOnly: true,
    parse: nonEmpty,
    description: 'the helm executable (Helm 3.8 or later) that renders the chart',
    defaultText: 'helm on PATH',
  },
  {
    key: 'release',
    flag: 'release',
    value: 'NAME',
    commands: ['adopt'],
    flagOnly: true,
    parse: nonEmpty,
    description: 'the release name the chart is rendered as (what adopt writes follows any release name)',
    defaultText: "the chart's name",
  },
  {
    key: 'adoptMode',
    flag: 'mode',
    value: 'MODE',
    commands: ['adopt'],
    flagOnly: true,
    parse: oneOf('wrap', 'native-sidecar', 'sidecar'),
    description: 'drainguard.mode to write: wrap, native-sidecar or sidecar',
    defaultText: 'wrap; native-sidecar for a pod that mounts no ServiceAccount token',
  },
  {
    key: 'entrypoint',
    flag: 'command',
    value: 'PATH',
    commands: ['adopt'],
    flagOnly: true,
    parse: pathValue,
    description:
      "wrap mode: the image's ENTRYPOINT, for an operator container that sets no command (drainguard.operator.command); " +
      'adopt reads no image',
    defaultText: 'none: a container without command is refused in wrap mode',
  },
  {
    key: 'library',
    flag: 'library',
    value: 'PATH',
    commands: ['adopt'],
    flagOnly: true,
    parse: nonEmpty,
    description:
      "drainguard's library chart (a directory or a .tgz) to put in the chart's charts/, " +
      'instead of helm dependency update fetching it from the repository Chart.yaml names',
    defaultText: 'fetched by helm dependency update',
  },
  {
    key: 'out',
    flag: 'out',
    value: 'DIR',
    commands: ['adopt'],
    flagOnly: true,
    parse: nonEmpty,
    description: 'a manifest or kustomize directory: the directory the overlay is written to',
    defaultText: 'drainguard/ beside the manifest or the kustomize directory',
  },
  {
    key: 'components',
    flag: 'components',
    value: 'DIR',
    commands: ['adopt'],
    flagOnly: true,
    parse: nonEmpty,
    description: "a manifest or kustomize directory: drainguard's kustomize components (deploy/components), named by relative path",
    defaultText: "the components of this drainguard's release, by their GitHub URL",
  },
  {
    key: 'kubectl',
    flag: 'kubectl',
    value: 'PATH',
    commands: ['adopt'],
    flagOnly: true,
    parse: nonEmpty,
    description: 'a manifest or kustomize directory: the kubectl (1.27 or later) whose kustomize renders it and the overlay',
    defaultText: 'kubectl on PATH',
  },
] as const satisfies readonly OptionSpec[];

export const EVERY_OPTION = [
  ...SHARED_OPTIONS,
  ...CHECK_OPTIONS,
  ...ADOPT_OPTIONS,
  ...PREDELETE_OPTIONS,
  ...RELEASE_OPTIONS,
  ...STATUS_OPTIONS,
] as const;

/** The keys of the options any of `C` takes, as the table says. */
export type KeyOf<C extends Command> = keyof {
  [S in (typeof EVERY_OPTION)[number] as C extends S['commands'][number] ? S['key'] : never]: unknown;
};

/** The keys of the options any of `commands` takes, from the table. */
export function keysOf<C extends Command>(...commands: C[]): KeyOf<C>[] {
  return EVERY_OPTION.filter((o) => commands.some((c) => (o.commands as readonly Command[]).includes(c))).map((o) => o.key as KeyOf<C>);
}
