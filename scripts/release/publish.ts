// The push half of a release: the image (the manifest list and both images)
// and the chart to one OCI registry, $DRAINGUARD_REGISTRY, a repository
// prefix such as ghcr.io/drainguard or localhost:5000/drainguard:
//   image  REGISTRY/drainguard:VERSION              (podman manifest push --all)
//   chart  oci://REGISTRY/charts/drainguard VERSION  (helm push)
// The chart under charts/: pushed to oci://REGISTRY it would be
// REGISTRY/drainguard:VERSION, the image's very name, and replace it.
// A registry on loopback (localhost, 127.0.0.1, [::1]) is spoken to in plain
// HTTP, as Docker and Helm users expect of a local registry; any other over
// TLS, with the credentials of `podman login` and `helm registry login`.

import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { helmPath } from '../../test/support/helm.ts';

export const REGISTRY_VARIABLE = 'DRAINGUARD_REGISTRY';

export interface Registry {
  /** host[:port]/path, no scheme. */
  readonly repository: string;
  /** Plain HTTP: loopback only. */
  readonly plainHttp: boolean;
}

export class PublishError extends Error {}

export function registryFrom(env: NodeJS.ProcessEnv): Registry {
  const given = env[REGISTRY_VARIABLE];
  if (!given)
    throw new PublishError(
      `--push needs ${REGISTRY_VARIABLE}: the repository prefix to push to, such as ghcr.io/drainguard or localhost:5000/drainguard`,
    );
  const repository = given.replace(/^oci:\/\//, '').replace(/\/+$/, '');
  if (!/^[a-z0-9.-]+(:\d+)?(\/[a-z0-9._-]+)*$/.test(repository) && !/^\[[0-9a-f:]+\](:\d+)?(\/[a-z0-9._-]+)*$/.test(repository)) {
    throw new PublishError(`${REGISTRY_VARIABLE}: expected HOST[:PORT][/PATH] (lower case, no scheme), got ${JSON.stringify(given)}`);
  }
  const host = repository.split('/')[0]!.replace(/:\d+$/, '');
  return { repository, plainHttp: ['localhost', '127.0.0.1', '[::1]'].includes(host) };
}

export interface PublishInput {
  readonly version: string;
  readonly out: string;
  /** The local manifest list. */
  readonly imageTag: string;
}

export interface Published {
  /** REGISTRY/drainguard:VERSION@sha256:… of the manifest list. */
  readonly image: string;
  /** oci://REGISTRY/charts/drainguard, at VERSION. */
  readonly chart: string;
}

export async function publish(
  { version, out, imageTag }: PublishInput,
  registry: Registry,
  log: (line: string) => void = () => {},
): Promise<Published> {
  const image = `${registry.repository}/drainguard:${version}`;
  const work = mkdtempSync(join(tmpdir(), 'drainguard-publish-'));
  try {
    const digestFile = join(work, 'digest');
    await execa('podman', [
      'manifest',
      'push',
      '--quiet',
      '--all',
      '--format',
      'oci',
      `--tls-verify=${!registry.plainHttp}`,
      '--digestfile',
      digestFile,
      imageTag,
      `docker://${image}`,
    ]);
    const digest = readFileSync(digestFile, 'utf8').trim();
    log(`pushed ${image}@${digest}`);
    const chart = `oci://${registry.repository}/charts`;
    execFileSync(helmPath(), ['push', join(out, `drainguard-${version}.tgz`), chart, ...(registry.plainHttp ? ['--plain-http'] : [])], {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: process.env,
    });
    log(`pushed ${chart}/drainguard ${version}`);
    return { image: `${image}@${digest}`, chart: `${chart}/drainguard` };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
