import { ConfigError } from '../config/errors.ts';
import { parseGuardList } from '../config/guard-list.ts';
import { boolean, type OptionSpec } from '../config/options.ts';
import { createLogger } from '../log/logger.ts';
import type { CommandDef } from './command.ts';

export const ALL_OBJECTS: OptionSpec = {
    key: 'allObjects', flag: 'all-objects', parse: boolean, commands: ['release', 'status'],
    description: 'every ClusterRole, ClusterRoleBinding, Role, RoleBinding and ServiceAccount that carries a drainguard.dev/holder- finalizer, besides the --guard list',
    defaultText: 'off',
};

const EXTRA: readonly OptionSpec[] = [
  ALL_OBJECTS,
  {
    key: 'all', flag: 'all', parse: boolean, commands: ['release'], flagOnly: true,
    description: 'also remove the finalizers of live holders (their pods lose their guard); needs --yes',
    defaultText: 'off',
  },
  {
    key: 'yes', flag: 'yes', parse: boolean, commands: ['release'], flagOnly: true,
    description: 'confirm --all', defaultText: 'off',
  },
];

export const releaseCommand: CommandDef = {
  name: 'release',
  summary: 'remove guard finalizers whose holder is gone (recovery, post-delete hook)',
  usage: 'drainguard release [--guard LIST] [--all-objects] [--all --yes]',
  description: `Removes the drainguard.dev/holder-* finalizers of stale holders (holder Lease gone
or expired) from the objects in --guard (DRAINGUARD_GUARD), or from every object that carries
one with --all-objects. Live holders keep theirs unless --all --yes is given. Only finalizers
are written. Exit status 0 when every stale finalizer was removed, 1 when some could not be.`,
  extra: EXTRA,
  async run(args, io) {
    const v = args.values as { guard?: string; allObjects?: boolean; all?: boolean; yes?: boolean; podNamespace?: string; logLevel?: 'debug'; logFormat?: 'json' | 'text' };
    const targets = v.guard === undefined ? [] : parseGuardList(v.guard, args.sources.guard ?? 'DRAINGUARD_GUARD');
    if (targets.length === 0 && !v.allObjects) {
      throw new ConfigError('name the objects to release: --guard LIST (DRAINGUARD_GUARD), or --all-objects for every object that carries a drainguard.dev/holder- finalizer');
    }
    if (v.all && !v.yes) {
      throw new ConfigError('--all removes the finalizers of live holders too, whose pods then lose their guard; add --yes to confirm');
    }
    const logger = createLogger({ level: v.logLevel ?? 'info', format: v.logFormat, stream: io.stderr });
    const { openClient, defaultNamespace } = await import('../guard/open.ts');
    const { inspect } = await import('../guard/inspect.ts');
    const { removeFinalizers } = await import('../guard/finalizers.ts');
    const { refOf } = await import('../guard/names.ts');
    const client = openClient(io.env, logger, 'drainguard release');
    const { objects } = await inspect(client, { targets, allObjects: v.allObjects }, defaultNamespace(client, v.podNamespace));
    let removed = 0;
    let kept = 0;
    let failed = 0;
    await Promise.all(
      objects.map(async (o) => {
        if (!o.object) {
          io.stdout.write(`${o.key}: not found\n`);
          return;
        }
        const remove = o.holders.filter((h) => !h.live || v.all);
        for (const h of o.holders.filter((x) => !remove.includes(x))) {
          kept++;
          io.stdout.write(`${o.key}: kept ${h.finalizer} (live holder ${h.lease!.metadata.namespace}/${h.lease!.metadata.name})\n`);
        }
        if (remove.length === 0) return;
        try {
          const result = await removeFinalizers(client, refOf(o.target), remove.map((h) => h.finalizer), {}, o.object);
          for (const h of remove) {
            removed++;
            io.stdout.write(`${o.key}: removed ${h.finalizer} (${h.live ? 'live holder, --all' : h.staleBecause === 'gone' ? 'stale: Lease gone' : 'stale: Lease expired'})\n`);
          }
          if (result.state === 'removed' && result.gone) io.stdout.write(`${o.key}: deleted (it was being deleted)\n`);
        } catch (err) {
          failed++;
          io.stdout.write(`${o.key}: could not remove ${remove.map((h) => h.finalizer).join(', ')}: ${(err as Error).message}\n`);
        }
      }),
    );
    io.stdout.write(`released ${removed} finalizer(s); kept ${kept} of live holders${failed > 0 ? `; ${failed} object(s) failed` : ''}\n`);
    return failed > 0 ? 1 : 0;
  },
};
