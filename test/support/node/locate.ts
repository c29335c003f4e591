// Where a real node's programs are: the kubelet (the control plane's release's, or another's) and
// Debian's containerd and runc. Apart from index.ts, which needs a control plane: a unit test can ask it.

import { existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { executable } from '../daemon-process.ts';
import { builtRelease, pinnedRelease, releaseDir } from '../kubernetes/build.ts';

const onPath = (name: string) =>
  (process.env.PATH ?? '')
    .split(delimiter)
    .concat('/usr/sbin', '/sbin')
    .map((d) => join(d, name))
    .find(executable);

/**
 * The kubelet and the runtime, or why a real node cannot start here. The kubelet is the control plane's
 * (KUBEBUILDER_ASSETS), or that of `kubeletRelease`, built in its own directory (npm run k8s -- RELEASE).
 */
export function locateNode(
  env: NodeJS.ProcessEnv = process.env,
  kubeletRelease?: string,
): { kubelet: string; containerd: string; ctr: string } | { missing: string } {
  const assets = kubeletRelease ? releaseDir(kubeletRelease) : env.KUBEBUILDER_ASSETS || builtRelease(pinnedRelease());
  const kubelet = assets ? join(assets, 'kubelet') : undefined;
  if (!kubelet || !executable(kubelet))
    return {
      missing: `no kubelet in ${assets ?? releaseDir(pinnedRelease())} (npm run k8s${kubeletRelease ? ` -- ${kubeletRelease.slice(1)}` : ''} builds it)`,
    };
  const [containerd, ctr, runc, shim] = ['containerd', 'ctr', 'runc', 'containerd-shim-runc-v2'].map(onPath);
  const absent = [
    ['containerd', containerd],
    ['runc', runc],
    ['containerd-shim-runc-v2', shim],
  ]
    .filter(([, p]) => !p)
    .map(([n]) => n);
  if (absent.length > 0) return { missing: `${absent.join(', ')} not on PATH (Debian: apt-get install containerd runc)` };
  if (process.getuid?.() !== 0) return { missing: 'containerd and the kubelet need root' };
  if (!existsSync('/bin/busybox'))
    return { missing: 'no /bin/busybox for the pause and tools images (Debian: apt-get install busybox-static)' };
  return { kubelet, containerd: containerd!, ctr: ctr! };
}
