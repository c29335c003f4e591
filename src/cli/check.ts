import { readFileSync } from 'node:fs';
import { CHECK_OPTIONS } from '../config/options.ts';
import { analyze } from '../check/analyze.ts';
import { readManifests } from '../check/read.ts';
import { formatJson, formatText } from '../check/report.ts';
import type { CommandDef } from './command.ts';

export const checkCommand: CommandDef = {
  name: 'check',
  summary: "find the mistakes in an operator's manifests that would break the drain or the guard",
  usage: 'drainguard check [-o json] PATH... (a file, a directory, or - for standard input)',
  description: `Reads rendered manifests (helm template ... | drainguard check -, or
kubectl kustomize ... | drainguard check -) and reports each mistake with its fix: a grace
period too short for the drain, the drain socket not on a volume both containers mount,
containers running as different users, a guard list drainguard's RBAC does not cover or that
names objects the manifests lack, a missing preStop hook in sidecar mode, a guarded
ServiceAccount whose tokens expire before the drain ends, an architecture drainguard is not
built for. Exit 0 when there is nothing to report, 1 with findings, 2 for input it cannot read.`,
  extra: CHECK_OPTIONS,
  async run(args, io) {
    const objects = readManifests(args.positionals, () => readFileSync(0, 'utf8'));
    const findings = analyze(objects);
    const output = (args.values as { checkOutput?: 'text' | 'json' }).checkOutput ?? 'text';
    io.stdout.write(output === 'json' ? formatJson(findings, objects.length) : formatText(findings, objects.length));
    return findings.length === 0 ? 0 : 1;
  },
};
