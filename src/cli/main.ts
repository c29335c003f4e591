// Dispatches `drainguard COMMAND`; returns the exit status (never exits itself).

import { ConfigError } from '../config/errors.ts';
import { describe } from '../errors.ts';
import { type ParsedArgs, parseArgs } from '../config/load.ts';
import { OPTIONS, envName } from '../config/options.ts';
import { unknownVariables } from '../config/unknown-variables.ts';
import { createLogger } from '../log/logger.ts';
import { VERSION } from '../version.ts';
import type { CliIO, CommandDef } from './command.ts';
import { commandHelp, mainHelp } from './help.ts';
import { predeleteCommand } from './predelete.ts';
import { prestopCommand } from './prestop.ts';
import { installCommand } from './install.ts';
import { releaseCommand } from './release.ts';
import { runCommand } from './run.ts';
import { sidecarCommand } from './sidecar.ts';
import { statusCommand } from './status.ts';
import { checkCommand } from './check.ts';

export const COMMANDS: readonly CommandDef[] = [runCommand, sidecarCommand, prestopCommand, installCommand, predeleteCommand, releaseCommand, statusCommand, checkCommand];

export const EXIT_USAGE = 2;
export const EXIT_FAILURE = 1;

export async function main(argv: readonly string[], io: CliIO): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '-h' || name === '--help' || name === 'help') {
    io.stdout.write(mainHelp(COMMANDS));
    return name === undefined ? EXIT_USAGE : 0;
  }
  if (name === '--version' || name === '-v' || name === 'version') {
    io.stdout.write(`drainguard ${VERSION} (node ${process.version})\n`);
    return 0;
  }
  const def = COMMANDS.find((c) => c.name === name);
  if (!def) {
    io.stderr.write(`drainguard: unknown command ${JSON.stringify(name)}; run 'drainguard --help' for the list\n`);
    return EXIT_USAGE;
  }
  try {
    const args = parseArgs(def.name, rest, io.env, { extra: def.extra, stopAtPositional: def.stopAtPositional });
    if (args.help) {
      io.stdout.write(commandHelp(def));
      return 0;
    }
    warnUnknownVariables(args.values, io);
    return await def.run(def.resolve(args), io);
  } catch (err) {
    if (err instanceof ConfigError) {
      io.stderr.write(`drainguard ${def.name}: ${describe(err)}\n`);
      return EXIT_USAGE;
    }
    // A bug shows its stack; a failure drainguard understood (the API refused, say) its code and message.
    const bug = err instanceof TypeError || err instanceof ReferenceError || err instanceof RangeError || err instanceof SyntaxError;
    io.stderr.write(`drainguard ${def.name}: ${bug ? (err as Error).stack : describe(err)}\n`);
    return EXIT_FAILURE;
  }
}

/** Every variable some command reads; one set for all, since containers of a pod often share env. */
const KNOWN_VARIABLES: ReadonlySet<string> = new Set([...OPTIONS, ...COMMANDS.flatMap((c) => c.extra ?? [])].filter((o) => !o.flagOnly).map(envName));

function warnUnknownVariables(values: ParsedArgs['values'], io: CliIO): void {
  const unknown = unknownVariables(io.env, KNOWN_VARIABLES);
  if (unknown.length === 0) return;
  const logger = createLogger({ level: values.logLevel, format: values.logFormat, stream: io.stderr });
  for (const { name, suggestion } of unknown) {
    logger.warn(`${name} is not a drainguard variable and is ignored${suggestion ? `; did you mean ${suggestion}?` : ''}`, { variable: name, suggestion });
  }
}
