// The controller-runtime package (clients/go/ctrl) built against one
// controller-runtime release (test/support/go.ts: the oldest it supports, or
// the newest), under the built executable, against the real control plane. The
// example operator's reconciles take 2 s of work that does not look at its
// context and end with an API write (an annotation). One file per release runs
// this suite: controller-runtime.test.ts and controller-runtime-oldest.test.ts.
//
// Where the releases differ, the assertions follow the build's versions:
// controller-runtime v0.23.0 made its priority queue the default, which drops
// what it holds at the stop (the classic work queue of v0.22 still hands it
// out, with a cancelled context); client-go v0.37.0 retries a lease release
// that conflicts with a renewal in flight (kubernetes/kubernetes#131867).

import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { useCluster } from '../../support/cluster/index.ts';
import { freePort } from '../../support/free-port.ts';
import { CONTROLLER_RUNTIME_NEWEST, type CtrlBuild, GO, gofmt } from '../../support/go.ts';
import { Proc, drainguard, tempDir } from '../../support/proc.ts';

const ANNOTATION = 'drainguard.dev/reconciled-by';
const KUBEBUILDER_GRACE = '10s'; // Kubebuilder's scaffold: terminationGracePeriodSeconds: 10

/** Whether semantic version A (vX.Y.Z) is at least B. */
export function atLeast(a: string, b: string): boolean {
  const parts = (v: string) => /^v(\d+)\.(\d+)\.(\d+)/.exec(v)!.slice(1).map(Number);
  const [x, y] = [parts(a), parts(b)];
  for (let i = 0; i < 3; i++) if (x[i] !== y[i]) return x[i]! > y[i]!;
  return true;
}

export async function controllerRuntimeSuite(build: CtrlBuild): Promise<void> {
  const { release } = build;
  const EXAMPLE = build.build('./example', join(tempDir(), 'ctrl-example'));
  const priorityQueue = atLeast(build.controllerRuntime, 'v0.23.0');
  const releaseRetried = atLeast(build.clientGo, 'v0.37.0');
  const cluster = await useCluster();
  const server = (await cluster.api.get('/version')).gitVersion as string;
  console.log(`  controller-runtime ${build.controllerRuntime}, client-go ${build.clientGo}, API server ${server}`);
  let ns = ''; // a fresh one per test: nothing an earlier test left unreconciled gets in the way

  const running: Proc[] = [];
  const env = { KUBECONFIG: cluster.adminKubeconfig };

  /** The example under `drainguard run`; `control`: without the drainctrl package. */
  function operator(identity: string, flags: string[] = [], control = false): Proc {
    const args = ['-namespace', ns, '-identity', identity, '-reconcile-time', '2s', ...(control ? ['-no-drainguard'] : []), ...flags];
    const p = drainguard(['run', '--grace-period', KUBEBUILDER_GRACE, '--', EXAMPLE, ...args], env);
    running.push(p);
    return p;
  }

  const cmPath = (name?: string) => `/api/v1/namespaces/${ns}/configmaps${name ? `/${name}` : ''}`;
  const createConfigMap = (name: string) =>
    cluster.api.create(cmPath(), { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, labels: { app: 'drainguard-example' } } });
  const reconciledBy = async (name: string): Promise<string | undefined> =>
    (await cluster.api.get(cmPath(name)))?.metadata.annotations?.[ANNOTATION];

  /** Waits until the example's work queue holds `n` items: workqueue_depth, summed over its priorities (the priority queue has a label for them). */
  async function queueDepth(metricsAddr: string, n: number): Promise<void> {
    const depth = (text: string) =>
      text
        .split('\n')
        .filter((l) => l.startsWith('workqueue_depth{') && l.includes('controller="example"'))
        .reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
    await cluster.waitFor(
      async () => depth(await (await fetch(`http://${metricsAddr}/metrics`)).text()) === n,
      10_000,
      `workqueue_depth ${n}`,
    );
  }

  let seq = 0;
  const fresh = (what: string) => `${what}-${++seq}`;

  test.before.each(async () => {
    ns = (await cluster.namespace('ctrl')).name;
  });

  test.after.each(async () => {
    for (const p of running.splice(0)) {
      // Stopped as a pod is (drainguard then removes its socket directory); SIGKILL only if that hangs.
      p.kill('SIGTERM');
      await p.exit(15_000).catch(() => p.killAll());
      await p.exited;
    }
  });

  test(`the build: the example is linked with controller-runtime ${build.controllerRuntime}, the ${release} release`, () => {
    // The oldest: what clients/go/ctrl/go.mod requires; the newest: the release the test support names.
    const wanted =
      release === 'newest'
        ? CONTROLLER_RUNTIME_NEWEST
        : /^\s+sigs\.k8s\.io\/controller-runtime (\S+)$/m.exec(readFileSync('clients/go/ctrl/go.mod', 'utf8'))![1]!;
    const info = execFileSync(GO, ['version', '-m', EXAMPLE], { env: build.env, encoding: 'utf8' });
    assert.match(info, new RegExp(`^\\s+dep\\s+sigs\\.k8s\\.io/controller-runtime\\s+${wanted.replaceAll('.', '\\.')}\\s`, 'm'));
    assert.match(info, new RegExp(`^\\s+dep\\s+k8s\\.io/client-go\\s+${build.clientGo.replaceAll('.', '\\.')}\\s`, 'm'));
  });

  test('gofmt, go vet and go test -race: the package against a drain protocol peer', () => {
    assert.equal(execFileSync(gofmt(), ['-l', '.'], { cwd: 'clients/go/ctrl', encoding: 'utf8' }), '', 'gofmt -l lists nothing');
    build.go('vet', './...');
    assert.match(build.go('test', '-race', '-count=1', './...'), /^ok\s+github\.com\/drainguard\/drainguard\/clients\/go\/ctrl\s/m);
  });

  test('SIGTERM mid-reconcile: the write succeeds, nothing new starts, drained is sent, exit 0 about 2 s later', async () => {
    const [first, queued, during] = [fresh('first'), fresh('queued'), fresh('during')];
    const metrics = `127.0.0.1:${await freePort()}`;
    const p = operator('pod-a', ['-metrics-bind-address', metrics]);
    await p.line('ready', 30_000);
    await createConfigMap(first);
    await p.line(`reconcile start ${ns}/${first}`);
    await createConfigMap(queued); // one worker: it waits in the queue
    await queueDepth(metrics, 1);
    const sigterm = Date.now();
    p.kill('SIGTERM');
    const started = await p.log('drain started');
    assert.equal(started.timeoutMs, 3000, 'the drain timeout of a 10 s grace period: 10 s - 5 s stop timeout - 2 s');
    await createConfigMap(during);
    assert.equal((await p.exit()).code, 0);
    const exitMs = Date.now() - sigterm;

    assert.ok(p.stdout.includes(`reconcile done ${ns}/${first}`), p.stdout.join('\n'));
    assert.equal(
      p.stdout.filter((l) => l.startsWith('reconcile error')),
      [],
    );
    assert.not.ok(p.stdout.includes(`reconcile start ${ns}/${during}`), 'an object created during the drain is not reconciled by this pod');
    assert.not.ok(p.stdout.includes(`reconcile start ${ns}/${queued}`), 'what the queue held at the stop is not reconciled');
    assert.equal(await reconciledBy(first), 'pod-a');
    assert.equal(await reconciledBy(queued), undefined);
    assert.equal(await reconciledBy(during), undefined);
    const logs = p.logs().map((l) => l.msg);
    assert.ok(logs.indexOf('client drained') >= 0 && logs.indexOf('client drained') < logs.indexOf('stop signal sent'), logs.join(', '));
    assert.equal(p.logs().find((l) => l.msg === 'drain ended')!.outcome, 'drained');
    assert.ok(exitMs < 3500, `exit ${exitMs} ms after SIGTERM`);
    console.log(`  with drainctrl: exit ${exitMs} ms after SIGTERM, drain ${p.logs().find((l) => l.msg === 'drain ended')!.durationMs} ms`);
  });

  test('the control: the same manager without the package fails that write with context canceled', async () => {
    const [first, queued] = [fresh('control'), fresh('control-queued')];
    const metrics = `127.0.0.1:${await freePort()}`;
    const p = operator('pod-c', ['-metrics-bind-address', metrics], true);
    await p.line('ready', 30_000);
    await createConfigMap(first);
    await p.line(`reconcile start ${ns}/${first}`);
    await createConfigMap(queued);
    await queueDepth(metrics, 1);
    const sigterm = Date.now();
    p.kill('SIGTERM');
    assert.equal((await p.exit()).code, 0);
    const exitMs = Date.now() - sigterm;
    assert.equal(p.logs().find((l) => l.msg === 'drain ended')!.outcome, 'no-client');
    assert.match(p.stdout.find((l) => l.startsWith(`reconcile error ${ns}/${first}`)) ?? '', /context canceled/);
    assert.not.ok(p.stdout.includes(`reconcile done ${ns}/${first}`));
    assert.equal(await reconciledBy(first), undefined);
    if (priorityQueue) {
      // The priority queue (the default since v0.23) hands nothing out once shut down.
      assert.not.ok(p.stdout.includes(`reconcile start ${ns}/${queued}`), p.stdout.join('\n'));
    } else {
      // The classic work queue hands out what it held after the stop, with a cancelled context.
      assert.match(p.stdout.find((l) => l.startsWith(`reconcile error ${ns}/${queued}`)) ?? '', /context canceled/);
    }
    assert.equal(await reconciledBy(queued), undefined);
    console.log(`  control: exit ${exitMs} ms after SIGTERM, the write failed`);
  });

  test('the unmodified manager under DRAINGUARD_IDLE_METRICS: the stop signal waits until no reconcile runs, and the write succeeds', async () => {
    const name = fresh('idle');
    const metrics = `127.0.0.1:${await freePort()}`;
    const p = drainguard(
      [
        'run',
        '--grace-period',
        KUBEBUILDER_GRACE,
        '--',
        EXAMPLE,
        '-namespace',
        ns,
        '-identity',
        'pod-i',
        '-reconcile-time',
        '2s',
        '-no-drainguard',
        '-metrics-bind-address',
        metrics,
      ],
      {
        ...env,
        DRAINGUARD_IDLE_METRICS: `http://${metrics}/metrics`,
      },
    );
    running.push(p);
    await p.line('ready', 30_000);
    await createConfigMap(name);
    await p.line(`reconcile start ${ns}/${name}`);
    const sigterm = Date.now();
    p.kill('SIGTERM');
    assert.equal((await p.exit()).code, 0);
    const exitMs = Date.now() - sigterm;
    const ended = p.logs().find((l) => l.msg === 'drain ended')!;
    assert.equal(ended.outcome, 'idle', JSON.stringify(ended));
    const idle = p.logs().find((l) => l.msg === 'operator idle: no reconcile running')!;
    assert.ok((idle.scrapes as number) >= 2, `${idle.scrapes} scrapes: it was busy at the first`);
    assert.ok(p.stdout.includes(`reconcile done ${ns}/${name}`), p.stdout.join('\n'));
    assert.equal(
      p.stdout.filter((l) => l.startsWith('reconcile error')),
      [],
    );
    assert.equal(await reconciledBy(name), 'pod-i');
    const logs = p.logs().map((l) => l.msg);
    assert.ok(logs.indexOf('operator idle: no reconcile running') < logs.indexOf('stop signal sent'), logs.join(', '));
    console.log(`  idle metrics: exit ${exitMs} ms after SIGTERM, ${idle.scrapes} scrapes, idle after ${idle.afterMs} ms`);
  });

  test('leader election: a second manager takes the lease within a second of the first one exiting', async () => {
    const [first, during] = [fresh('leader'), fresh('handover')];
    // A candidate retries every RetryPeriod plus up to 1.2 times that (client-go's jitter):
    // 300 ms puts the hand-over under 660 ms after the release.
    const flags = ['-leader-elect', '-leader-election-id', fresh('lease'), '-leader-retry-period', '300ms'];
    const a = operator('pod-a', flags);
    await a.line('leader', 30_000);
    const b = operator('pod-b', flags);
    await b.line('ready', 30_000);
    await createConfigMap(first);
    await a.line(`reconcile start ${ns}/${first}`);
    a.kill('SIGTERM');
    await a.log('drain started');
    await createConfigMap(during);
    const bLeader = b.line('leader', 30_000).then(() => Date.now());
    assert.equal((await a.exit()).code, 0);
    const aExit = Date.now();
    const handoverMs = (await bLeader) - aExit;
    // Before client-go v0.37, the release can lose a race with a renewal in flight when the manager stops: the
    // server applied the renewal the client gave up on, and the release's update conflicts and is not retried
    // (kubernetes/kubernetes#131867). The successor then waits out the lease. Accepted there, only on that line.
    const managerLog = a.stderr.filter((l) => !l.startsWith('{"time"'));
    const lostRace = !releaseRetried && managerLog.some((l) => /Failed to release lock: .*the object has been modified/.test(l));
    if (lostRace)
      console.log(
        `  lease hand-over: ${handoverMs} ms, client-go ${build.clientGo}'s release lost its race with a renewal (kubernetes/kubernetes#131867)`,
      );
    else
      assert.ok(
        handoverMs < 1000,
        `lease taken ${handoverMs} ms after the first one's exit; its log:\n${managerLog.slice(-15).join('\n')}`,
      );
    assert.equal(await reconciledBy(first), 'pod-a');
    // The successor reconciles what the draining pod left alone.
    await b.line(`reconcile done ${ns}/${during}`, 10_000);
    assert.equal(await reconciledBy(during), 'pod-b');
    assert.not.ok(a.stdout.includes(`reconcile start ${ns}/${during}`));
    if (!lostRace) console.log(`  lease hand-over: ${handoverMs} ms after the first manager's exit`);
  });

  test('the control: without the package the lease is not released, the successor waits out the lease duration', async () => {
    const first = fresh('leader-control');
    const flags = ['-leader-elect', '-leader-election-id', fresh('lease'), '-leader-retry-period', '300ms'];
    const a = operator('pod-a', flags, true);
    await a.line('leader', 30_000);
    const b = operator('pod-b', flags, true);
    await b.line('ready', 30_000);
    await createConfigMap(first);
    await a.line(`reconcile start ${ns}/${first}`);
    a.kill('SIGTERM');
    const bLeader = b.line('leader', 30_000).then(() => Date.now());
    assert.equal((await a.exit()).code, 0);
    const aExit = Date.now();
    const handoverMs = (await bLeader) - aExit;
    assert.ok(handoverMs > 5000, `lease taken ${handoverMs} ms after the first one's exit`);
    console.log(`  control lease hand-over: ${handoverMs} ms after the first manager's exit`);
  });

  test.run();
}
