// The images a real node's pods run, built here from what the machine has (no
// registry is ever reached) and imported into the node's containerd:
// - PAUSE_IMAGE: the pod sandbox, busybox-static sleeping (containerd stops a
//   sandbox with SIGKILL, so it needs no signal handling);
// - TOOLS_IMAGE: busybox-static at /busybox, and /lib, /lib64 linked into /usr
//   (an operator image: drainguard comes into the pod from the release image's
//   `install`, as deploy/components/install does it): a pod that
//   mounts the host's /usr read-only (toolsMounts) runs the host's Node.js and
//   the operator fixtures of this checkout, mounted at the same path;
// - DRAINGUARD_IMAGE: the release image, as scripts/build-image.ts builds it;
// - toolsImageStoppedBy(SIGNAL), when asked for: TOOLS_IMAGE with `STOPSIGNAL
//   SIGNAL`, an operator image whose runtime stops it with that signal.
// podman builds them (FROM scratch: nothing is pulled) and saves each as a
// docker archive for `ctr images import`.

import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { VERSION, buildImage } from '../../../scripts/build-image.ts';
import { EXE } from '../proc.ts';

export const PAUSE_IMAGE = 'drainguard.test/pause:1';
export const TOOLS_IMAGE = 'drainguard.test/tools:1';
export const DRAINGUARD_IMAGE = `drainguard.test/drainguard:${VERSION}`;
const BUSYBOX = '/bin/busybox';

/** This checkout, mounted read-only at the same path in a pod that runs its fixtures. */
export const CHECKOUT = resolve('.');

/** The volumes and mounts a TOOLS_IMAGE container needs to run `process.execPath` on a fixture of this checkout. */
export function toolsMounts(): { volumes: object[]; volumeMounts: object[] } {
  const node = process.execPath.startsWith(`${CHECKOUT}/`) ? [] : [{ name: 'host-node', path: process.execPath }];
  const paths = [{ name: 'host-usr', path: '/usr' }, { name: 'checkout', path: CHECKOUT }, ...node];
  return {
    volumes: paths.map(({ name, path }) => ({ name, hostPath: { path } })),
    volumeMounts: paths.map(({ name, path }) => ({ name, mountPath: path, readOnly: true })),
  };
}

/** Builds image TAG from `containerfile` with `dir` as the context (FROM scratch, or --from an image podman has built). */
export function buildContainerImage(dir: string, tag: string, containerfile: string): void {
  writeFileSync(join(dir, 'Containerfile'), containerfile);
  execFileSync('podman', ['build', '--quiet', '--layers=false', '--timestamp', '0', '-f', join(dir, 'Containerfile'), '-t', tag, dir], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
}

/** TOOLS_IMAGE with the image config's STOPSIGNAL set to `signal` (buildNodeImages builds it when asked). */
export const toolsImageStoppedBy = (signal: string): string => `drainguard.test/tools-${signal.toLowerCase()}:1`;

/** Builds the three images, and TOOLS_IMAGE with each of `stopSignals`, and saves them in `dir`; resolves with the archives' paths. */
export async function buildNodeImages(dir: string, stopSignals: readonly string[] = []): Promise<string[]> {
  const pause = join(dir, 'pause');
  mkdirSync(pause);
  copyFileSync(BUSYBOX, join(pause, 'busybox'));
  buildContainerImage(pause, PAUSE_IMAGE, 'FROM scratch\nCOPY busybox /busybox\nENTRYPOINT ["/busybox", "sleep", "2147483647"]\n');

  const tools = join(dir, 'tools');
  mkdirSync(join(tools, 'root'), { recursive: true });
  copyFileSync(BUSYBOX, join(tools, 'root', 'busybox'));
  symlinkSync('usr/lib', join(tools, 'root', 'lib'));
  symlinkSync('usr/lib64', join(tools, 'root', 'lib64'));
  buildContainerImage(tools, TOOLS_IMAGE, 'FROM scratch\nCOPY root/ /\nENTRYPOINT ["/busybox"]\n');

  const stopped = stopSignals.map((signal) => {
    const context = join(dir, `tools-${signal.toLowerCase()}`);
    mkdirSync(context);
    buildContainerImage(context, toolsImageStoppedBy(signal), `FROM ${TOOLS_IMAGE}\nSTOPSIGNAL ${signal}\n`);
    return toolsImageStoppedBy(signal);
  });

  await buildImage({ tag: DRAINGUARD_IMAGE, executable: EXE, timestamp: 0 });

  return [PAUSE_IMAGE, TOOLS_IMAGE, DRAINGUARD_IMAGE, ...stopped].map((tag, i) => saveImage(tag, join(dir, `image-${i}.tar`)));
}

/** Saves image TAG as a docker archive at `archive` (for RealNode.importImages); returns the archive's path. */
export function saveImage(tag: string, archive: string): string {
  execFileSync('podman', ['save', '--quiet', '--format', 'docker-archive', '-o', archive, tag], { stdio: ['ignore', 'ignore', 'pipe'] });
  return archive;
}
