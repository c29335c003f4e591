// Where the real control plane's binaries come from: $KUBEBUILDER_ASSETS, the
// envtest convention (`setup-envtest use 1.32.x -p path` fills it with etcd and
// kube-apiserver; kube-controller-manager comes from the Kubernetes server
// release). kube-apiserver and kube-controller-manager must be there; etcd is
// taken from there, else from PATH (Debian: etcd-server). Nothing is downloaded.

import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';
import { execFileSync } from 'node:child_process';

export interface Binaries {
  readonly etcd: string;
  readonly apiserver: string;
  readonly controllerManager: string;
}

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function onPath(name: string): string | undefined {
  return (process.env.PATH ?? '').split(delimiter).map((d) => join(d, name)).find(executable);
}

/** The binaries, or why the real control plane cannot be started here. */
export function locateBinaries(env: NodeJS.ProcessEnv = process.env): Binaries | { missing: string } {
  const assets = env.KUBEBUILDER_ASSETS;
  if (!assets) return { missing: 'KUBEBUILDER_ASSETS is not set' };
  const [apiserver, controllerManager] = ['kube-apiserver', 'kube-controller-manager'].map((n) => join(assets, n));
  const absent = [apiserver!, controllerManager!].filter((b) => !executable(b));
  if (absent.length > 0) return { missing: `KUBEBUILDER_ASSETS=${assets} has no executable ${absent.join(', ')}` };
  const etcd = [join(assets, 'etcd')].find(executable) ?? onPath('etcd');
  if (!etcd) return { missing: `no etcd in KUBEBUILDER_ASSETS=${assets} nor on PATH (Debian: apt-get install etcd-server)` };
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
