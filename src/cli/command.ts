import type { ParsedArgs } from '../config/load.ts';
import type { Command, OptionSpec } from '../config/options.ts';

export interface CliIO {
  readonly env: NodeJS.ProcessEnv;
  readonly stdout: { write(chunk: string): unknown; isTTY?: boolean };
  readonly stderr: { write(chunk: string): unknown; isTTY?: boolean };
}

/** One `drainguard COMMAND`: what help shows, and what it does. */
export interface CommandDef {
  readonly name: Command;
  readonly summary: string;
  readonly usage: string;
  readonly description: string;
  /** Options only this command has, beside the shared ones in config/options.ts. */
  readonly extra?: readonly OptionSpec[];
  readonly stopAtPositional?: boolean;
  /** Resolves with the exit status; throws ConfigError for usage errors (exit 2). */
  run(args: ParsedArgs, io: CliIO): Promise<number>;
}
