import { boolean, duration, type OptionSpec } from '../config/options.ts';
import { ConfigError, invalid } from '../config/errors.ts';
import { describe } from '../errors.ts';
import { createLogger } from '../log/logger.ts';
import type { CommandDef } from './command.ts';

const PREDELETE: OptionSpec[] = [
  {
    key: 'namespace', flag: 'namespace', short: 'n', value: 'NAMESPACE', commands: ['predelete'],
    parse: (raw, source) => {
      if (!/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(raw)) throw invalid('DG_CONFIG_VALUE', source, 'a namespace name (a DNS label)', raw);
      return raw;
    },
    description: 'namespace of namespaced resources, and of the pods --require-ready looks for',
    defaultText: "the kubeconfig context's namespace, in a pod its own, else default",
  },
  {
    key: 'allNamespaces', flag: 'all-namespaces', short: 'A', commands: ['predelete'], parse: boolean,
    description: 'delete the named types in every namespace', defaultText: 'false',
  },
  {
    key: 'timeoutMs', flag: 'timeout', value: 'DURATION', commands: ['predelete'], parse: duration,
    description: 'give up (exit 1, naming what is left) when not everything is gone by then', defaultText: '5m',
  },
  {
    key: 'order', flag: 'order', commands: ['predelete'], parse: boolean,
    description: 'delete in stages: each RESOURCE argument is deleted and gone before the next starts (join types of one stage with commas)',
    defaultText: 'false: all at once',
  },
  {
    key: 'propagation', flag: 'propagation', value: 'POLICY', commands: ['predelete'],
    parse: (raw, source) => {
      const v = raw.trim().toLowerCase();
      if (!['background', 'foreground', 'orphan'].includes(v)) throw invalid('DG_CONFIG_CHOICE', source, 'one of background, foreground, orphan', raw);
      return (v[0]!.toUpperCase() + v.slice(1)) as 'Background' | 'Foreground' | 'Orphan';
    },
    description: 'propagationPolicy of the deletes', defaultText: 'background',
  },
  {
    key: 'requireReady', flag: 'require-ready', value: 'SELECTOR', commands: ['predelete'],
    parse: (raw, source) => {
      if (raw.trim() === '') throw invalid('DG_CONFIG_VALUE', source, 'a label selector of the operator pods, such as app=my-operator', raw);
      return raw.trim();
    },
    description: 'refuse to delete anything unless a ready pod matches this label selector in the namespace (the operator that removes the finalizers)',
    defaultText: 'no check',
  },
];

export const predeleteCommand: CommandDef = {
  name: 'predelete',
  summary: 'delete custom resources and wait until they are gone (a Helm pre-delete hook Job)',
  usage: 'drainguard predelete [OPTIONS] RESOURCE...',
  description: `Deletes the named resources while the operator still runs, and waits until its
finalizers have let every one go. RESOURCE names them as kubectl does: TYPE[.GROUP]/NAME for
one object, TYPE[.GROUP] for all of a type (installations.operator.tigera.io/default,
apiservers.operator.tigera.io). Exits 0 once all are gone, 1 when --timeout passes first
(naming what is left and which finalizers hold it), 2 for a usage error such as a type the
API server does not know.`,
  extra: PREDELETE,
  async run(args, io) {
    const { parseResourceArgs, Discovery } = await import('../predelete/resources.ts');
    const { predelete, PredeleteError } = await import('../predelete/predelete.ts');
    const { openClient } = await import('../guard/open.ts');
    const v = args.values as { namespace?: string; allNamespaces?: boolean; timeoutMs?: number; order?: boolean; propagation?: 'Background'; requireReady?: string; logLevel?: 'info'; logFormat?: 'json' };
    if (args.positionals.length === 0) throw new ConfigError('DG_CONFIG_ARGUMENTS', "'drainguard predelete' needs at least one RESOURCE, such as installations.operator.tigera.io/default");
    const groups = args.positionals.map(parseResourceArgs);
    const logger = createLogger({ level: v.logLevel, format: v.logFormat, stream: io.stderr });
    const client = openClient(io.env, logger, 'drainguard predelete');
    const namespace = v.namespace ?? client.namespace ?? 'default';
    const discovery = new Discovery(client);
    const resolved = await Promise.all(groups.map((g) => Promise.all(g.map((a) => discovery.resolve(a)))));
    const stages = v.order ? resolved : [resolved.flat()];
    const say = (line: string) => io.stdout.write(`${line}\n`);
    try {
      await predelete({
        client,
        stages,
        namespace,
        allNamespaces: v.allNamespaces,
        propagation: v.propagation ?? 'Background',
        timeoutMs: v.timeoutMs ?? 300_000,
        requireReady: v.requireReady === undefined ? undefined : { namespace, selector: v.requireReady },
        say,
      });
      return 0;
    } catch (err) {
      if (!(err instanceof PredeleteError)) throw err;
      io.stderr.write(`drainguard predelete: ${describe(err)}\n`);
      return 1;
    }
  },
};
