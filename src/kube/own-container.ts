// Which container of its Pod drainguard runs in. The downward API does not
// tell a container its own name, but the kubelet mounts every container's
// termination message file from `PODS_DIR/POD_UID/containers/NAME/ID`
// (getPodContainerDir in pkg/kubelet), whatever terminationMessagePath says,
// and the mount's source path is in /proc/self/mountinfo.

import { readFileSync } from 'node:fs';

/** The container names in `mountinfo` (the text of /proc/self/mountinfo) that the kubelet's per-container mounts of pod `uid` show. */
export function containersInMounts(mountinfo: string, uid: string): string[] {
  const own = new RegExp(`(?:^|/)pods/${uid.replace(/[^a-z0-9-]/g, '')}/containers/([a-z0-9](?:[-a-z0-9]*[a-z0-9])?)/[^/]+$`);
  const names = new Set<string>();
  for (const line of mountinfo.split('\n')) {
    // Field 4 is the mount's root within its filesystem: the kubelet's path, or one below a mounted /var/lib/kubelet.
    const root = line.split(' ')[3];
    const m = root === undefined ? null : own.exec(root);
    if (m) names.add(m[1]!);
  }
  return [...names];
}

/** This process's mounts, or '' where there is no /proc (not Linux). */
export function readOwnMounts(): string {
  try {
    return readFileSync('/proc/self/mountinfo', 'utf8');
  } catch {
    return '';
  }
}

interface PodContainers {
  readonly containers?: readonly { readonly name: string }[];
  readonly initContainers?: readonly { readonly name: string; readonly restartPolicy?: string }[];
}

/**
 * drainguard's container in a pod of UID `uid`: the one its mounts name, else the
 * pod's only long-running container; undefined when neither tells.
 */
export function ownContainer(spec: PodContainers, uid: string, mountinfo: string): string | undefined {
  const longRunning = [...(spec.containers ?? []), ...(spec.initContainers ?? []).filter((c) => c.restartPolicy === 'Always')].map(
    (c) => c.name,
  );
  const mounted = containersInMounts(mountinfo, uid).filter((n) => longRunning.includes(n));
  if (mounted.length === 1) return mounted[0];
  return longRunning.length === 1 ? longRunning[0] : undefined;
}
