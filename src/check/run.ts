// What `drainguard check` does (cli/check.ts loads it only for that command).

import { readFileSync } from 'node:fs';
import type { ParsedArgs } from '../config/load.ts';
import { ConfigError } from '../config/errors.ts';
import { createLogger } from '../log/logger.ts';
import type { CliIO } from '../cli/command.ts';
import { analyze } from './analyze.ts';
import { readManifests } from './read.ts';
import { formatJson, formatText } from './report.ts';

export async function runCheck(args: ParsedArgs, io: CliIO): Promise<number> {
  const v = args.values as { checkOutput?: 'text' | 'json'; checkDeployment?: { namespace: string; name: string } };
  if (v.checkDeployment && args.positionals.length > 0) throw new ConfigError('--deployment reads from the API: name no manifests with it');
  const objects = v.checkDeployment ? await live(v.checkDeployment, io) : readManifests(args.positionals, () => readFileSync(0, 'utf8'));
  const findings = analyze(objects);
  const output = v.checkOutput ?? 'text';
  io.stdout.write(output === 'json' ? formatJson(findings, objects.length) : formatText(findings, objects.length));
  return findings.length === 0 ? 0 : 1;
}

async function live(deployment: { namespace: string; name: string }, io: CliIO) {
  const { openClient } = await import('../guard/open.ts');
  const { liveManifests } = await import('./live.ts');
  const client = openClient(io.env, createLogger({ level: 'warn', stream: io.stderr }), 'drainguard check --deployment');
  return liveManifests(client, deployment.namespace, deployment.name);
}
