// Reads flags and DRAINGUARD_* variables: the one place drainguard looks at
// its environment. A flag given on the command line wins over the variable.
//
// A loop of its own rather than node:util parseArgs, which cannot stop at the
// first positional (`run ./manager --leader-elect` is an unknown option to it
// unless argv is first scanned as here), lets a flag given twice win silently,
// and reports unknown options in its own words without the name as a field.

import { ConfigError } from '../errors.ts';
import {
  type Command,
  type DefaultedKey,
  EVERY_OPTION,
  type OptionSpec,
  type OptionValues,
  OPTIONS,
  defaultValue,
  envName,
} from './options.ts';

export interface ParsedArgs {
  readonly command: Command;
  /** Parsed option values by key; absent when neither flag nor variable was given. */
  readonly values: Readonly<Partial<OptionValues>>;
  /** Where each value came from (flag or variable name), for messages about rules that span settings. */
  readonly sources: Readonly<Record<string, string>>;
  readonly positionals: readonly string[];
  readonly help: boolean;
}

export interface ParseOptions {
  /** Options beyond the shared table that only this command has. */
  readonly extra?: readonly OptionSpec[];
  /** Stop reading options at the first positional argument (for `run COMMAND ARGS...`). */
  readonly stopAtPositional?: boolean;
}

export function optionsFor(command: Command, extra: readonly OptionSpec[] = []): OptionSpec[] {
  return [...OPTIONS.filter((o) => o.commands.includes(command)), ...extra];
}

export function parseArgs(
  command: Command,
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
  { extra = [], stopAtPositional = false }: ParseOptions = {},
): ParsedArgs {
  const specs = optionsFor(command, extra);
  const values: Record<string, unknown> = {};
  const sources: Record<string, string> = {};
  const positionals: string[] = [];
  let help = false;

  for (const spec of specs) {
    if (spec.flagOnly) continue;
    const name = envName(spec);
    const raw = env[name];
    if (raw === undefined) continue;
    if (raw === '' && spec.emptyIsUnset) continue;
    values[spec.key] = spec.parse(raw, name);
    sources[spec.key] = name;
  }

  const fromFlags = new Set<string>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--') {
      positionals.push(...argv.slice(i + 1));
      break;
    }
    if (arg === '-h' || arg === '--help') {
      help = true;
      continue;
    }
    if (!arg.startsWith('-') || arg === '-') {
      if (stopAtPositional) {
        positionals.push(...argv.slice(i));
        break;
      }
      positionals.push(arg);
      continue;
    }
    const eq = arg.indexOf('=');
    const name = eq === -1 ? arg : arg.slice(0, eq);
    const spec = specs.find((s) => `--${s.flag}` === name || (s.short !== undefined && `-${s.short}` === name));
    if (!spec)
      throw new ConfigError(
        'DG_CONFIG_UNKNOWN_OPTION',
        `unknown option ${name} for 'drainguard ${command}' (see 'drainguard ${command} --help')`,
      );
    const again = fromFlags.has(spec.key);
    if (again && !spec.repeatable) throw new ConfigError('DG_CONFIG_OPTION_USAGE', `option --${spec.flag} given twice`);
    fromFlags.add(spec.key);
    let raw: string;
    if (spec.value === undefined) {
      if (eq !== -1) throw new ConfigError('DG_CONFIG_OPTION_USAGE', `option --${spec.flag} takes no value, got ${JSON.stringify(arg)}`);
      raw = 'true';
    } else if (eq !== -1) {
      raw = arg.slice(eq + 1);
    } else {
      const next = argv[i + 1];
      if (next === undefined) throw new ConfigError('DG_CONFIG_OPTION_USAGE', `option ${name} needs a value (${spec.value})`);
      raw = next;
      i++;
    }
    const value = spec.parse(raw, name);
    values[spec.key] = again ? [...(values[spec.key] as unknown[]), ...(value as unknown[])] : value;
    sources[spec.key] = name;
  }
  // Each parser returns its key's type (OptionValues), so this is the one cast.
  return Object.freeze({
    command,
    values: Object.freeze(values) as Partial<OptionValues>,
    sources: Object.freeze(sources),
    positionals,
    help,
  });
}

/** Where the value of `key` came from (the flag or variable given), else its variable: the name a message about it uses. */
export function sourceOf(args: ParsedArgs, key: keyof OptionValues): string {
  const spec: OptionSpec | undefined = EVERY_OPTION.find((s) => s.key === key);
  if (!spec) throw new TypeError(`no option ${key} in the options table`);
  return args.sources[key] ?? (spec.flagOnly ? `--${spec.flag}` : envName(spec));
}

/** What setting() gives for a key: a value when the table has one default for every command, else maybe nothing. */
type Setting<K extends keyof OptionValues> = K extends DefaultedKey ? OptionValues[K] : OptionValues[K] | undefined;

/** What settings() gives for these keys, read-only: those that may have no value are optional. */
export type Settings<Keys extends readonly (keyof OptionValues)[]> = Readonly<
  Pick<OptionValues, Keys[number] & DefaultedKey> & Partial<Pick<OptionValues, Exclude<Keys[number], DefaultedKey>>>
>;

/**
 * The value given, else the option's default for the command (undefined when it has none).
 * Also for an option the command does not take: the supervisors share one config type.
 */
export function setting<K extends keyof OptionValues>(args: ParsedArgs, key: K): Setting<K> {
  if (args.values[key] !== undefined) return args.values[key] as Setting<K>;
  const spec = EVERY_OPTION.find((s) => s.key === key);
  return (spec && defaultValue(spec, args.command)) as Setting<K>;
}

/** setting() of each key, in one object: a config type takes the same keys with Settings. */
export function settings<const Keys extends readonly (keyof OptionValues)[]>(args: ParsedArgs, keys: Keys): Settings<Keys> {
  return Object.fromEntries(keys.map((key) => [key, setting(args, key)])) as Settings<Keys>;
}
