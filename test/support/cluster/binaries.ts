// Where the real control plane's binaries come from: $KUBEBUILDER_ASSETS when
// it is set (the envtest convention: `npm run k8s -- 1.30` prints such a
// directory), else the release test/support/kubernetes pins, once
// `npm run k8s` has built it into the cache. kube-apiserver and
// kube-controller-manager must be there; etcd is taken from there, else from
// PATH (Debian: etcd-server). Nothing is downloaded here.

import { delimiter, join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { builtRelease, pinnedRelease, releaseDir } from '../kubernetes/build.ts';
import { executable } from '../daemon-process.ts';

export interface Binaries {
  readonly etcd: string;
  readonly apiserver: string;
  readonly controllerManager: string;
}

function onPath(name: string): string | undefined {
  return (process.env.PATH ?? '')
    .split(delimiter)
    .map((d) => join(d, name))
    .find(executable);
}

/** The binaries, or why the real control plane cannot be started here. */
export function locateBinaries(env: NodeJS.ProcessEnv = process.env): Binaries | { missing: string } {
  const assets = env.KUBEBUILDER_ASSETS || builtRelease(pinnedRelease());
  if (!assets) return { missing: `KUBEBUILDER_ASSETS is not set and ${releaseDir(pinnedRelease())} is not built (npm run k8s)` };
  const [apiserver, controllerManager] = ['kube-apiserver', 'kube-controller-manager'].map((n) => join(assets, n));
  const absent = [apiserver!, controllerManager!].filter((b) => !executable(b));
  if (absent.length > 0) return { missing: `${assets} has no executable ${absent.join(', ')}` };
  const etcd = [join(assets, 'etcd')].find(executable) ?? onPath('etcd');
  if (!etcd) return { missing: `no etcd in ${assets} nor on PATH (Debian: apt-get install etcd-server)` };
  return { etcd, apiserver: apiserver!, controllerManager: controllerManager! };
}

export function findBinaries(env: NodeJS.ProcessEnv = process.env): Binaries {
  const found = locateBinaries(env);
  if ('missing' in found) throw new Error(`no real control plane: ${found.missing} (see test/support/cluster/README.md)`);
  return found;
}

/** `kube-apiserver --version`'s answer, e.g. `Kubernetes v1.32.6`. */
export function apiserverVersion(binaries: Binaries): string {
  return execFileSync(binaries.apiserver, ['--version'], { encoding: 'utf8' }).trim();
}

/** `etcd --version`'s release, e.g. `3.4.23 (/usr/bin/etcd)`. */
export function etcdVersion(binaries: Binaries): string {
  const out = execFileSync(binaries.etcd, ['--version'], { encoding: 'utf8' });
  return `${/etcd Version: (\S+)/.exec(out)?.[1] ?? out.trim()} (${binaries.etcd})`;
}
