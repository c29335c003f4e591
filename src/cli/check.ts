import { readFileSync } from 'node:fs';
import { type CheckConfig, resolveCheckConfig } from '../config/commands.ts';
import { CHECK_OPTIONS } from '../config/options.ts';
import { analyze } from '../check/analyze.ts';
import { readManifests } from '../check/read.ts';
import { formatJson, formatText } from '../check/report.ts';
import { createLogger } from '../log/logger.ts';
import type { CliIO, CommandDef } from './command.ts';

export const checkCommand: CommandDef<CheckConfig> = {
  name: 'check',
  summary: "find the mistakes in an operator's manifests that would break the drain or the guard",
  usage: 'drainguard check [-o json] PATH... (a file, a directory, or - for standard input) | --deployment NAMESPACE/NAME',
  description: `Reads rendered manifests (helm template ... | drainguard check -, or
kubectl kustomize ... | drainguard check -) and reports each mistake with its fix: a grace
period too short for the drain, the drain socket not on a volume both containers mount,
containers running as different users, a guard list drainguard's RBAC does not cover or that
names objects the manifests lack, a missing preStop hook in sidecar mode, a guarded
ServiceAccount whose tokens expire before the drain ends, an architecture drainguard is not
built for. With --deployment, the Deployment and the RBAC it relies on are read from the
Kubernetes API (kubeconfig or in-cluster, as kubectl) instead. Exit 0 when there is nothing
to report, 1 with findings, 2 for input it cannot read.`,
  extra: CHECK_OPTIONS,
  resolve: resolveCheckConfig,
  async run({ output, deployment, paths }, io) {
    const objects = deployment ? await live(deployment, io) : readManifests(paths, () => readFileSync(0, 'utf8'));
    const findings = analyze(objects);
    io.stdout.write(output === 'json' ? formatJson(findings, objects.length) : formatText(findings, objects.length));
    return findings.length === 0 ? 0 : 1;
  },
};

async function live(deployment: { namespace: string; name: string }, io: CliIO) {
  const { openClient } = await import('../guard/open.ts');
  const { liveManifests } = await import('../check/live.ts');
  const client = openClient(io.env, createLogger({ level: 'warn', stream: io.stderr }), 'drainguard check --deployment');
  return liveManifests(client, deployment.namespace, deployment.name);
}
