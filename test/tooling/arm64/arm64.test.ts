// The linux/arm64 executable (dist/drainguard-linux-arm64), run by qemu-user:
// its version, a full drain of an arm64 operator, and `install` into a root
// that holds nothing but what it wrote and the operator, run there through
// the arm64 launcher, also as PID 1, where it reaps orphans. Each arm64 start
// costs about a second under emulation, so the cases are few.

import { copyFileSync, mkdirSync, readFileSync, readlinkSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { LAUNCHER_IMAGES } from '../../../src/install/launcher-image.ts';
import { emulated } from '../../../scripts/emulation.ts';
import { Proc, drainguard, tempDir } from '../../support/proc.ts';
import { BUSYBOX, listTree } from '../../install/support/chroot.ts';
import { nsInit } from '../../install/support/pod-root.ts';
import { OPERATOR, PidNamespace, leaveOrphans } from '../../scenarios/reap/support/orphans.ts';
import { AARCH64, EXE_ARM64, arm64, buildGoExample, elfMachine } from './support/arm64.ts';

const START_MS = 60_000;
const EXAMPLE = buildGoExample();
const WORK = ['-workers', '3', '-min', '300ms', '-max', '900ms'];
const ids = (p: Proc, what: string) => p.stdout.filter((l) => l.startsWith(`reconcile ${what} `)).map((l) => l.split(' ')[2]);

test('the executable and the operator are arm64 programs: without emulation they do not run here', async () => {
  assert.is(elfMachine(EXE_ARM64), AARCH64);
  assert.is(elfMachine(EXAMPLE), AARCH64);
  // The kernel refuses it (ENOEXEC); execvp then hands it to /bin/sh as a script, which fails.
  const p = new Proc(EXE_ARM64, ['--version']);
  assert.is.not((await p.exit()).code, 0);
  assert.equal(
    p.stdout.filter((l) => l !== ''),
    [],
  );
});

test('--version: the same drainguard and Node.js as the x86-64 executable, and the runtime says arm64', async () => {
  const native = drainguard(['--version']);
  const emulatedRun = arm64([EXE_ARM64, '--version']);
  assert.is((await emulatedRun.exit(START_MS)).code, 0, emulatedRun.stderr.join('\n'));
  assert.is((await native.exit()).code, 0);
  assert.match(emulatedRun.stdout[0]!, /^drainguard \d+\.\d+\.\d+ commit \S+ \(node v24\.\d+\.\d+\)$/);
  assert.equal(emulatedRun.stdout, native.stdout);
});

test('run: a full drain of an arm64 operator, every reconcile in flight finishes before the stop signal', async () => {
  const p = arm64([EXE_ARM64, 'run', '--', EXAMPLE, ...WORK]);
  try {
    await p.line('ready', START_MS);
    await p.line(/^reconcile start 3$/, START_MS);
    // The process the test started is drainguard itself, run by qemu (exec'd in place by unshare and sh).
    assert.match(readlinkSync(`/proc/${p.pid}/exe`), /qemu-aarch64-static$/);
    p.kill('SIGTERM');
    assert.equal(await p.exit(START_MS), { code: 0, signal: null });
    assert.equal(ids(p, 'done').sort(), ids(p, 'start').sort(), 'every started reconcile finished');
    assert.equal(ids(p, 'interrupted'), []);
    const msgs = p.logs().map((l) => l.msg);
    assert.ok(
      msgs.indexOf('client drained') >= 0 && msgs.indexOf('client drained') < msgs.indexOf('stop signal sent'),
      p.stderr.join('\n'),
    );
    assert.is(p.logs().find((l) => l.msg === 'drain ended')?.outcome, 'drained');
  } finally {
    p.killAll();
  }
});

test("control: without drainguard, SIGTERM interrupts the arm64 operator's reconciles", async () => {
  const p = arm64([EXAMPLE, '-workers', '2', '-min', '20s', '-max', '20s']);
  try {
    await p.line(/^reconcile start 2$/, START_MS);
    p.kill('SIGTERM');
    assert.is((await p.exit(START_MS)).code, 0);
    assert.equal(ids(p, 'interrupted').sort(), ['1', '2']);
    assert.not.ok(p.stdout.includes('drain received'));
  } finally {
    p.killAll();
  }
});

test('install into a bare root, then a full drain through the installed arm64 launcher', async () => {
  const root = tempDir();
  const install = arm64([EXE_ARM64, 'install', join(root, 'drainguard')]);
  assert.is((await install.exit(START_MS * 2)).code, 0, install.stderr.join('\n'));
  const files = install.logs().find((l) => l.msg === 'installed')!.files as string[];
  assert.equal([...files].sort(), [
    'drainguard',
    'lib/drainguard',
    'lib/ld-linux-aarch64.so.1',
    'lib/libc.so.6',
    'lib/libdl.so.2',
    'lib/libgcc_s.so.1',
    'lib/libm.so.6',
    'lib/libpthread.so.0',
    'lib/libstdc++.so.6',
  ]);
  // The aarch64 launcher, and arm64 glibc (Debian's multiarch libc6:arm64), not the machine's own.
  assert.ok(readFileSync(join(root, 'drainguard/drainguard')).equals(LAUNCHER_IMAGES.arm64!), 'the arm64 launcher');
  for (const f of files) assert.is(elfMachine(join(root, 'drainguard', f)), AARCH64, f);
  assert.is(statSync(join(root, 'drainguard/lib/drainguard')).size, statSync(EXE_ARM64).size);

  mkdirSync(join(root, 'bin'));
  copyFileSync(EXAMPLE, join(root, 'bin/example'));
  mkdirSync(join(root, 'run/drainguard'), { recursive: true });
  const expected = [
    'bin/',
    'bin/example',
    'drainguard/',
    'drainguard/lib/',
    'run/',
    'run/drainguard/',
    ...files.map((f) => `drainguard/${f}`),
  ];
  assert.equal(listTree(root), expected.sort(), 'nothing but what install wrote, the operator and a mount point');

  const p = arm64(['chroot', root, '/drainguard/drainguard', 'run', '--', '/bin/example', ...WORK], {
    DRAINGUARD_SOCKET: '/run/drainguard/drain.sock',
  });
  try {
    await p.line('ready', START_MS);
    // One process: chroot, the launcher and the loader each exec'd in place.
    const cmdline = readFileSync(`/proc/${p.pid}/cmdline`, 'utf8').split('\0');
    assert.ok(
      cmdline.includes('/drainguard/lib/ld-linux-aarch64.so.1') &&
        cmdline.includes('--argv0') &&
        cmdline.includes('/drainguard/lib/drainguard'),
      cmdline.join(' '),
    );
    await p.line(/^reconcile start 3$/, START_MS);
    p.kill('SIGTERM');
    assert.equal(await p.exit(START_MS), { code: 0, signal: null });
    assert.equal(ids(p, 'done').sort(), ids(p, 'start').sort());
    assert.is(p.logs().find((l) => l.msg === 'drain ended')?.outcome, 'drained', p.stderr.join('\n'));
    assert.is(p.logs().find((l) => l.msg === 'operator started')?.socket, '/run/drainguard/drain.sock');
  } finally {
    p.killAll();
  }
});

test("as PID 1 of a PID namespace the installed arm64 launcher reaps every orphan, and the operator's code is the exit status", async () => {
  const root = tempDir();
  const install = arm64([EXE_ARM64, 'install', join(root, 'drainguard')]);
  assert.is((await install.exit(START_MS * 2)).code, 0, install.stderr.join('\n'));
  for (const dir of ['bin', 'dev', 'proc', 'run/drainguard']) mkdirSync(join(root, dir), { recursive: true });
  copyFileSync(BUSYBOX, join(root, 'bin/busybox'));
  writeFileSync(join(root, 'dev/null'), '');
  // /proc of the new PID namespace, and /dev/null for busybox sh's background jobs.
  const setup = `mount --bind /dev/null ${root}/dev/null && exec chroot ${root} /bin/busybox sh -c '/bin/busybox mount -t proc proc /proc && exec "$@"' sh "$@"`;
  const [file, ...args] = emulated('arm64', [
    'unshare',
    '--pid',
    '--fork',
    '/bin/sh',
    '-c',
    setup,
    'sh',
    '/drainguard/drainguard',
    'run',
    '--',
    ...OPERATOR,
  ]);
  const p = new Proc(file, args, { DRAINGUARD_SOCKET: '/run/drainguard/drain.sock' }, { ownPidNamespace: true });
  try {
    await p.line('ready', START_MS);
    const init = nsInit(p);
    const { zombies } = await leaveOrphans(p, new PidNamespace(init), 1, init);
    assert.equal(zombies, [], `zombies left: ${JSON.stringify(zombies)}`);
    process.kill(init, 'SIGTERM');
    assert.equal(await p.exit(START_MS), { code: 7, signal: null }, p.stderr.join('\n'));
    assert.ok(p.stdout.includes('signal TERM'));
  } finally {
    p.killAll();
  }
});

test.run();
