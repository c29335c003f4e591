import { readFileSync } from 'node:fs';
import { type ReleaseConfig, resolveReleaseConfig } from '../config/commands.ts';
import { createLogger } from '../log/logger.ts';
import type { CliIO } from './command.ts';

export const resolve = resolveReleaseConfig;

export async function run(config: ReleaseConfig, io: CliIO): Promise<number> {
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
}

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
