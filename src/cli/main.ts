// Dispatches `drainguard COMMAND`; returns the exit status (never exits itself).

import { type UsageErrorCode, describe, exitStatus } from '../errors.ts';
import { type ParsedArgs, parseArgs } from '../config/load.ts';
import { OPTIONS, envName } from '../config/options.ts';
import { unknownVariables } from '../config/unknown-variables.ts';
import { createLogger } from '../log/logger.ts';
import { versionLine } from '../version.ts';
import type { CliIO } from './command.ts';
import { COMMANDS } from './commands.ts';
import { commandHelp, mainHelp } from './help.ts';

export const EXIT_USAGE = 2;

export async function main(argv: readonly string[], io: CliIO): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '-h' || name === '--help' || name === 'help') {
    io.stdout.write(mainHelp(COMMANDS));
    return name === undefined ? EXIT_USAGE : 0;
  }
  if (name === '--version' || name === '-v' || name === 'version') {
    io.stdout.write(`${versionLine()}\n`);
    return 0;
  }
  const def = COMMANDS.find((c) => c.name === name);
  if (!def) {
    const code: UsageErrorCode = 'DG_CONFIG_UNKNOWN_COMMAND';
    io.stderr.write(`drainguard: ${code}: unknown command ${JSON.stringify(name)}; run 'drainguard --help' for the list\n`);
    return EXIT_USAGE;
  }
  try {
    const args = parseArgs(def.name, rest, io.env, { extra: def.extra, stopAtPositional: def.stopAtPositional });
    if (args.help) {
      io.stdout.write(commandHelp(def));
      return 0;
    }
    warnUnknownVariables(args.values, io);
    const code = await def.load();
    return await code.run(code.resolve(args), io);
  } catch (err) {
    // A bug shows its stack; a failure drainguard understood (a bad value, the API refused) its code and message.
    const bug = err instanceof TypeError || err instanceof ReferenceError || err instanceof RangeError || err instanceof SyntaxError;
    io.stderr.write(`drainguard ${def.name}: ${bug ? (err as Error).stack : describe(err)}\n`);
    // The table in errors.ts gives the status: 2 for what was wrong before the start, else 1.
    return exitStatus(err);
  }
}

/** Every variable some command reads; one set for all, since containers of a pod often share env. */
const KNOWN_VARIABLES: ReadonlySet<string> = new Set(
  [...OPTIONS, ...COMMANDS.flatMap((c) => c.extra ?? [])].filter((o) => !o.flagOnly).map(envName),
);

function warnUnknownVariables(values: ParsedArgs['values'], io: CliIO): void {
  const unknown = unknownVariables(io.env, KNOWN_VARIABLES);
  if (unknown.length === 0) return;
  const logger = createLogger({ level: values.logLevel, format: values.logFormat, stream: io.stderr });
  for (const { name, suggestion } of unknown) {
    logger.warn(`${name} is not a drainguard variable and is ignored${suggestion ? `; did you mean ${suggestion}?` : ''}`, {
      variable: name,
      suggestion,
    });
  }
}
