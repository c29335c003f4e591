// The resolved configuration of the commands that supervise nothing (prestop,
// release, status, predelete, install, check): defaults from the options table
// filled in, the rules about their arguments checked before they start.
// Each type takes its options' types from the table (Settings) with the list
// of keys that also fills it in (settings). run and sidecar resolve in
// supervisor.ts.

import { statSync } from 'node:fs';
import { ConfigError } from '../errors.ts';
import { type DeleteTarget, type GuardTarget, parseDeleteList, parseGuardList } from './guard-list.ts';
import { type ParsedArgs, type Settings, setting, settings, sourceOf } from './load.ts';
import type { OptionValues } from './options.ts';

const LOG = ['logLevel', 'logFormat'] as const;
export type LogConfig = Settings<typeof LOG>;

const PRESTOP = [...LOG, 'drainTimeoutMs'] as const;
export interface PrestopConfig extends Settings<typeof PRESTOP> {
  /** Always set: prestop's default is the sidecar's path. */
  readonly socket: string;
}

// hold: the Deployments in the namespace that carry holder finalizers are looked at too;
// podNamespace: where holder Leases are looked for (undefined: the client's namespace rules, kube/open.ts).
const GUARD_QUERY = [...LOG, 'allObjects', 'hold', 'podNamespace'] as const;
/** What release and status look at: the objects named, or every one with a holder finalizer. */
export interface GuardQueryConfig extends Settings<typeof GUARD_QUERY> {
  readonly targets: readonly GuardTarget[];
}

const RELEASE = ['all', 'waitMs'] as const;
export interface ReleaseConfig extends GuardQueryConfig, Settings<typeof RELEASE> {
  /** Deleted once no live holder is left. */
  readonly remove: readonly DeleteTarget[];
  /** -f: manifests that add their guard lists, namespace and drainguard's own RBAC to the above. */
  readonly manifests?: string;
}

export interface StatusConfig extends GuardQueryConfig {
  readonly output: OptionValues['output'];
}

const PREDELETE = [...LOG, 'namespace', 'allNamespaces', 'timeoutMs', 'order', 'propagation', 'requireReady'] as const;
export interface PredeleteConfig extends Settings<typeof PREDELETE> {
  /** The RESOURCE arguments as given (parsed against the API server's discovery). */
  readonly resources: readonly string[];
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
  /** --plain: the chart's render before drainguard was added, to compare with (none: no comparison). */
  readonly plain: readonly string[];
  /** -n: where objects that name no namespace go, and the one any other must name (undefined: default, no check). */
  readonly namespace?: { readonly name: string; readonly source: string };
}

export function resolvePrestopConfig(args: ParsedArgs): PrestopConfig {
  return Object.freeze({ ...settings(args, PRESTOP), socket: setting(args, 'socket')! });
}

function guardQuery(args: ParsedArgs): GuardQueryConfig {
  const v = args.values;
  const targets = v.guard === undefined ? [] : parseGuardList(v.guard, sourceOf(args, 'guard'));
  return { ...settings(args, GUARD_QUERY), targets: Object.freeze(targets) };
}

export function resolveReleaseConfig(args: ParsedArgs): ReleaseConfig {
  const query = guardQuery(args);
  const manifests = args.values.releaseManifests;
  if (query.targets.length === 0 && !query.allObjects && query.hold.length === 0 && manifests === undefined) {
    throw new ConfigError(
      'DG_CONFIG_ARGUMENTS',
      'name the objects to release: --guard LIST (DRAINGUARD_GUARD), -f FILE (the manifests that were applied), ' +
        '--hold KINDS (DRAINGUARD_HOLD: the held Deployments of the namespace), ' +
        'or --all-objects for every object that carries a drainguard.dev/holder- finalizer',
    );
  }
  const given = settings(args, RELEASE);
  if (given.all && !setting(args, 'yes')) {
    throw new ConfigError(
      'DG_CONFIG_CONFIRM',
      '--all removes the finalizers of live holders too, whose pods then lose their guard; add --yes to confirm',
    );
  }
  const remove = args.values.delete === undefined ? [] : parseDeleteList(args.values.delete, sourceOf(args, 'delete'));
  return Object.freeze({ ...query, ...given, remove: Object.freeze(remove), manifests });
}

export function resolveStatusConfig(args: ParsedArgs): StatusConfig {
  const query = guardQuery(args);
  // With no list, status shows every object that has a holder.
  return Object.freeze({ ...query, allObjects: query.allObjects || query.targets.length === 0, output: setting(args, 'output') });
}

export function resolvePredeleteConfig(args: ParsedArgs): PredeleteConfig {
  if (args.positionals.length === 0)
    throw new ConfigError(
      'DG_CONFIG_ARGUMENTS',
      "'drainguard predelete' needs at least one RESOURCE, such as installations.operator.tigera.io/default",
    );
  return Object.freeze({ ...settings(args, PREDELETE), resources: Object.freeze([...args.positionals]) });
}
export function resolveInstallConfig(args: ParsedArgs): InstallConfig {
  if (args.positionals.length !== 1) {
    throw new ConfigError(
      'DG_CONFIG_ARGUMENTS',
      `'drainguard install' needs exactly one DIR, got ${args.positionals.length === 0 ? 'none' : JSON.stringify(args.positionals)}`,
    );
  }
  const dir = args.positionals[0]!;
  let stat;
  try {
    stat = statSync(dir);
  } catch {}
  if (stat && !stat.isDirectory())
    throw new ConfigError('DG_INSTALL_DIR', `DIR: expected a directory, got ${JSON.stringify(dir)}, which is not one`);
  return Object.freeze({ ...settings(args, LOG), dir });
}

export function resolveCheckConfig(args: ParsedArgs): CheckConfig {
  const { checkDeployment: deployment, namespace: name, filenames = [], plain = [] } = args.values;
  const paths = [...filenames, ...args.positionals];
  if (deployment && (paths.length > 0 || plain.length > 0))
    throw new ConfigError('DG_CONFIG_ARGUMENTS', '--deployment reads from the API: name no manifests with it, nor --plain');
  if (paths.includes('-') && plain.includes('-'))
    throw new ConfigError('DG_CONFIG_ARGUMENTS', 'standard input is read once: give the manifests or --plain as a file, not both as -');
  const namespace = name === undefined ? undefined : { name, source: args.sources.namespace! };
  if (deployment && namespace && namespace.name !== deployment.namespace) {
    throw new ConfigError(
      'DG_CONFIG_ARGUMENTS',
      `--deployment ${deployment.namespace}/${deployment.name} is in namespace ${deployment.namespace}, ` +
        `${namespace.source} names ${namespace.name}: give one namespace`,
    );
  }
  return Object.freeze({
    output: setting(args, 'output'),
    deployment,
    paths: Object.freeze(paths),
    plain: Object.freeze([...plain]),
    ...(namespace && { namespace }),
  });
}
