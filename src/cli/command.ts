import type { ParsedArgs } from '../config/load.ts';
import type { Command, OptionSpec } from '../config/options.ts';

export interface CliIO {
  readonly env: NodeJS.ProcessEnv;
  readonly stdout: { write(chunk: string): unknown; isTTY?: boolean };
  readonly stderr: { write(chunk: string): unknown; isTTY?: boolean };
}

/** One `drainguard COMMAND` as help shows it (commands.ts), and where its code is. */
export interface CommandDef {
  readonly name: Command;
  readonly summary: string;
  readonly usage: string;
  readonly description: string;
  /** Options only this command has, beside the shared ones in config/options.ts. */
  readonly extra?: readonly OptionSpec[];
  readonly stopAtPositional?: boolean;
  /** The command's module (cli/NAME.ts), loaded when it runs. */
  load(): Promise<CommandCode>;
}

/** What a command's module exports. */
export interface CommandCode<Config = any> {
  /** The options and arguments resolved once into a frozen config; throws ConfigError (exit 2). */
  resolve(args: ParsedArgs): Config;
  /** Resolves with the exit status; throws ConfigError for usage errors found later (exit 2). */
  run(config: Config, io: CliIO): Promise<number>;
}
