import type { ParsedArgs } from '../config/load.ts';
import type { Command, OptionSpec } from '../config/options.ts';

export interface CliIO {
  readonly env: NodeJS.ProcessEnv;
  readonly stdout: { write(chunk: string): unknown; isTTY?: boolean };
  readonly stderr: { write(chunk: string): unknown; isTTY?: boolean };
}

/** One `drainguard COMMAND`: what help shows, its resolved configuration, and what it does. */
export interface CommandDef<Config = any> {
  readonly name: Command;
  readonly summary: string;
  readonly usage: string;
  readonly description: string;
  /** Options only this command has, beside the shared ones in config/options.ts. */
  readonly extra?: readonly OptionSpec[];
  readonly stopAtPositional?: boolean;
  /** The options and arguments resolved once into a frozen config; throws ConfigError (exit 2). */
  resolve(args: ParsedArgs): Config;
  /** Resolves with the exit status; throws ConfigError for usage errors found later (exit 2). */
  run(config: Config, io: CliIO): Promise<number>;
}
