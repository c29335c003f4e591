// The kubelet stand-in against the real API server and controller-manager:
// a Job completes, a Deployment becomes available, a restartPolicy restarts,
// and a deleted pod goes through the kubelet's termination sequence.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { type ContainerRun, Kubelet, type KubeletEvent } from './index.ts';
import { NODE, fixture } from '../proc.ts';
import { type KubeletCluster, kubeletCluster } from './cluster.ts';

let cluster: KubeletCluster;
let ns: string;
let kubelet: Kubelet;

/** `example.com/signals`: the test fixture operator, which prints every signal it gets; its exec hooks run as written. */
const images = {
  'example.com/signals': (run: ContainerRun) => (run.hook ? undefined : { file: NODE, args: [fixture('operator.ts')] }),
};

test.before(async () => {
  cluster = await kubeletCluster();
  ns = await cluster.namespace('kubelet');
  kubelet = await Kubelet.start({ cluster: cluster.access, namespaces: [ns], images });
});

test.after(async () => {
  await kubelet?.stop();
});

const get = (path: string) => cluster.api.call('GET', path);

/** Polls `path` until `ok` holds for its body; every 100 ms, for at most `ms`. */
async function poll(path: string, ok: (body: any, status: number) => boolean, ms: number, what: string): Promise<any> {
  const deadline = Date.now() + ms;
  let last: any;
  while (Date.now() < deadline) {
    const r = await get(path);
    last = r;
    if (ok(r.body, r.status)) return r.body;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(
    `timed out after ${ms} ms waiting for ${what}; last: ${last?.status} ${JSON.stringify(last?.body?.status)}\n${kubelet.timeline()}`,
  );
}

test('a Job runs to completion: its pod is bound, run, and reported Succeeded', async () => {
  await cluster.api.must('POST', `/apis/batch/v1/namespaces/${ns}/jobs`, {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name: 'once' },
    spec: {
      backoffLimit: 0,
      template: {
        spec: {
          restartPolicy: 'Never',
          initContainers: [
            {
              name: 'first',
              image: 'example.com/sh',
              command: ['/bin/sh', '-c', 'echo init $(POD)'],
              env: [{ name: 'POD', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } }],
            },
          ],
          containers: [
            {
              name: 'main',
              image: 'example.com/sh',
              command: ['/bin/sh', '-c', 'echo "$NODE $NS" && test -n "$KUBECONFIG"'],
              env: [
                { name: 'NODE', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } },
                { name: 'NS', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
              ],
            },
          ],
        },
      },
    },
  });
  const job = await poll(
    `/apis/batch/v1/namespaces/${ns}/jobs/once`,
    (b) => b.status?.succeeded === 1 && b.status.conditions?.some((c: any) => c.type === 'Complete' && c.status === 'True'),
    30_000,
    'the Job complete',
  );
  assert.ok(job.status.completionTime);
  const init = await kubelet.process('once-', 'first');
  assert.match(init.stdout.join('\n'), /^init once-/);
  const main = await kubelet.process('once-', 'main');
  assert.equal(main.stdout, [`${kubelet.nodeName} ${ns}`]);
  const pods = await cluster.api.must('GET', `/api/v1/namespaces/${ns}/pods?labelSelector=job-name%3Donce`);
  const pod = pods.items[0];
  assert.is(pod.status.phase, 'Succeeded');
  assert.is(pod.status.containerStatuses[0].state.terminated.exitCode, 0);
  assert.is(pod.status.initContainerStatuses[0].state.terminated.reason, 'Completed');
  assert.ok(pod.status.startTime);
  const events = kubelet.events.filter((e) => e.uid === pod.metadata.uid).map((e) => `${e.container ?? ''} ${e.what}`);
  assert.equal(events.slice(0, 5), [' bound 201', 'first started', 'first exited 0', 'main started', 'main exited 0']);
  assert.equal(kubelet.errors, []);
});

test('a failing Job pod with restartPolicy OnFailure is restarted in place', async () => {
  // Fails the first time, succeeds the second: a file in the pod's emptyDir remembers.
  await cluster.api.must('POST', `/apis/batch/v1/namespaces/${ns}/jobs`, {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name: 'retry' },
    spec: {
      backoffLimit: 2,
      template: {
        spec: {
          restartPolicy: 'OnFailure',
          volumes: [{ name: 'scratch', emptyDir: {} }],
          containers: [
            {
              name: 'main',
              image: 'example.com/sh',
              // A path inside a shell script is not mapped; one in a variable is.
              command: ['/bin/sh', '-c', 'test -e $DIR/once && exit 0; touch $DIR/once; exit 3'],
              env: [{ name: 'DIR', value: '/scratch' }],
              volumeMounts: [{ name: 'scratch', mountPath: '/scratch' }],
            },
          ],
        },
      },
    },
  });
  await poll(`/apis/batch/v1/namespaces/${ns}/jobs/retry`, (b) => b.status?.succeeded === 1, 30_000, 'the Job complete');
  const pods = await cluster.api.must('GET', `/api/v1/namespaces/${ns}/pods?labelSelector=job-name%3Dretry`);
  assert.is(pods.items.length, 1, 'restarted in the same pod');
  const status = pods.items[0].status.containerStatuses[0];
  assert.is(status.restartCount, 1);
  assert.is(status.lastState.terminated.exitCode, 3);
  assert.is(status.state.terminated.exitCode, 0);
});

test('a Deployment becomes available; a container that exits is restarted (restartPolicy Always)', async () => {
  await cluster.api.must('POST', `/apis/apps/v1/namespaces/${ns}/deployments`, {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web' },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: 'web' } },
      template: {
        metadata: { labels: { app: 'web' } },
        spec: {
          containers: [
            {
              name: 'server',
              image: 'example.com/sh',
              // Serves one HTTP answer per connection on its declared port (mapped to a free one).
              command: [
                NODE,
                '-e',
                "require('http').createServer((q,s)=>s.end('ok')).listen(+process.argv[1].split(':')[1],'127.0.0.1');console.log('listening')",
                ':8080',
              ],
              ports: [{ containerPort: 8080 }],
              readinessProbe: { httpGet: { path: '/', port: 8080 } },
            },
          ],
        },
      },
    },
  });
  const d = await poll(
    `/apis/apps/v1/namespaces/${ns}/deployments/web`,
    (b) => b.status?.availableReplicas === 1 && b.status.conditions?.some((c: any) => c.type === 'Available' && c.status === 'True'),
    30_000,
    'the Deployment available',
  );
  assert.is(d.status.readyReplicas, 1);
  const server = await kubelet.process('web-', 'server');
  await server.line('listening');
  const podName = kubelet.events.find((e) => e.container === 'server' && e.what === 'ready')!.pod;
  server.kill('SIGKILL');
  await kubelet.event((e) => e.pod === podName && e.what === 'restart 1', 10_000, 'the restart');
  const pod = await poll(
    `/api/v1/namespaces/${ns}/pods/${podName}`,
    (b) => b.status?.containerStatuses?.[0]?.restartCount === 1 && b.status.containerStatuses[0].ready,
    15_000,
    'restartCount 1, ready again',
  );
  assert.is(pod.status.containerStatuses[0].lastState.terminated.exitCode, 137);
  await cluster.api.must('DELETE', `/apis/apps/v1/namespaces/${ns}/deployments/web`);
});

test('deletion: preStop, then SIGTERM, SIGKILL when the grace period runs out, the native sidecar last; then the final delete', async () => {
  const grace = 3;
  await cluster.api.must('POST', `/api/v1/namespaces/${ns}/pods`, {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'stopping' },
    spec: {
      terminationGracePeriodSeconds: grace,
      initContainers: [
        { name: 'sidecar-a', image: 'example.com/signals', restartPolicy: 'Always' },
        { name: 'sidecar-b', image: 'example.com/signals', restartPolicy: 'Always' },
      ],
      containers: [
        {
          name: 'main',
          image: 'example.com/signals',
          env: [
            { name: 'FIXTURE_ON_TERM', value: 'ignore' },
            { name: 'FIXTURE_CONNECT', value: 'never' },
          ],
          lifecycle: { preStop: { exec: { command: ['/bin/sh', '-c', 'echo hook; sleep 0.5'] } } },
        },
      ],
    },
  });
  for (const c of ['sidecar-a', 'sidecar-b', 'main']) await (await kubelet.process('stopping', c)).line('ready', 20_000);
  await poll(
    `/api/v1/namespaces/${ns}/pods/stopping`,
    (b) => b.status?.conditions?.some((c: any) => c.type === 'Ready' && c.status === 'True'),
    15_000,
    'the pod Ready',
  );
  await cluster.api.must('DELETE', `/api/v1/namespaces/${ns}/pods/stopping`);
  // The kubelet's own record of its final delete, not the API's 404: a GET can see the Pod gone
  // before the kubelet has handled the answer to its DELETE (seen on a loaded machine).
  await kubelet.event((e) => e.pod === 'stopping' && e.what.startsWith('deleted '), 20_000, 'the final delete');
  assert.is((await get(`/api/v1/namespaces/${ns}/pods/stopping`)).status, 404, 'the pod gone');
  const mine = kubelet.events.filter((e) => e.pod === 'stopping');
  const at = (container: string | undefined, what: string): KubeletEvent => {
    const e = mine.find((x) => x.container === container && x.what === what);
    assert.ok(e, `${container}: ${what}\n${kubelet.timeline()}`);
    return e!;
  };
  const order = mine
    .filter((e) => /^(preStop (started|ended)|signal|exited|deleted|terminating)/.test(e.what))
    .map((e) => `${e.container ?? 'pod'} ${e.what}`);
  assert.equal(order, [
    `pod terminating, grace ${grace}s`,
    'main preStop started',
    'main preStop ended: succeeded',
    'main signal SIGTERM',
    'main signal SIGKILL',
    'main exited 137',
    'sidecar-b signal SIGTERM',
    'sidecar-b exited 0',
    'sidecar-a signal SIGTERM',
    'sidecar-a exited 0',
    'pod deleted 200',
  ]);
  const start = at(undefined, `terminating, grace ${grace}s`).at;
  const kill = at('main', 'signal SIGKILL').at - start;
  assert.ok(kill >= grace * 1000 - 50 && kill < grace * 1000 + 1000, `SIGKILL ${kill} ms after the deletion, grace ${grace} s`);
  const main = mine.find((e) => e.container === 'main' && e.what === 'started')!.proc!;
  assert.ok(main.stdout.includes('signal SIGTERM'), 'main got SIGTERM');
  const sidecarB = mine.find((e) => e.container === 'sidecar-b' && e.what === 'started')!.proc!;
  assert.ok(sidecarB.stdout.includes('signal SIGTERM'));
  const hook = mine.find((e) => e.container === 'main' && e.what === 'preStop process')!.proc!;
  assert.equal(hook.stdout, ['hook']);
  assert.equal(kubelet.errors, []);
});

test("a second delete with a shorter grace period: the SIGKILL comes at the second's, not the first's; a force delete kills after 1 s", async () => {
  const pod = (name: string) => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name },
    spec: {
      terminationGracePeriodSeconds: 30,
      containers: [
        {
          name: 'main',
          image: 'example.com/signals',
          env: [
            { name: 'FIXTURE_ON_TERM', value: 'ignore' },
            { name: 'FIXTURE_CONNECT', value: 'never' },
          ],
        },
      ],
    },
  });
  await cluster.api.must('POST', `/api/v1/namespaces/${ns}/pods`, pod('shortened'));
  await (await kubelet.process('shortened', 'main')).line('ready', 20_000);
  await cluster.api.must('DELETE', `/api/v1/namespaces/${ns}/pods/shortened`);
  await kubelet.event((e) => e.pod === 'shortened' && e.what === 'signal SIGTERM', 10_000, 'SIGTERM');
  const second = Date.now();
  const shorter = await cluster.api.must('DELETE', `/api/v1/namespaces/${ns}/pods/shortened`, { gracePeriodSeconds: 3 });
  assert.is(shorter.metadata.deletionGracePeriodSeconds, 3);
  await kubelet.event((e) => e.pod === 'shortened' && e.what === 'deleted 200', 20_000, 'the final delete');
  const kill = kubelet.events.find((e) => e.pod === 'shortened' && e.what === 'signal SIGKILL')!;
  assert.ok(kill, kubelet.timeline());
  assert.ok(kill.at - second >= 2900 && kill.at - second < 4500, `SIGKILL ${kill.at - second} ms after the second delete (3 s)`);
  assert.ok(kubelet.events.some((e) => e.pod === 'shortened' && e.what === 'grace shortened to 3s'));

  await cluster.api.must('POST', `/api/v1/namespaces/${ns}/pods`, pod('forced'));
  const forced = await kubelet.process('forced', 'main');
  await forced.line('ready', 20_000);
  await cluster.api.must('DELETE', `/api/v1/namespaces/${ns}/pods/forced`, { gracePeriodSeconds: 0 });
  await kubelet.event((e) => e.pod === 'forced' && e.what.startsWith('terminating'), 10_000, 'the force delete seen');
  // As the real kubelet does (docs/kubernetes.md): the deletion's 0 wins over the spec's 30 s, raised to 1 s.
  assert.ok(
    kubelet.events.some((e) => e.pod === 'forced' && e.what === 'terminating, grace 1s'),
    kubelet.timeline(),
  );
  forced.kill('SIGKILL');
  assert.equal(kubelet.errors, []);
});

test.run();
