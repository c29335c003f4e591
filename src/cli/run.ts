import { type SupervisorConfig, resolveSupervisorConfig } from '../config/supervisor.ts';
import type { ParsedArgs } from '../config/load.ts';
import type { CliIO } from './command.ts';
import { supervise } from './supervise.ts';

interface RunConfig {
  readonly supervisor: SupervisorConfig;
  readonly command: readonly string[];
}

export const resolve = (args: ParsedArgs): RunConfig => ({ supervisor: resolveSupervisorConfig(args), command: args.positionals });

export const run = ({ supervisor, command }: RunConfig, io: CliIO): Promise<number> => supervise(supervisor, io, command);
