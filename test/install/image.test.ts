// The drainguard image (Containerfile, FROM scratch), built with podman and
// tested without starting a container: its root is mounted read-only and
// drainguard runs inside it with chroot, as the image's non-root user, with
// volumes where a pod would mount them.

import { chmodSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { VERSION } from '../../scripts/build-image.ts';
import { DrainClient } from '../../src/protocol/client.ts';
import { tempDir } from '../support/proc.ts';
import { BUSYBOX, listTree, runInstall, toldToDrain } from './support/chroot.ts';
import { buildAndMount, inspect } from './support/image.ts';
import { podRoot } from './support/pod-root.ts';

const image = await buildAndMount();
const reference = await runInstall(join(tempDir(), 'drainguard'));
const USER = '65532:65532';
const LAUNCHER = '/drainguard/drainguard';

/** An emptyDir: a fresh host directory every user may write to. */
const emptyDir = (): string => {
  const dir = tempDir();
  chmodSync(dir, 0o777);
  return dir;
};

test.after(() => image.remove());

test('the image holds exactly what install writes, runs as a non-root user, and has one layer', async () => {
  assert.equal(listTree(image.root), ['drainguard/', ...reference.files.map((f) => `drainguard/${f}`), 'drainguard/lib/'].sort());
  for (const f of reference.files) {
    assert.ok(readFileSync(join(image.root, 'drainguard', f)).equals(readFileSync(join(reference.dir, f))), `${f} differs from install's`);
  }
  const config = await inspect(image.tag);
  assert.equal(config.user, USER);
  assert.equal(config.entrypoint, [LAUNCHER]);
  assert.equal(config.layers, 1);
  assert.equal(config.labels['org.opencontainers.image.version'], VERSION);
});

test('as an init container: install /shared from the read-only image copies the same files', async () => {
  const shared = emptyDir();
  const pod = podRoot({ image: image.root, volumes: { '/shared': shared }, user: USER });
  const p = pod.run([LAUNCHER, 'install', '/shared']);
  assert.equal((await p.exit(60_000)).code, 0, p.stderr.join('\n'));
  assert.equal(listTree(shared), listTree(reference.dir));
  for (const f of reference.files) assert.ok(readFileSync(join(shared, f)).equals(readFileSync(join(reference.dir, f))), `${f} differs`);
});

test('as a sidecar: a full drain requested by prestop, then the sidecar stops', async () => {
  const socketDir = emptyDir();
  const pod = podRoot({ image: image.root, volumes: { '/run/drainguard': socketDir }, user: USER });
  const sidecar = pod.run([LAUNCHER, 'sidecar'], { DRAINGUARD_HTTP_ADDR: '127.0.0.1:0' });
  const client = new DrainClient({ socketPath: join(socketDir, 'drain.sock'), name: 'operator' });
  try {
    await sidecar.log('sidecar ready');
    await client.ready();
    const endWork = client.begin();
    const prestop = pod.run([LAUNCHER, 'prestop']);
    await sidecar.log('drain started');
    await toldToDrain(client);
    assert.equal(prestop.child.exitCode, null, 'prestop waits while work is in flight');
    endWork();
    assert.equal((await prestop.exit()).code, 0, prestop.stderr.join('\n'));
    assert.equal(prestop.logs().find((l) => l.msg === 'drain ended')?.outcome, 'drained');
    client.close();
    sidecar.kill('SIGTERM');
    assert.equal((await sidecar.exit()).code, 0, sidecar.stderr.join('\n'));
  } finally {
    client.close();
    sidecar.kill('SIGKILL');
  }
});

test('as the wrapper: a full drain and stop of an operator in the same root', async () => {
  const socketDir = emptyDir();
  const pod = podRoot({ image: image.root, volumes: { '/run/drainguard': socketDir }, files: { '/bin/busybox': BUSYBOX }, user: USER });
  const script = 'trap \'echo "signal TERM"; exit 7\' TERM; echo ready; while :; do /bin/busybox sleep 1 & wait $!; done';
  const p = pod.run([LAUNCHER, 'run', '--', '/bin/busybox', 'sh', '-c', script], { DRAINGUARD_SOCKET: '/run/drainguard/drain.sock' });
  const client = new DrainClient({ socketPath: join(socketDir, 'drain.sock'), name: 'operator' });
  try {
    await p.line('ready');
    await client.ready();
    const endWork = client.begin();
    p.kill('SIGTERM');
    await toldToDrain(client);
    await p.log('drain started');
    assert.not.ok(p.stdout.includes('signal TERM'));
    endWork();
    assert.equal((await p.exit()).code, 7);
    assert.equal(p.logs().find((l) => l.msg === 'drain ended')?.outcome, 'drained');
    assert.ok(p.stdout.includes('signal TERM'));
  } finally {
    client.close();
    p.killAll();
  }
});

test.run();
