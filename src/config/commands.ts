// The resolved configuration of the commands that supervise nothing (prestop,
// release, status, predelete, install, check): defaults from the options table
// filled in, the rules about their arguments checked before they start.
// run and sidecar resolve in supervisor.ts.

import { statSync } from 'node:fs';
import type { LogFormat, LogLevel } from '../log/logger.ts';
import { ConfigError } from '../errors.ts';
import type { HoldKind } from './hold-list.ts';
import { type DeleteTarget, type GuardTarget, parseDeleteList, parseGuardList } from './guard-list.ts';
import { type ParsedArgs, setting } from './load.ts';
import type { OptionValues } from './options.ts';

export interface LogConfig {
  readonly logLevel: LogLevel;
  /** undefined: json unless stderr is a terminal. */
  readonly logFormat?: LogFormat;
}

export interface PrestopConfig extends LogConfig {
  readonly socket: string;
  /** undefined: the deadline the supervisor announces. */
  readonly drainTimeoutMs?: number;
}

/** What release and status look at: the objects named, or every one with a holder finalizer. */
export interface GuardQueryConfig extends LogConfig {
  readonly targets: readonly GuardTarget[];
  readonly allObjects: boolean;
  /** The hold's kinds: the Deployments in the namespace that carry holder finalizers are looked at too. */
  readonly hold: readonly HoldKind[];
  /** Where holder Leases are looked for; undefined: the client's namespace rules (kube/open.ts). */
  readonly podNamespace?: string;
}

export interface ReleaseConfig extends GuardQueryConfig {
  /** Also the finalizers of live holders (confirmed with --yes). */
  readonly all: boolean;
  /** undefined: one pass. */
  readonly waitMs?: number;
  /** Deleted once no live holder is left. */
  readonly remove: readonly DeleteTarget[];
  /** -f: manifests that add their guard lists, namespace and drainguard's own RBAC to the above. */
  readonly manifests?: string;
}

export interface StatusConfig extends GuardQueryConfig {
  readonly output: OptionValues['output'];
}

export interface PredeleteConfig extends LogConfig {
  /** The RESOURCE arguments as given (parsed against the API server's discovery). */
  readonly resources: readonly string[];
  /** undefined: the kubeconfig context's, in a pod its own, else default. */
  readonly namespace?: string;
  readonly allNamespaces: boolean;
  readonly timeoutMs: number;
  readonly order: boolean;
  readonly propagation: OptionValues['propagation'];
  readonly requireReady?: string;
}

export interface InstallConfig extends LogConfig {
  readonly dir: string;
}

export interface CheckConfig {
  readonly output: OptionValues['output'];
  /** Read from the API instead of manifests. */
  readonly deployment?: OptionValues['checkDeployment'];
  /** Files, directories, or - for standard input: those of -f, then the arguments. */
  readonly paths: readonly string[];
  /** -n: where objects that name no namespace go, and the one any other must name (undefined: default, no check). */
  readonly namespace?: { readonly name: string; readonly source: string };
}

const log = (args: ParsedArgs): LogConfig => ({ logLevel: setting(args, 'logLevel')!, logFormat: args.values.logFormat });

export function resolvePrestopConfig(args: ParsedArgs): PrestopConfig {
  return Object.freeze({ ...log(args), socket: setting(args, 'socket')!, drainTimeoutMs: args.values.drainTimeoutMs });
}

function guardQuery(args: ParsedArgs): GuardQueryConfig {
  const v = args.values;
  const targets = v.guard === undefined ? [] : parseGuardList(v.guard, args.sources.guard ?? 'DRAINGUARD_GUARD');
  return { ...log(args), targets: Object.freeze(targets), allObjects: setting(args, 'allObjects')!, hold: setting(args, 'hold')!, podNamespace: v.podNamespace };
}

export function resolveReleaseConfig(args: ParsedArgs): ReleaseConfig {
  const query = guardQuery(args);
  const manifests = args.values.releaseManifests;
  if (query.targets.length === 0 && !query.allObjects && query.hold.length === 0 && manifests === undefined) {
    throw new ConfigError('DG_CONFIG_ARGUMENTS', 'name the objects to release: --guard LIST (DRAINGUARD_GUARD), -f FILE (the manifests that were applied), --hold KINDS (DRAINGUARD_HOLD: the held Deployments of the namespace), or --all-objects for every object that carries a drainguard.dev/holder- finalizer');
  }
  const all = setting(args, 'all')!;
  if (all && !setting(args, 'yes')) {
    throw new ConfigError('DG_CONFIG_CONFIRM', '--all removes the finalizers of live holders too, whose pods then lose their guard; add --yes to confirm');
  }
  const remove = args.values.delete === undefined ? [] : parseDeleteList(args.values.delete, args.sources.delete ?? '--delete');
  return Object.freeze({ ...query, all, waitMs: args.values.waitMs, remove: Object.freeze(remove), manifests });
}

export function resolveStatusConfig(args: ParsedArgs): StatusConfig {
  const query = guardQuery(args);
  // With no list, status shows every object that has a holder.
  return Object.freeze({ ...query, allObjects: query.allObjects || query.targets.length === 0, output: setting(args, 'output')! });
}

export function resolvePredeleteConfig(args: ParsedArgs): PredeleteConfig {
  if (args.positionals.length === 0) throw new ConfigError('DG_CONFIG_ARGUMENTS', "'drainguard predelete' needs at least one RESOURCE, such as installations.operator.tigera.io/default");
  const v = args.values;
  return Object.freeze({
    ...log(args),
    resources: Object.freeze([...args.positionals]),
    namespace: v.namespace,
    allNamespaces: setting(args, 'allNamespaces')!,
    timeoutMs: setting(args, 'timeoutMs')!,
    order: setting(args, 'order')!,
    propagation: setting(args, 'propagation')!,
    requireReady: v.requireReady,
  });
}

export function resolveInstallConfig(args: ParsedArgs): InstallConfig {
  if (args.positionals.length !== 1) {
    throw new ConfigError('DG_CONFIG_ARGUMENTS', `'drainguard install' needs exactly one DIR, got ${args.positionals.length === 0 ? 'none' : JSON.stringify(args.positionals)}`);
  }
  const dir = args.positionals[0]!;
  let stat;
  try {
    stat = statSync(dir);
  } catch {}
  if (stat && !stat.isDirectory()) throw new ConfigError('DG_INSTALL_DIR', `DIR: expected a directory, got ${JSON.stringify(dir)}, which is not one`);
  return Object.freeze({ ...log(args), dir });
}

export function resolveCheckConfig(args: ParsedArgs): CheckConfig {
  const { checkDeployment: deployment, namespace: name, filenames = [] } = args.values;
  const paths = [...filenames, ...args.positionals];
  if (deployment && paths.length > 0) throw new ConfigError('DG_CONFIG_ARGUMENTS', '--deployment reads from the API: name no manifests with it');
  const namespace = name === undefined ? undefined : { name, source: args.sources.namespace! };
  if (deployment && namespace && namespace.name !== deployment.namespace) {
    throw new ConfigError('DG_CONFIG_ARGUMENTS', `--deployment ${deployment.namespace}/${deployment.name} is in namespace ${deployment.namespace}, ${namespace.source} names ${namespace.name}: give one namespace`);
  }
  return Object.freeze({ output: setting(args, 'output')!, deployment, paths: Object.freeze(paths), ...(namespace && { namespace }) });
}
