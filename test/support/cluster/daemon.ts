// The shared control plane of one test run, as a process of its own: the
// runner starts it, reads `ready STATE_FILE` from its stdout, and ends it by
// closing its stdin (also what happens when the runner dies, however) or by
// SIGTERM/SIGINT. It then stops etcd, kube-apiserver and kube-controller-manager
// and removes their directory.

import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startControlPlane, stateOf } from './control-plane.ts';

// Asked to stop while still starting: it stops as soon as it has started.
let stopRequested = false;
let stop = () => void (stopRequested = true);
process.stdin
  .on('end', () => stop())
  .on('close', () => stop())
  .resume();
process.on('SIGTERM', () => stop()).on('SIGINT', () => stop());

const cp = await startControlPlane();
let stopping: Promise<void> | undefined;
stop = () => {
  stopping ??= cp.stop().then(() => process.exit(0));
};
if (stopRequested) stop();
else {
  const stateFile = join(cp.dir, 'state.json');
  writeFileSync(stateFile, JSON.stringify(stateOf(cp)));
  process.stdout.write(`ready ${stateFile} ${cp.startMs}ms pids ${cp.pids().join(',')}\n`);
}
