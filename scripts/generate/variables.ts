// The README's table of variables (between the markers) from the options table
// in src/config/options.ts and the options of each command: one row per option.

import { COMMANDS } from '../../src/cli/commands.ts';
import { type Command, type OptionSpec, OPTIONS, defaultShown, envName } from '../../src/config/options.ts';

export const VARIABLES_DOC = 'README.md';

/** Every option: the shared table, then those only one command has. */
export function allOptions(): OptionSpec[] {
  const all = [...OPTIONS];
  for (const command of COMMANDS)
    for (const spec of command.extra ?? []) if (!all.some((o) => o.key === spec.key && o.flag === spec.flag)) all.push(spec);
  return all;
}
export const BEGIN = '<!-- variables:begin -->';
export const END = '<!-- variables:end -->';

const cell = (text: string): string => text.replaceAll('|', '\\|').replaceAll('\n', ' ');
const code = (text: string): string => `\`${text}\``;

function defaults(spec: OptionSpec): string {
  // A default that depends on the command: group the commands that share one.
  const byText = new Map<string, Command[]>();
  for (const command of spec.commands) {
    const text = defaultShown(spec, command);
    byText.set(text, [...(byText.get(text) ?? []), command]);
  }
  if (byText.size === 1) return [...byText.keys()][0]!;
  return [...byText].map(([text, commands]) => `${commands.join(', ')}: ${text}`).join('; ');
}

export function variablesTable(options: readonly OptionSpec[] = allOptions()): string {
  const rows = options.map((spec) => {
    const variable = spec.flagOnly ? '(flag only)' : code(envName(spec));
    const flag = code(`${spec.short ? `-${spec.short}, ` : ''}--${spec.flag}${spec.value ? ` ${spec.value}` : ''}`);
    return `| ${cell(variable)} | ${cell(flag)} | ${spec.commands.join(', ')} | ${cell(spec.description)} | ${cell(defaults(spec))} |`;
  });
  return ['| variable | flag | commands | meaning | default |', '|---|---|---|---|---|', ...rows].join('\n');
}

const FRAME = `# Variables

Every option of drainguard is a flag and an environment variable \`DRAINGUARD_<NAME>\`; a
flag given on the command line wins over the variable. Durations are \`500ms\`, \`30s\`,
\`2m\`, \`1m30s\` or a bare number of seconds. \`drainguard COMMAND --help\` shows the same
for one command.

The table between the markers is generated from \`src/config/options.ts\` by
\`npm run generate\`; a test fails when it is out of date.

${BEGIN}
${END}
`;

/** The document with the table between the markers renewed (the frame above when there is none yet). */
export function withVariablesTable(document: string | undefined, table = variablesTable()): string {
  const text = document ?? FRAME;
  const begin = text.indexOf(BEGIN);
  const end = text.indexOf(END);
  if (begin === -1 || end < begin) throw new Error(`${VARIABLES_DOC}: the markers ${BEGIN} and ${END} are missing`);
  return `${text.slice(0, begin + BEGIN.length)}\n${table}\n${text.slice(end)}`;
}
