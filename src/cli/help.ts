import { defaultShown, envName } from '../config/options.ts';
import { optionsFor } from '../config/load.ts';
import type { CommandDef } from './command.ts';
import { VERSION } from '../version.ts';

export function commandHelp(def: CommandDef): string {
  const lines = [`Usage: ${def.usage}`, '', def.description, '', 'Options:'];
  for (const spec of optionsFor(def.name, def.extra)) {
    const flag = `${spec.short ? `-${spec.short}, ` : ''}--${spec.flag}${spec.value ? ` ${spec.value}` : ''}`;
    const dflt = defaultShown(spec, def.name);
    lines.push(`  ${flag}`);
    lines.push(`      ${spec.description}`);
    lines.push(`      ${spec.flagOnly ? 'flag only' : `env ${envName(spec)}`}; default: ${dflt}`);
  }
  lines.push('  -h, --help', '      show this help');
  lines.push('', 'A flag given on the command line wins over its variable. Durations: 500ms, 30s, 2m, or a number of seconds.');
  return `${lines.join('\n')}\n`;
}

export function mainHelp(commands: readonly CommandDef[]): string {
  const width = Math.max(...commands.map((c) => c.name.length));
  return `drainguard ${VERSION}: drains a Kubernetes operator before it is killed, and keeps its RBAC alive until its pod is gone.

Usage: drainguard COMMAND [OPTIONS]

Commands:
${commands.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`).join('\n')}

Run 'drainguard COMMAND --help' for a command's options, 'drainguard --version' for the version.
Exit status: the operator's own; 128+N when it died of signal N; 2 for a usage or configuration error; 1 for any other failure.
`;
}
