// A kube-scheduler of one test file's own against the run's control plane,
// which runs none: leader election off, one profile whose schedulerName is
// `drainguard-test-xxxxxxxx`, so that it schedules (and preempts for) only the
// pods that name it; other files' pods, bound by spec.nodeName, are untouched.
// Its binary is the release's, beside the API server's (KUBEBUILDER_ASSETS,
// else the pinned release: `npm run k8s` adds it to a cache built without it).
// Stopped at the end of the file.
//
//   const scheduler = await startScheduler(cluster);
//   pod.spec.schedulerName = scheduler.name;

import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Daemon, executable } from '../daemon-process.ts';
import { onFileEnd } from '../file-end.ts';
import { builtRelease, pinnedRelease, releaseDir } from '../kubernetes/build.ts';
import type { TestCluster } from './index.ts';

export interface Scheduler {
  /** The schedulerName its profile answers to: a pod's spec.schedulerName. */
  readonly name: string;
  /** Its log so far (--v=2: each binding and preemption). */
  log(): string;
  /** Its last lines, for a failure's message. */
  tail(): string;
  stop(): Promise<void>;
}

/** The kube-scheduler of ENV's release, or why there is none. */
export function locateScheduler(env: NodeJS.ProcessEnv = process.env): string | { missing: string } {
  const assets = env.KUBEBUILDER_ASSETS || builtRelease(pinnedRelease()) || releaseDir(pinnedRelease());
  const file = join(assets, 'kube-scheduler');
  if (!executable(file)) return { missing: `no kube-scheduler in ${assets}: npm run k8s -- RELEASE adds it to a cache built before it` };
  return file;
}

/**
 * Starts a scheduler on `cluster` as its admin. It reports nothing when ready (no serving port:
 * --secure-port=0): a test waits for its pods to be bound, with tail() in the message.
 */
export function startScheduler(cluster: TestCluster): Scheduler {
  const file = locateScheduler();
  if (typeof file !== 'string') throw new Error(`no kube-scheduler: ${file.missing}`);
  const name = `drainguard-test-${randomBytes(4).toString('hex')}`;
  const dir = mkdtempSync(join(cluster.dir, 'scheduler-'));
  const config = join(dir, 'config.yaml');
  writeFileSync(
    config,
    `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection: { kubeconfig: '${cluster.adminKubeconfig}' }
leaderElection: { leaderElect: false }
profiles: [{ schedulerName: ${name} }]
`,
  );
  const log = join(dir, 'kube-scheduler.log');
  const daemon = new Daemon('kube-scheduler', file, [`--config=${config}`, '--secure-port=0', '--v=2'], log);
  const onExit = () => daemon.killNow();
  process.once('exit', onExit);
  daemon.start();
  const stop = async () => {
    process.off('exit', onExit);
    await daemon.stop();
  };
  onFileEnd(stop);
  return {
    name,
    log: () => readFileSync(log, 'utf8'),
    tail: () => `--- kube-scheduler ${daemon.running ? '' : '(exited) '}\n${daemon.tail()}`,
    stop,
  };
}
