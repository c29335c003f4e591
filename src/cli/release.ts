import { type ReleaseConfig, resolveReleaseConfig } from '../config/commands.ts';
import { RELEASE_OPTIONS } from '../config/options.ts';
import { createLogger } from '../log/logger.ts';
import type { CommandDef } from './command.ts';

export const releaseCommand: CommandDef<ReleaseConfig> = {
  name: 'release',
  summary: 'remove guard finalizers whose holder is gone (recovery, post-delete hook)',
  usage: 'drainguard release [--guard LIST] [--all-objects] [--all --yes]',
  description: `Removes the drainguard.dev/holder-* finalizers of stale holders (holder Lease gone
or expired) from the objects in --guard (DRAINGUARD_GUARD), or from every object that carries
one with --all-objects. Live holders keep theirs unless --all --yes is given. Only finalizers
are written. Exit status 0 when every stale finalizer was removed, 1 when some could not be
(or, with --wait, when live holders remained at its end).`,
  extra: RELEASE_OPTIONS,
  resolve: resolveReleaseConfig,
  async run(v, io) {
    const { targets } = v;
    const logger = createLogger({ level: v.logLevel, format: v.logFormat, stream: io.stderr });
    const { openClient, defaultNamespace } = await import('../kube/open.ts');
    const { inspect } = await import('../guard/inspect.ts');
    const { sweep, toSweep, why } = await import('../guard/sweep.ts');
    const { sleep } = await import('../kube/retry.ts');
    const client = await openClient(io.env, logger, 'drainguard release');
    const namespace = defaultNamespace(client, v.podNamespace);
    const until = Date.now() + (v.waitMs ?? 0);
    const said = new Set<string>();
    const say = (line: string) => {
      if (!said.has(line)) io.stdout.write(`${line}\n`);
      said.add(line);
    };
    let removed = 0;
    for (;;) {
      const { objects } = await inspect(client, { targets, allObjects: v.allObjects }, namespace);
      let kept = 0;
      let failed = 0;
      await Promise.all(
        objects.map(async (o) => {
          if (!o.object) {
            say(`${o.key}: not found`);
            return;
          }
          const { remove, keep } = toSweep(o.holders, { all: v.all });
          for (const h of keep) {
            kept++;
            say(`${o.key}: kept ${h.finalizer} (live holder ${h.lease!.metadata.namespace}/${h.lease!.metadata.name})`);
          }
          if (remove.length === 0) return;
          try {
            const result = await sweep(client, o.target, remove);
            for (const h of remove) {
              removed++;
              say(`${o.key}: removed ${h.finalizer} (${why(h)})`);
            }
            if (result.state === 'removed' && result.gone) say(`${o.key}: deleted (it was being deleted)`);
          } catch (err) {
            failed++;
            say(`${o.key}: could not remove ${remove.map((h) => h.finalizer).join(', ')}: ${(err as Error).message}`);
          }
        }),
      );
      const done = kept === 0 && failed === 0;
      if (done || Date.now() >= until) {
        io.stdout.write(`released ${removed} finalizer(s); ${kept} of live holders left${failed > 0 ? `; ${failed} object(s) failed` : ''}\n`);
        return failed > 0 || (v.waitMs !== undefined && kept > 0) ? 1 : 0;
      }
      await sleep(Math.min(1000, until - Date.now()));
    }
  },
};
