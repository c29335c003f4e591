// drainguard's container and its stop signal, as its Pod tells them: the
// container found by the kubelet's per-container mount in /proc/self/mountinfo
// (lines written here from the layout of proc(5) and the kubelet's
// getPodContainerDir), the spec's lifecycle.stopSignal at once, the status's
// once the kubelet has reported the container, with a client the test plays.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { KubeClient } from '../../src/kube/client.ts';
import { KubeUnreachableError } from '../../src/kube/errors.ts';
import { containersInMounts, ownContainer } from '../../src/kube/own-container.ts';
import { containerStopSignal } from '../../src/kube/pod.ts';

const UID = '6f1c2b9e-0d7a-4c1e-9a57-2f0c8e4b1d33';
const POD = { name: 'op-0', namespace: 'ns' };

/** mountinfo of a container of pod UID named `name`: its root, /etc/hosts (the pod's), its termination log (its own). */
const mountinfo = (name: string, kubeletDir = '/var/lib/kubelet') =>
  [
    '1530 1460 0:312 / / rw,relatime master:512 - overlay overlay rw,lowerdir=/var/lib/containerd/x/fs',
    `1531 1530 254:1 ${kubeletDir}/pods/${UID}/etc-hosts /etc/hosts rw,relatime - ext4 /dev/vda1 rw`,
    `1532 1530 254:1 ${kubeletDir}/pods/${UID}/containers/${name}/1c2d3e4f /dev/termination-log rw,relatime - ext4 /dev/vda1 rw`,
    `1533 1530 254:1 ${kubeletDir}/pods/${UID}/volumes/kubernetes.io~empty-dir/drainguard /drainguard ro - ext4 /dev/vda1 rw`,
    '',
  ].join('\n');

test("the container's name from its termination-log mount, on the root filesystem or below a mounted kubelet directory", () => {
  assert.equal(containersInMounts(mountinfo('manager'), UID), ['manager']);
  // /var/lib/kubelet on a filesystem of its own: the root field starts below it.
  assert.equal(containersInMounts(mountinfo('manager', ''), UID), ['manager']);
  assert.equal(containersInMounts(mountinfo('manager', '/tmp/drainguard-node-x/kubelet'), UID), ['manager']);
  assert.equal(containersInMounts(mountinfo('manager'), 'another-uid'), [], "another pod's mounts name no container of this one");
  assert.equal(containersInMounts('', UID), []);
});

test('own container: the mounts, else the only long-running one; none when neither tells', () => {
  const wrap = { containers: [{ name: 'manager' }], initContainers: [{ name: 'drainguard-install' }] };
  const native = { containers: [{ name: 'manager' }], initContainers: [{ name: 'drainguard', restartPolicy: 'Always' }] };
  assert.is(ownContainer(wrap, UID, ''), 'manager', 'the only container: no mount needed');
  assert.is(ownContainer(native, UID, mountinfo('drainguard')), 'drainguard', 'a native sidecar, by its mount');
  assert.is(ownContainer(native, UID, mountinfo('manager')), 'manager');
  assert.is(ownContainer(native, UID, ''), undefined, 'two long-running containers and no mount: cannot tell');
  assert.is(
    ownContainer(native, UID, mountinfo('drainguard-install')),
    undefined,
    'an init container that ran to completion is no one to drain',
  );
});

/** A client whose GETs answer in turn from `answers` (an Error is thrown). */
function played(...answers: (object | Error)[]) {
  let calls = 0;
  const client = {
    get: async () => {
      calls++;
      const a = answers.shift();
      if (a === undefined) throw new Error('no more answers');
      if (a instanceof Error) throw a;
      return a;
    },
  } as unknown as KubeClient;
  return { client, calls: () => calls };
}

const pod = (container: object, status?: object) => ({
  metadata: { name: 'op-0', uid: UID },
  spec: { containers: [{ name: 'manager', ...container }] },
  status: { containerStatuses: status ? [{ name: 'manager', ...status }] : [] },
});
const read = (client: KubeClient, mounts = '') => containerStopSignal(client, POD, mounts, new AbortController().signal, 1);

test("the spec's lifecycle.stopSignal at the first read, before the kubelet reported anything", async () => {
  const { client, calls } = played(pod({ lifecycle: { stopSignal: 'SIGQUIT' } }));
  assert.equal(await read(client), { container: 'manager', signal: 'SIGQUIT', from: 'spec' });
  assert.is(calls(), 1);
});

test("the status's stopSignal (the runtime's: an image STOPSIGNAL), read again until the kubelet has reported the container", async () => {
  const waiting = { state: { waiting: { reason: 'ContainerCreating' } } };
  const { client, calls } = played(pod({}), pod({}, waiting), pod({}, { state: { running: {} }, stopSignal: 'SIGINT' }));
  assert.equal(await read(client), { container: 'manager', signal: 'SIGINT', from: 'status' });
  assert.is(calls(), 3);
});

test('running with no stopSignal reported (the gate off, or a runtime that does not say it): known container, no signal', async () => {
  const { client, calls } = played(pod({}, { state: { running: {} } }));
  assert.equal(await read(client), { container: 'manager' });
  assert.is(calls(), 1);
});

test('several containers and no mount naming one: the containers, no signal; a failed read is tried again, three in a row fail', async () => {
  const two = { metadata: { name: 'op-0', uid: UID }, spec: { containers: [{ name: 'manager' }, { name: 'proxy' }] } };
  assert.equal(await read(played(two).client), { containers: ['manager', 'proxy'] });
  const down = () => new KubeUnreachableError('GET pod/ns/op-0', 'https://api', 'ECONNREFUSED');
  const flaky = played(down(), pod({ lifecycle: { stopSignal: 'SIGHUP' } }));
  assert.equal(await read(flaky.client), { container: 'manager', signal: 'SIGHUP', from: 'spec' });
  const failing = played(down(), down(), down(), pod({}));
  await read(failing.client).then(
    () => assert.unreachable('three failed reads in a row reject'),
    (err: Error) => assert.match(err.message, /cannot reach the Kubernetes API at https:\/\/api: ECONNREFUSED/),
  );
  assert.is(failing.calls(), 3);
});

test.run();
