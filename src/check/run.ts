// What `drainguard check` does (cli/check.ts loads it only for that command).

import { readFileSync } from 'node:fs';
import type { CheckConfig } from '../config/commands.ts';
import { createLogger } from '../log/logger.ts';
import { analyze, layersOf } from './analyze.ts';
import { placeInNamespace } from './namespace.ts';
import { readManifests } from './read.ts';
import { formatJson, formatText } from './report.ts';

/** What the command gives it: its environment and where to write. */
interface CheckIO {
  readonly env: NodeJS.ProcessEnv;
  readonly stdout: { write(chunk: string): unknown };
  readonly stderr: { write(chunk: string): unknown };
}

export async function runCheck({ output, deployment, paths, plain, namespace }: CheckConfig, io: CheckIO): Promise<number> {
  const stdin = () => readFileSync(0, 'utf8');
  const objects = deployment ? await live(deployment, io) : placeInNamespace(readManifests(paths, stdin), namespace);
  const findings = analyze(objects, plain.length > 0 ? placeInNamespace(readManifests(plain, stdin), namespace) : undefined);
  const layers = layersOf(objects);
  io.stdout.write(output === 'json' ? formatJson(findings, objects.length, layers) : formatText(findings, objects.length, layers));
  return findings.length === 0 ? 0 : 1;
}

async function live(deployment: { namespace: string; name: string }, io: CheckIO) {
  const { openClient } = await import('../kube/open.ts');
  const { liveManifests } = await import('./live.ts');
  const client = await openClient(io.env, createLogger({ level: 'warn', stream: io.stderr }), 'drainguard check --deployment');
  return liveManifests(client, deployment.namespace, deployment.name);
}
