// drainguard in a container of a real node (test/support/node): the release
// image's `install` copies it into the pod (deploy/components/install), it
// runs the operator fixture in wrap mode (deploy/components/wrap), and what
// stops it is the kubelet's own SIGTERM and SIGKILL. The Pod's spec says 30 s;
// the deletion says less:
// - `gracePeriodSeconds: 4`: drainguard reads the deletion from its Pod, cuts
//   the drain of an 8 s reconcile to it, stops the operator and exits before
//   the kubelet's SIGKILL. The control: the same with no right to read its Pod,
//   it goes by the spec's 30 s and the kubelet kills it at 4 s (exit 137).
// drainguard's output (and the operator's, passed through) goes to a file on
// the host: the kubelet removes a pod's logs with the pod.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { TestCluster } from '../../support/cluster/index.ts';
import { type RealNode, nodeWithNamespace, wrapLogs, wrapPod, wrapStderr, wrapStdout } from '../../support/node/index.ts';
import { fixture } from '../../support/proc.ts';

let c: TestCluster;
let node: RealNode;
let ns: string;

test.before(async () => {
  ({ c, node, ns } = await nodeWithNamespace('real-dg'));
  await c.serviceAccount(ns, 'op');
  await c.grant(ns, 'op', 'op', [{ apiGroups: [''], resources: ['pods'], verbs: ['get'] }]);
  await c.serviceAccount(ns, 'blind');
});

const operatorPod = (name: string, serviceAccountName: string) =>
  wrapPod(node, {
    name,
    namespace: ns,
    serviceAccountName,
    apiUrl: c.url,
    operator: fixture('operator.ts'),
    env: { FIXTURE_WORK: '8000' },
  });
const stdout = (pod: string) => wrapStdout(node, pod);
const logs = (pod: string) => wrapLogs(node, pod);
const read = (file: string) => wrapStderr(node, file.replace(/\.err$/, ''));
const podPath = (name: string) => `/api/v1/namespaces/${ns}/pods/${name}`;

interface Ended {
  /** The manager container's exit code, as the kubelet last reported it. */
  readonly exitCode: number | undefined;
  /** Milliseconds from the delete to the Pod gone from the API. */
  readonly goneMs: number;
}

/** Starts the pod, waits for its reconcile to run, deletes it with `options`, and waits until it is gone. */
async function runAndDelete(name: string, serviceAccount: string, options: Record<string, unknown>): Promise<Ended> {
  await c.api.create(`/api/v1/namespaces/${ns}/pods`, operatorPod(name, serviceAccount));
  await c.waitFor(
    () => stdout(name).includes('work start 0'),
    60_000,
    `the operator's reconcile started in ${name}`,
    () => `${node.tail()}\n${read(`${name}.err`).join('\n')}`,
  );
  let exitCode: number | undefined;
  const stop = c.api.watch(`/api/v1/namespaces/${ns}/pods?fieldSelector=metadata.name%3D${name}`, (e) => {
    const s = e.object?.status?.containerStatuses?.find((x: { name: string }) => x.name === 'manager');
    exitCode = s?.state?.terminated?.exitCode ?? exitCode;
  });
  const t0 = Date.now();
  try {
    await c.api.delete(podPath(name), options);
    await c.waitFor(async () => (await c.api.get(podPath(name))) === undefined, 60_000, `pod ${name} gone`);
    return { exitCode, goneMs: Date.now() - t0 };
  } finally {
    stop();
  }
}

test("deleted with gracePeriodSeconds 4 (the spec says 30): drainguard fits the drain to the deletion, the operator gets its SIGTERM from drainguard, drainguard exits before the kubelet's SIGKILL", async () => {
  const ended = await runAndDelete('fitted', 'op', { gracePeriodSeconds: 4 });
  const log = logs('fitted');
  const timeline = () => `${stdout('fitted').join('\n')}\n${read('fitted.err').join('\n')}`;
  const deletion = log.find((l) => l.msg === 'deletion read from the Pod');
  assert.ok(deletion, timeline());
  assert.is(deletion.deletionGracePeriodMs, 4000);
  assert.is(log.find((l) => l.msg === 'drain ended')?.outcome, 'deadline', 'an 8 s reconcile cannot finish in 4 s');
  assert.ok(stdout('fitted').includes('signal SIGTERM'), `the operator got its stop signal from drainguard:\n${timeline()}`);
  assert.is(ended.exitCode, 0, `drainguard exited by itself, not killed by the kubelet:\n${timeline()}`);
  console.log(`gracePeriodSeconds 4: the pod gone ${ended.goneMs} ms after the delete, manager exit ${ended.exitCode}`);
});

test("control: the same without the right to read its Pod: drainguard goes by the spec's 30 s, and the kubelet kills it at 4 s", async () => {
  const ended = await runAndDelete('blind', 'blind', { gracePeriodSeconds: 4 });
  const log = logs('blind');
  assert.ok(
    log.some((l) => l.msg.startsWith("could not read the Pod's deletion")),
    read('blind.err').join('\n'),
  );
  assert.is(ended.exitCode, 137, 'SIGKILLed by the kubelet');
  assert.not.ok(stdout('blind').includes('signal SIGTERM'), 'the operator never got a stop signal');
  console.log(`control: the pod gone ${ended.goneMs} ms after the delete, manager exit ${ended.exitCode}`);
});

test.run();
