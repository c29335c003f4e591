// The installed wrapper in a root that holds nothing but what `drainguard
// install` wrote and a statically linked operator (busybox): no libc, no
// shell of the image's own, as in distroless/static or scratch.

import { readFileSync, readlinkSync, renameSync } from 'node:fs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { DrainClient } from '../../src/protocol/client.ts';
import { INSTALL_DIR, SOCKET_DIR, listTree, makeRoot, toldToDrain } from './support/chroot.ts';

const root = await makeRoot();
const SOCKET = `${SOCKET_DIR}/drain.sock`;
const LAUNCHER = `${INSTALL_DIR}/drainguard`;

// The operator: says ready, and on SIGTERM says so and exits 7 (so the status is visibly its own).
const OPERATOR = [
  '/bin/busybox',
  'sh',
  '-c',
  'trap \'echo "signal TERM"; exit 7\' TERM; echo "socket=$DRAINGUARD_SOCKET"; echo ready; while :; do /bin/busybox sleep 1 & wait $!; done',
];

test('the root holds only what install wrote, the operator and empty mount points', () => {
  const expected = [
    'bin/',
    'bin/busybox',
    'drainguard/',
    'drainguard/lib/',
    'proc/',
    'run/',
    'run/drainguard/',
    ...root.installed.files.map((f) => `drainguard/${f}`),
  ].sort();
  assert.equal(listTree(root.path), expected);
  assert.ok(root.installed.files.includes('lib/libc.so.6') && root.installed.files.includes('lib/ld-linux-x86-64.so.2'));
  assert.not.ok(
    listTree(root.path).some((f) => f.startsWith('lib') || f.startsWith('usr') || f.startsWith('etc')),
    'no libc of the root',
  );
});

for (const [variant, start] of [
  ['without /proc (the launcher finds itself from argv[0])', root.run],
  ['with /proc (the launcher finds itself from /proc/self/exe)', root.runWithProc],
] as const) {
  test(`a full drain and stop through the installed wrapper, ${variant}`, async () => {
    const p = start([LAUNCHER, 'run', '--', ...OPERATOR], { DRAINGUARD_SOCKET: SOCKET, DRAINGUARD_LOG_LEVEL: 'debug' });
    await p.line('ready');
    assert.ok(p.stdout.includes(`socket=${SOCKET}`), 'the operator got DRAINGUARD_SOCKET');
    // One process from the test's spawn to drainguard: chroot, the launcher and the loader all exec'd in place.
    assert.equal(readlinkSync(`/proc/${p.pid}/exe`), root.host(`${INSTALL_DIR}/lib/ld-linux-x86-64.so.2`));
    // What ps shows: the loader's command line; drainguard itself sees argv[0] = the launcher (--argv0).
    assert.equal(readFileSync(`/proc/${p.pid}/cmdline`, 'utf8').split('\0').slice(0, -1), [
      `${INSTALL_DIR}/lib/ld-linux-x86-64.so.2`,
      '--inhibit-cache',
      '--library-path',
      `${INSTALL_DIR}/lib`,
      '--argv0',
      LAUNCHER,
      `${INSTALL_DIR}/lib/drainguard`,
      'run',
      '--',
      ...OPERATOR,
    ]);

    const client = new DrainClient({ socketPath: root.host(SOCKET), name: 'operator' });
    try {
      await client.ready();
      const endWork = client.begin();
      p.kill('SIGTERM');
      await toldToDrain(client);
      await p.log('drain started');
      assert.not.ok(p.stdout.includes('signal TERM'), 'no stop signal while work is in flight');
      endWork();
      const exit = await p.exit();
      assert.equal(exit, { code: 7, signal: null }, "the operator's own exit status");
      const msgs = p.logs().map((l) => l.msg);
      assert.ok(
        msgs.indexOf('client drained') >= 0 && msgs.indexOf('client drained') < msgs.indexOf('stop signal sent'),
        p.stderr.join('\n'),
      );
      assert.equal(p.logs().find((l) => l.msg === 'drain ended')!.outcome, 'drained');
      assert.ok(p.stdout.includes('signal TERM'));
    } finally {
      client.close();
      p.killAll();
    }
  });
}

test('sidecar and prestop from the installed copy: prestop returns once the operator said drained', async () => {
  const sidecar = root.run([LAUNCHER, 'sidecar'], { DRAINGUARD_SOCKET: SOCKET, DRAINGUARD_HTTP_ADDR: '127.0.0.1:0' });
  await sidecar.log('sidecar ready');
  const client = new DrainClient({ socketPath: root.host(SOCKET), name: 'operator' });
  try {
    await client.ready();
    const endWork = client.begin();
    const prestop = root.run([LAUNCHER, 'prestop'], { DRAINGUARD_SOCKET: SOCKET });
    await toldToDrain(client);
    assert.equal(prestop.child.exitCode, null, 'prestop waits while work is in flight');
    endWork();
    assert.equal((await prestop.exit()).code, 0, prestop.stderr.join('\n'));
    assert.equal(prestop.logs().find((l) => l.msg === 'drain ended')?.outcome, 'drained', prestop.stderr.join('\n'));
  } catch (err) {
    sidecar.kill('SIGKILL');
    throw err;
  } finally {
    client.close();
  }
  sidecar.kill('SIGTERM');
  assert.equal((await sidecar.exit()).code, 0, sidecar.stderr.join('\n'));
});

test('the installed copy installs itself again (the image as an init container), without /proc', async () => {
  const copy = root.run([LAUNCHER, 'install', '/copy']);
  assert.equal((await copy.exit(60_000)).code, 0, copy.stderr.join('\n'));
  const files = copy.logs().find((l) => l.msg === 'installed')!.files as string[];
  assert.equal([...files].sort(), [...root.installed.files].sort());
  for (const f of files) {
    assert.ok(readFileSync(root.host(`/copy/${f}`)).equals(readFileSync(root.host(`${INSTALL_DIR}/${f}`))), `${f} differs`);
  }
  const version = root.run(['/copy/drainguard', '--version']);
  assert.equal((await version.exit()).code, 0);
  assert.match(version.stdout.join('\n'), /^drainguard \d/);
});

test('a broken installation says what is missing and exits 127', async () => {
  const copy = root.run([LAUNCHER, 'install', '/broken']);
  assert.equal((await copy.exit(60_000)).code, 0, copy.stderr.join('\n'));
  renameSync(root.host('/broken/lib/ld-linux-x86-64.so.2'), root.host('/broken/lib/moved'));
  const p = root.run(['/broken/drainguard', '--version']);
  assert.equal((await p.exit()).code, 127);
  assert.match(p.stderr.join('\n'), /cannot execute \/broken\/lib\/ld-linux-x86-64\.so\.2 \(errno 2\)/);

  const bare = root.run(['/bin/busybox', 'sh', '-c', 'cd /broken && exec -a drainguard ./drainguard --version']);
  assert.equal((await bare.exit()).code, 127);
  assert.match(bare.stderr.join('\n'), /cannot find its own directory/);
});

test.run();
