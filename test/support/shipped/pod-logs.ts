// The containers' logs of a namespace on a real node, kept past their pods:
// the kubelet writes them under its podLogsDir (NAMESPACE_POD_UID/CONTAINER/N.log,
// CRI format) and removes them within a second of the pod's deletion, and a
// shipped operator's image has no shell to copy its output elsewhere. Each
// log file is hard-linked into a directory of ours as soon as it appears:
// containerd goes on writing to the same inode, the kubelet's removal takes
// only its own name, and what the operator printed until its last line is
// read from our link.

import { existsSync, linkSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RealNode } from '../node/index.ts';

export interface PodLogs {
  /** The message lines CONTAINER of every pod whose name starts with POD printed, in the order of the files (pod by pod). */
  lines(pod: string, container: string): string[];
  stop(): void;
}

/** A directory's entries; none once the kubelet removed it. */
function entries(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

/** Follows NAMESPACE's containers' logs on NODE, every 50 ms, until stop(). */
export function followPodLogs(node: RealNode, namespace: string): PodLogs {
  const kept = mkdtempSync(join(tmpdir(), 'drainguard-pod-logs-'));
  const linked = new Set<string>();
  const scan = () => {
    if (!existsSync(node.podLogsDir)) return;
    for (const pod of readdirSync(node.podLogsDir).filter((d) => d.startsWith(`${namespace}_`))) {
      const podDir = join(node.podLogsDir, pod);
      const containers = entries(podDir);
      for (const container of containers) {
        const files = entries(join(podDir, container)).filter((f) => /^\d+\.log$/.test(f));
        for (const file of files) {
          // NAMESPACE_POD_UID: the pod's name is what lies between the namespace and the uid.
          const podName = pod.slice(namespace.length + 1, pod.lastIndexOf('_'));
          const link = `${podName}~${container}~${pod.slice(pod.lastIndexOf('_') + 1)}~${file}`;
          if (linked.has(link)) continue;
          try {
            linkSync(join(podDir, container, file), join(kept, link));
            linked.add(link);
          } catch {}
        }
      }
    }
  };
  const timer = setInterval(scan, 50);
  return {
    lines(pod, container) {
      scan();
      return [...linked]
        .filter((l) => l.startsWith(pod) && l.split('~')[1] === container)
        .flatMap((l) => readFileSync(join(kept, l), 'utf8').split('\n'))
        .filter(Boolean)
        .map((l) => l.split(' ').slice(3).join(' '));
    },
    stop() {
      clearInterval(timer);
      rmSync(kept, { recursive: true, force: true });
    },
  };
}
