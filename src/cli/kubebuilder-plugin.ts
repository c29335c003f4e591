// `drainguard kubebuilder-plugin`: with no argument, the answer to the one
// PluginRequest kubebuilder writes on standard input (src/kubebuilder/plugin.ts);
// `drainguard kubebuilder-plugin install [DIR]`, the plugin put under
// kubebuilder's plugins path (or DIR) for kubebuilder to find.

import type { ParsedArgs } from '../config/load.ts';
import { ConfigError, DrainguardError } from '../errors.ts';
import type { CliIO } from './command.ts';

export type PluginConfig = { readonly action: 'answer' } | { readonly action: 'install'; readonly dir?: string };

export function resolve(args: ParsedArgs): PluginConfig {
  const [first, dir, ...rest] = args.positionals;
  if (first === undefined) return Object.freeze({ action: 'answer' });
  if (first === 'install' && rest.length === 0) return Object.freeze({ action: 'install', ...(dir !== undefined && { dir }) });
  throw new ConfigError(
    'DG_CONFIG_ARGUMENTS',
    `expected no argument (kubebuilder runs it so, its request on standard input) or install [DIR], got ${args.positionals.join(' ')}`,
  );
}

export async function run(config: PluginConfig, io: CliIO): Promise<number> {
  if (config.action === 'install') {
    const { installPlugin, pluginsRoot } = await import('../kubebuilder/install.ts');
    const { PLUGIN_KEY } = await import('../kubebuilder/plugin.ts');
    const root = config.dir ?? pluginsRoot(io.env);
    const file = installPlugin(root);
    const hint = config.dir === undefined ? '' : ` (EXTERNAL_PLUGINS_PATH=${root} for kubebuilder)`;
    io.stdout.write(`${file}: ${PLUGIN_KEY} for kubebuilder${hint}; kubebuilder edit --plugins=${PLUGIN_KEY} adds drainguard\n`);
    return 0;
  }
  const { answer } = await import('../kubebuilder/plugin.ts');
  const text = await readStdin();
  let request: unknown;
  try {
    request = JSON.parse(text);
  } catch (err) {
    throw new DrainguardError('DG_KUBEBUILDER_REQUEST', `standard input is no JSON: ${(err as Error).message}`);
  }
  if (typeof request !== 'object' || request === null || typeof (request as { command?: unknown }).command !== 'string')
    throw new DrainguardError('DG_KUBEBUILDER_REQUEST', 'standard input is no PluginRequest: it names no command');
  const { response, report } = answer(request as Parameters<typeof answer>[0]);
  io.stderr.write(report);
  io.stdout.write(`${JSON.stringify(response)}\n`);
  return 0;
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
