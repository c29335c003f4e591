import { type ReleaseConfig, resolveReleaseConfig } from '../config/commands.ts';
import { guardTargetKey } from '../config/guard-list.ts';
import { RELEASE_OPTIONS } from '../config/options.ts';
import { createLogger } from '../log/logger.ts';
import type { CommandDef } from './command.ts';

export const releaseCommand: CommandDef<ReleaseConfig> = {
  name: 'release',
  summary: 'remove guard finalizers whose holder is gone (recovery, post-delete hook)',
  usage: 'drainguard release [--guard LIST] [--all-objects] [--all --yes] [--wait DURATION] [--delete LIST]',
  description: `Removes the drainguard.dev/holder-* finalizers of stale holders (holder Lease gone
or expired) from the objects in --guard (DRAINGUARD_GUARD), or from every object that carries
one with --all-objects. Live holders keep theirs unless --all --yes is given. Only finalizers
are written, and with --delete, once no live holder is left, the objects it names are deleted
(drainguard's own RBAC, which the uninstall keeps until then). Exit status 0 when every stale
finalizer was removed (and every --delete object deleted), 1 when some could not be (or, with
--wait, when live holders remained at its end).`,
  extra: RELEASE_OPTIONS,
  resolve: resolveReleaseConfig,
  async run(v, io) {
    const logger = createLogger({ level: v.logLevel, format: v.logFormat, stream: io.stderr });
    const { openClient, defaultNamespace } = await import('../kube/open.ts');
    const { inspect } = await import('../guard/inspect.ts');
    const { sweep, toSweep, why } = await import('../guard/sweep.ts');
    const { refOf } = await import('../guard/names.ts');
    const { isNotFound } = await import('../kube/errors.ts');
    const { sleep } = await import('../kube/retry.ts');
    const client = await openClient(io.env, logger, 'drainguard release');
    const namespace = defaultNamespace(client, v.podNamespace);
    // What is to be deleted is swept too: a stale holder's finalizer would keep it after the delete.
    const targets = [...v.targets, ...v.remove.filter((r) => !v.targets.some((t) => guardTargetKey(t) === guardTargetKey(r)))];
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
        let deleted = 0;
        if (v.remove.length > 0 && !done) say(`not deleted: ${v.remove.map(guardTargetKey).join(', ')} (${kept > 0 ? 'live holders remain' : 'finalizers could not be removed'})`);
        if (v.remove.length > 0 && done) {
          await Promise.all(
            v.remove.map(async (r) => {
              const key = guardTargetKey(r);
              try {
                await client.delete(refOf(r), { body: { propagationPolicy: 'Background' } });
                deleted++;
                say(`${key}: deleted`);
              } catch (err) {
                if (isNotFound(err)) return;
                failed++;
                say(`${key}: could not delete: ${(err as Error).message}`);
              }
            }),
          );
        }
        const summary = [`released ${removed} finalizer(s)`, `${kept} of live holders left`, ...(v.remove.length > 0 ? [`deleted ${deleted} object(s)`] : []), ...(failed > 0 ? [`${failed} object(s) failed`] : [])];
        io.stdout.write(`${summary.join('; ')}\n`);
        return failed > 0 || ((v.waitMs !== undefined || v.remove.length > 0) && kept > 0) ? 1 : 0;
      }
      await sleep(Math.min(1000, until - Date.now()));
    }
  },
};
