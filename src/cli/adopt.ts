import type { AdoptConfig } from '../adopt/adopt.ts';
import type { ParsedArgs } from '../config/load.ts';
import { ConfigError } from '../errors.ts';
import type { CliIO } from './command.ts';

export function resolve(args: ParsedArgs): AdoptConfig {
  const v = args.values;
  if (args.positionals.length !== 1)
    throw new ConfigError(
      'DG_CONFIG_ARGUMENTS',
      args.positionals.length === 0
        ? "name the operator's chart, kustomize directory or manifest: drainguard adopt ./chart"
        : `one chart or manifest at a time, got ${args.positionals.length}`,
    );
  return Object.freeze({
    chart: args.positionals[0]!,
    helm: v.helm ?? 'helm',
    ...(v.release !== undefined && { release: v.release }),
    namespace: { name: v.namespace ?? 'default', source: args.sources.namespace ?? '-n' },
    values: Object.freeze([...(v.values ?? [])]),
    set: Object.freeze([...(v.set ?? [])]),
    dryRun: v.dryRun ?? false,
    ...(v.adoptMode !== undefined && { mode: v.adoptMode }),
    ...(v.entrypoint !== undefined && { command: Object.freeze([...v.entrypoint]) }),
    ...(v.library !== undefined && { library: v.library }),
    ...(v.out !== undefined && { out: v.out }),
    ...(v.components !== undefined && { components: v.components }),
    ...(v.kubectl !== undefined && { kubectl: v.kubectl }),
  });
}

// helm, the YAML parser and check's analysis are loaded only when used.
export const run = async (config: AdoptConfig, _io: CliIO): Promise<number> => (await import('../adopt/adopt.ts')).adopt(config, _io);
