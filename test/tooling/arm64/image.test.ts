// The image as a manifest list of linux/amd64 and linux/arm64
// (scripts/build-image.ts), built with podman; the arm64 image holds the arm64
// installation and runs, under qemu-user, from its own root.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execa } from 'execa';
import { buildManifest } from '../../../scripts/build-image.ts';
import { LAUNCHER_IMAGES } from '../../../src/install/launcher-image.ts';
import { EXE, type Proc } from '../../support/proc.ts';
import { listTree } from '../../install/support/chroot.ts';
import { AARCH64, EXE_ARM64, arm64, elfMachine } from './support/arm64.ts';

const tag = `localhost/drainguard-test:${process.pid}-${Date.now()}`;
const podman = async (...args: string[]) => (await execa('podman', args)).stdout.trim();

test.after(async () => {
  await execa('podman', ['manifest', 'rm', tag], { reject: false });
  await execa('podman', ['image', 'unmount', `${tag}-arm64`], { reject: false });
  await execa('podman', ['rmi', '--force', `${tag}-amd64`, `${tag}-arm64`], { reject: false });
});

test('one manifest list, one image per architecture, each holding its own executable', async () => {
  const images = await buildManifest(tag);
  assert.equal(images, { amd64: `${tag}-amd64`, arm64: `${tag}-arm64` });
  const list = JSON.parse(await podman('manifest', 'inspect', tag)) as {
    manifests: { digest: string; platform: { os: string; architecture: string } }[];
  };
  assert.equal(list.manifests.map((m) => `${m.platform.os}/${m.platform.architecture}`).sort(), ['linux/amd64', 'linux/arm64']);
  for (const [arch, image] of Object.entries(images)) {
    const [info] = JSON.parse(await podman('image', 'inspect', image)) as [
      { Architecture: string; Os: string; Digest: string; Config: { Entrypoint: string[] } },
    ];
    assert.is(info.Architecture, arch);
    assert.equal(info.Config.Entrypoint, ['/drainguard/drainguard']);
    assert.ok(
      list.manifests.some((m) => m.platform.architecture === arch && m.digest === info.Digest),
      `the list names ${image}`,
    );
  }

  const root = await podman('image', 'mount', images.arm64);
  const files = listTree(join(root, 'drainguard')).filter((f) => !f.endsWith('/'));
  assert.ok(files.includes('lib/ld-linux-aarch64.so.1') && files.includes('lib/libc.so.6'), files.join(' '));
  for (const f of files) assert.is(elfMachine(join(root, 'drainguard', f)), AARCH64, f);
  assert.ok(readFileSync(join(root, 'drainguard/drainguard')).equals(LAUNCHER_IMAGES.arm64!));
  assert.ok(readFileSync(join(root, 'drainguard/lib/drainguard')).equals(readFileSync(EXE_ARM64)), 'the arm64 executable');
  assert.not.ok(readFileSync(join(root, 'drainguard/lib/drainguard')).equals(readFileSync(EXE)));

  // The image's entrypoint, in the image's root.
  let p: Proc | undefined;
  try {
    p = arm64(['chroot', root, '/drainguard/drainguard', '--version']);
    assert.is((await p.exit(60_000)).code, 0, p.stderr.join('\n'));
    assert.match(p.stdout[0]!, /^drainguard \d/);
  } finally {
    p?.killAll();
  }
});

test.run();
