// As a container's entrypoint drainguard's launcher is PID 1 of a PID namespace
// of its own, and every orphan of the container is re-parented to it. Here as
// in a pod: a fresh PID namespace (unshare --pid), the read-only root of what
// `drainguard install` writes with a busybox operator, the image's non-root
// user. The operator leaves grandchildren behind; once they exit, none may
// stay a zombie (tini's reaping test), and the operator's exit status, its
// code or its signal, is still drainguard's and the container's. The control:
// drainguard itself as PID 1 (the loader started as the launcher used to exec
// it, in place) reaps none of them, and says so.

import { chmodSync, readFileSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Proc, tempDir } from '../../support/proc.ts';
import { BUSYBOX, INSTALL_DIR, SOCKET_DIR, runInstall } from '../../install/support/chroot.ts';
import { nsInit, podRoot } from '../../install/support/pod-root.ts';
import { OPERATOR, ORPHANS, PidNamespace, ProcessTree, leaveOrphans } from './support/orphans.ts';

const image = tempDir();
chmodSync(image, 0o755);
const installed = await runInstall(join(image, INSTALL_DIR));
const LAUNCHER = `${INSTALL_DIR}/drainguard`;
/** What the launcher execs (src/install/launcher.S): drainguard without the launcher in front. */
const LOADER_IN_PLACE = [
  `${INSTALL_DIR}/lib/ld-linux-x86-64.so.2`,
  '--inhibit-cache',
  '--library-path',
  `${INSTALL_DIR}/lib`,
  '--argv0',
  LAUNCHER,
  `${INSTALL_DIR}/lib/drainguard`,
];
const ENV = { DRAINGUARD_SOCKET: `${SOCKET_DIR}/drain.sock` };
const NO_REAPER = 'drainguard is PID 1 and cannot reap orphaned processes';

/** A pod's container: the image read-only, an emptyDir for the socket, the image's user, a PID namespace of its own. */
function container(argv: readonly string[]): Proc {
  const socketDir = tempDir();
  chmodSync(socketDir, 0o777);
  const pod = podRoot({
    image,
    volumes: { [SOCKET_DIR]: socketDir },
    files: { '/bin/busybox': BUSYBOX },
    user: '65532:65532',
    pidNamespace: true,
  });
  return pod.run(argv, ENV);
}

test("as PID 1 the launcher reaps every orphan, and drainguard below it still drains and exits with the operator's code", async () => {
  const p = container([LAUNCHER, 'run', '--', ...OPERATOR]);
  try {
    await p.line('ready', 30_000);
    const init = nsInit(p);
    const ns = new PidNamespace(init);
    const { orphans, zombies } = await leaveOrphans(p, ns, 1, init);
    assert.equal(zombies, [], `zombies left: ${JSON.stringify(zombies)}`);
    assert.ok(
      orphans.every((pid) => !ns.processes().some((x) => x.pid === pid)),
      'every orphan reaped',
    );
    assert.not.ok(
      p.logs().some((l) => l.msg.startsWith(NO_REAPER)),
      p.stderr.join('\n'),
    );

    // PID 1 is the launcher; drainguard (the loader) its child; the operator drainguard's child.
    assert.is(readlinkSync(`/proc/${init}/exe`), readlinkSync(`/proc/${init}/root`) + LAUNCHER);
    const operator = (await p.log('operator started')).pid as number;
    const drainguard = ns.processes().find((x) => x.pid === operator)!.ppid;
    assert.is(ns.processes().find((x) => x.pid === drainguard)?.ppid, 1);
    assert.equal(
      readFileSync(`/proc/${ns.hostPid(drainguard)}/cmdline`, 'utf8')
        .split('\0')
        .slice(0, LOADER_IN_PLACE.length),
      LOADER_IN_PLACE,
    );

    // SIGTERM to PID 1, as the kubelet sends it: passed on to drainguard, which drains and stops the operator.
    process.kill(init, 'SIGTERM');
    assert.equal(await p.exit(), { code: 7, signal: null }, "the operator's code is the container's");
    assert.ok(p.stdout.includes('signal TERM'));
    assert.equal(p.logs().filter((l) => l.msg === 'termination requested').length, 1, 'one SIGTERM reached drainguard');
    const exited = p.logs().find((l) => l.msg === 'operator exited');
    assert.equal([exited?.status, exited?.code], [7, 7], p.stderr.join('\n'));
  } finally {
    p.killAll();
  }
});

test("as PID 1 the launcher passes on drainguard's 128+N when the operator dies of signal N", async () => {
  const p = container([LAUNCHER, 'run', '--', ...OPERATOR]);
  try {
    await p.line('ready', 30_000);
    // SIGUSR1 to PID 1 goes to drainguard, then to the operator, which SIGKILLs itself.
    process.kill(nsInit(p), 'SIGUSR1');
    assert.equal(await p.exit(), { code: 128 + 9, signal: null });
    const exited = p.logs().find((l) => l.msg === 'operator exited by itself');
    assert.equal([exited?.status, exited?.signal], [137, 'SIGKILL'], p.stderr.join('\n'));
  } finally {
    p.killAll();
  }
});

test('control: drainguard itself as PID 1 leaves every orphan a zombie, and says that it cannot reap them', async () => {
  const p = container([...LOADER_IN_PLACE, 'run', '--', ...OPERATOR]);
  try {
    await p.line('ready', 30_000);
    const init = nsInit(p);
    const ns = new PidNamespace(init);
    assert.is(readlinkSync(`/proc/${init}/exe`), readlinkSync(`/proc/${init}/root`) + LOADER_IN_PLACE[0]);
    const { orphans, zombies } = await leaveOrphans(p, ns, 1, init);
    assert.equal(
      zombies.filter((z) => orphans.includes(z.pid)).map((z) => [z.pid, z.ppid, z.state]),
      orphans.map((pid) => [pid, 1, 'Z']),
    );
    assert.ok(zombies.length >= ORPHANS);
    assert.ok(
      p.logs().some((l) => l.level === 'warn' && l.msg.startsWith(NO_REAPER)),
      p.stderr.join('\n'),
    );
    process.kill(init, 'SIGTERM');
    assert.equal(await p.exit(), { code: 7, signal: null });
  } finally {
    p.killAll();
  }
});

test('as a child subreaper (not PID 1) the launcher reaps the orphans re-parented to it', async () => {
  // A subreaper that execs the launcher, as a process manager does; Python's ctypes makes the call.
  const SUBREAPER = `import ctypes, os, sys
if ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) != 0: raise OSError(ctypes.get_errno(), 'PR_SET_CHILD_SUBREAPER')
os.execv(sys.argv[1], sys.argv[1:])`;
  const p = new Proc('python3', ['-c', SUBREAPER, join(installed.dir, 'drainguard'), 'run', '--', ...OPERATOR]);
  try {
    const { zombies } = await leaveOrphans(p, new ProcessTree(p.pid), p.pid, p.pid);
    assert.equal(zombies, [], `zombies left: ${JSON.stringify(zombies)}`);
    // The process the test started: the launcher, exec'd by the subreaper in place, and the init of drainguard below it.
    assert.is(readlinkSync(`/proc/${p.pid}/exe`), join(installed.dir, 'drainguard'));
    p.kill('SIGTERM');
    assert.equal(await p.exit(), { code: 7, signal: null });
  } finally {
    p.killAll();
  }
});

test.run();
