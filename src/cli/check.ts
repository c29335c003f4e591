import { type CheckConfig, resolveCheckConfig } from '../config/commands.ts';
import type { CliIO } from './command.ts';

export const resolve = resolveCheckConfig;

// The YAML parser and the analysis are loaded only when used.
export const run = async (config: CheckConfig, io: CliIO): Promise<number> => (await import('../check/run.ts')).runCheck(config, io);
