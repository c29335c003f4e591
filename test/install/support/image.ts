// The drainguard image for tests: built with podman from the Containerfile
// under a tag of its own, mounted read-only with `podman image mount`, and
// removed afterwards.

import { execa } from 'execa';
import { buildImage } from '../../../scripts/build-image.ts';

export interface BuiltImage {
  readonly tag: string;
  readonly id: string;
  /** Where `podman image mount` put its root. */
  readonly root: string;
  remove(): Promise<void>;
}

export async function buildAndMount(): Promise<BuiltImage> {
  const tag = `localhost/drainguard-test:${process.pid}-${Date.now()}`;
  const id = await buildImage({ tag });
  const root = (await execa('podman', ['image', 'mount', tag])).stdout.trim();
  return {
    tag,
    id,
    root,
    async remove() {
      await execa('podman', ['image', 'unmount', tag], { reject: false });
      await execa('podman', ['rmi', '--force', tag], { reject: false });
    },
  };
}

export async function inspect(
  tag: string,
): Promise<{ user: string; entrypoint: string[]; cmd: string[]; layers: number; env: string[]; labels: Record<string, string> }> {
  const [info] = JSON.parse((await execa('podman', ['image', 'inspect', tag])).stdout) as [
    {
      Config: { User: string; Entrypoint: string[]; Cmd: string[]; Env?: string[]; Labels: Record<string, string> };
      RootFS: { Layers: string[] };
    },
  ];
  return {
    user: info.Config.User,
    entrypoint: info.Config.Entrypoint,
    cmd: info.Config.Cmd,
    env: info.Config.Env ?? [],
    labels: info.Config.Labels,
    layers: info.RootFS.Layers.length,
  };
}
