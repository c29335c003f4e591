// The container's stop signal on a real node: a control plane and a kubelet
// of this file's own with ContainerStopSignals on (alpha in 1.33-1.37, off by
// default: the run's shared API server drops lifecycle.stopSignal), Debian's
// containerd, and drainguard in wrap mode (the release image's `install`) in
// front of the operator fixture, which takes SIGQUIT as a Go program does (its
// work interrupted, exit 2). The operator image is TOOLS_IMAGE with `STOPSIGNAL
// SIGQUIT`: the runtime stops the container with SIGQUIT.
// - lifecycle.stopSignal SIGQUIT beside it: drainguard reads it from its Pod,
//   drains at the kubelet's SIGQUIT, the 4 s reconcile completes, then
//   SIGTERM; exit 0. The control: the same pod without the right to read its
//   Pod: SIGQUIT only passed on, the reconcile lost, exit 2.
// - the image's STOPSIGNAL alone: what the Pod's status reports of it, and
//   DRAINGUARD_DRAIN_SIGNALS=SIGQUIT draining on it.
// - lifecycle.stopSignal on an image without STOPSIGNAL: which signal the
//   runtime sends.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { type TestCluster, privateCluster } from '../../support/cluster/index.ts';
import { type RealNode, startNode, toolsImageStoppedBy, wrapLogs, wrapPod, wrapStderr, wrapStdout } from '../../support/node/index.ts';
import { fixture } from '../../support/proc.ts';

const GATES = { ContainerStopSignals: true };
const QUIT_IMAGE = toolsImageStoppedBy('SIGQUIT');

let c: TestCluster;
let node: RealNode;
let ns: string;

test.before(async () => {
  ({ cluster: c } = await privateCluster({ featureGates: GATES }));
  node = await startNode(c, { featureGates: GATES, stopSignalImages: ['SIGQUIT'] });
  ns = (await c.namespace('stopsig')).name;
  await c.serviceAccount(ns, 'op');
  await c.grant(ns, 'op', 'op', [{ apiGroups: [''], resources: ['pods'], verbs: ['get'] }]);
  await c.serviceAccount(ns, 'blind');
});

const stdout = (pod: string) => wrapStdout(node, pod);
const logs = (pod: string) => wrapLogs(node, pod);
const timeline = (pod: string) => `${stdout(pod).join('\n')}\n${wrapStderr(node, pod).join('\n')}`;
const podPath = (name: string) => `/api/v1/namespaces/${ns}/pods/${name}`;

interface Run {
  readonly name: string;
  readonly serviceAccount: string;
  readonly image?: string;
  readonly stopSignal?: string;
  readonly env?: Record<string, string>;
}

interface Ended {
  /** The manager container's exit code, as the kubelet last reported it. */
  readonly exitCode: number | undefined;
  /** What the kubelet reported as the container's stop signal while it ran (containerStatuses[].stopSignal). */
  readonly reportedStopSignal: unknown;
  /** What the API server kept of the container's lifecycle.stopSignal. */
  readonly specStopSignal: unknown;
  readonly goneMs: number;
}

/** Starts the pod, waits for its reconcile and for drainguard's word on the stop signal, deletes it, waits until it is gone. */
async function runAndDelete(run: Run): Promise<Ended> {
  const { name } = run;
  await c.api.create(
    `/api/v1/namespaces/${ns}/pods`,
    wrapPod(node, {
      name,
      namespace: ns,
      serviceAccountName: run.serviceAccount,
      apiUrl: c.url,
      operator: fixture('operator.ts'),
      image: run.image,
      stopSignal: run.stopSignal,
      terminationGracePeriodSeconds: 20,
      env: { FIXTURE_WORK: '4000', FIXTURE_ON_QUIT: 'dump', DRAINGUARD_LOG_LEVEL: 'debug', ...run.env },
    }),
  );
  // Running, and drainguard done with the Pod's word on its stop signal (or with failing to get it).
  const settled = (l: { msg: string }) =>
    l.msg.startsWith("the container's stop signal") ||
    l.msg.startsWith('the Pod does not say') ||
    l.msg.startsWith("could not read the container's stop signal");
  await c.waitFor(
    () => stdout(name).includes('work start 0') && logs(name).some(settled),
    60_000,
    `the operator's reconcile started in ${name}, and drainguard's word on its stop signal`,
    () => `${node.tail()}\n${timeline(name)}`,
  );
  const running = await c.api.get(podPath(name));
  const manager = (list: { name: string }[] | undefined) => list?.find((x) => x.name === 'manager') as Record<string, any> | undefined;
  let exitCode: number | undefined;
  const stop = c.api.watch(`/api/v1/namespaces/${ns}/pods?fieldSelector=metadata.name%3D${name}`, (e) => {
    exitCode = manager(e.object?.status?.containerStatuses)?.state?.terminated?.exitCode ?? exitCode;
  });
  const t0 = Date.now();
  try {
    await c.api.delete(podPath(name));
    await c.waitFor(async () => (await c.api.get(podPath(name))) === undefined, 60_000, `pod ${name} gone`);
    return {
      exitCode,
      reportedStopSignal: manager(running.status?.containerStatuses)?.stopSignal,
      specStopSignal: manager(running.spec.containers)?.lifecycle?.stopSignal,
      goneMs: Date.now() - t0,
    };
  } finally {
    stop();
  }
}

/** What the operator printed from its reconcile's start on, and drainguard's termination line. */
function outcome(name: string) {
  const out = stdout(name);
  return {
    operator: out.slice(out.indexOf('work start 0')).filter((l) => /^(work|signal|goroutine)/.test(l)),
    signal: logs(name).find((l) => l.msg === 'termination requested')?.signal,
  };
}

test("lifecycle.stopSignal SIGQUIT on an image that says STOPSIGNAL SIGQUIT: drainguard reads it from its Pod and drains at the kubelet's SIGQUIT", async () => {
  const ended = await runAndDelete({ name: 'quit-read', serviceAccount: 'op', image: QUIT_IMAGE, stopSignal: 'SIGQUIT' });
  assert.is(ended.specStopSignal, 'SIGQUIT', 'the API server with the gate on keeps the field');
  const read = logs('quit-read').find((l) => l.msg.startsWith("the container's stop signal read from the Pod"));
  assert.equal([read?.container, read?.stopSignal, read?.from], ['manager', 'SIGQUIT', 'spec'], timeline('quit-read'));
  assert.equal(
    outcome('quit-read'),
    { operator: ['work start 0', 'work done 0', 'signal SIGTERM'], signal: 'SIGQUIT' },
    timeline('quit-read'),
  );
  assert.is(logs('quit-read').find((l) => l.msg === 'drain ended')?.outcome, 'drained');
  assert.is(ended.exitCode, 0, timeline('quit-read'));
  console.log(
    `lifecycle.stopSignal SIGQUIT + STOPSIGNAL SIGQUIT: drained, exit ${ended.exitCode}, pod gone ${ended.goneMs} ms after the delete; ` +
      `containerStatuses[].stopSignal ${JSON.stringify(ended.reportedStopSignal)}`,
  );
});

test('control: the same pod, drainguard without the right to read its Pod: SIGQUIT only passed on, the reconcile lost, exit 2', async () => {
  const ended = await runAndDelete({ name: 'quit-blind', serviceAccount: 'blind', image: QUIT_IMAGE, stopSignal: 'SIGQUIT' });
  assert.ok(
    logs('quit-blind').some((l) => l.msg.startsWith("could not read the container's stop signal")),
    timeline('quit-blind'),
  );
  assert.equal(
    outcome('quit-blind'),
    { operator: ['work start 0', 'signal SIGQUIT', 'work interrupted 0', 'goroutine dump'], signal: undefined },
    timeline('quit-blind'),
  );
  assert.is(ended.exitCode, 2, "the operator's SIGQUIT exit, passed through");
  console.log(`control: exit ${ended.exitCode}, pod gone ${ended.goneMs} ms after the delete`);
});

test("the image's STOPSIGNAL alone: what the Pod reports of it; DRAINGUARD_DRAIN_SIGNALS=SIGQUIT drains on it", async () => {
  const ended = await runAndDelete({
    name: 'quit-image',
    serviceAccount: 'op',
    image: QUIT_IMAGE,
    env: { DRAINGUARD_DRAIN_SIGNALS: 'SIGQUIT' },
  });
  assert.equal(
    outcome('quit-image'),
    { operator: ['work start 0', 'work done 0', 'signal SIGTERM'], signal: 'SIGQUIT' },
    timeline('quit-image'),
  );
  assert.is(ended.exitCode, 0, timeline('quit-image'));
  // The kubelet reports the runtime's answer: Debian's containerd 1.6 gives none (CRI's stop_signal came in containerd 2.1).
  const said = logs('quit-image').find((l) => l.msg.startsWith("the container's stop signal") || l.msg.startsWith('the Pod does not say'));
  assert.equal(said?.stopSignal, ended.reportedStopSignal, 'drainguard read what the status says');
  console.log(
    `STOPSIGNAL SIGQUIT alone: containerStatuses[].stopSignal ${JSON.stringify(ended.reportedStopSignal)}; ` +
      `with DRAINGUARD_DRAIN_SIGNALS drained, exit ${ended.exitCode}`,
  );
});

test('lifecycle.stopSignal SIGQUIT on an image without STOPSIGNAL: the signal the runtime sends, and drainguard drains at it', async () => {
  const ended = await runAndDelete({ name: 'quit-field', serviceAccount: 'op', stopSignal: 'SIGQUIT' });
  const { operator, signal } = outcome('quit-field');
  assert.equal(operator, ['work start 0', 'work done 0', 'signal SIGTERM'], timeline('quit-field'));
  assert.ok(signal === 'SIGQUIT' || signal === 'SIGTERM', `termination by ${String(signal)}`);
  assert.is(ended.exitCode, 0, timeline('quit-field'));
  console.log(
    `lifecycle.stopSignal SIGQUIT, no STOPSIGNAL: the runtime sent ${String(signal)}; ` +
      `containerStatuses[].stopSignal ${JSON.stringify(ended.reportedStopSignal)}; exit ${ended.exitCode}`,
  );
});

test.run();
