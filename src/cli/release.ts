import { readFileSync } from 'node:fs';
import { type ReleaseConfig, resolveReleaseConfig } from '../config/commands.ts';
import { RELEASE_OPTIONS } from '../config/options.ts';
import { createLogger } from '../log/logger.ts';
import type { CommandDef } from './command.ts';

export const releaseCommand: CommandDef<ReleaseConfig> = {
  name: 'release',
  summary: 'remove guard finalizers whose holder is gone (recovery, post-delete hook)',
  usage: 'drainguard release [--guard LIST | -f FILE] [--all-objects] [--all --yes] [--wait DURATION] [--delete LIST]',
  description: `Removes the drainguard.dev/holder-* finalizers of stale holders (holder Lease gone,
expired, or not owned by its Pod) from the objects in --guard (DRAINGUARD_GUARD), or from every
object that carries one with --all-objects; with --hold (DRAINGUARD_HOLD), also from the
Deployments of the namespace that carry one (the hold's). Holders are judged by the Leases of
--pod-namespace (the guarding pods' namespace; default the kubeconfig's, else default). Live
holders keep theirs unless --all --yes is given. Only finalizers are written, and with --delete,
once no live holder is left, the objects it names are deleted (drainguard's own RBAC and
admission policy, which the uninstall keeps until then). With -f FILE (- for standard
input), the lists come from the manifests that were applied: kubectl kustomize DIR |
drainguard release --wait 2m -f -. Exit status 0 when every stale
finalizer was removed (and every --delete object deleted), 1 when some could not be (or, with
--wait, when live holders remained at its end).`,
  extra: RELEASE_OPTIONS,
  resolve: resolveReleaseConfig,
  async run(config, io) {
    const v = config.manifests === undefined ? config : await fromManifests(config, config.manifests);
    const logger = createLogger({ level: v.logLevel, format: v.logFormat, stream: io.stderr });
    const { openClient, defaultNamespace } = await import('../kube/open.ts');
    const { releaseStale } = await import('../guard/release-stale.ts');
    const client = await openClient(io.env, logger, 'drainguard release');
    const namespace = defaultNamespace(client, v.podNamespace);
    // The hold's Deployments: those of the namespace that carry a holder finalizer.
    const held =
      v.hold.length > 0 && namespace !== undefined ? await (await import('../guard/inspect.ts')).heldDeployments(client, namespace) : [];
    const release = {
      targets: [...v.targets, ...held],
      allObjects: v.allObjects,
      all: v.all,
      waitMs: v.waitMs,
      remove: v.remove,
      namespace,
    };
    return releaseStale(client, release, (line) => io.stdout.write(`${line}\n`));
  },
};

/** CONFIG with the guard lists, namespace and drainguard's own RBAC of the manifests at PATH added. */
async function fromManifests(config: ReleaseConfig, path: string): Promise<ReleaseConfig> {
  const { readManifests } = await import('../check/read.ts');
  const { releaseTargets } = await import('../check/release-targets.ts');
  const found = releaseTargets(
    readManifests([path], () => readFileSync(0, 'utf8')),
    path === '-' ? '<stdin>' : path,
  );
  return {
    ...config,
    targets: [...config.targets, ...found.guard],
    remove: [...config.remove, ...found.remove],
    podNamespace: config.podNamespace ?? found.namespace,
  };
}
