// The seed of issue 27: the example operator's rendered manifests
// (deploy/rendered/hold.yaml) applied with kubectl, its Installation and
// APIServer adopted by the operator with its finalizer, then uninstalled with
// `kubectl delete -f` as docs/guard.md gives it, the custom resources in the
// same delete; the kubelet stand-in running the pod. With the hold, the
// Deployment stays Terminating while the operator, its RBAC kept by the guard,
// finalizes the custom resources; then it stops and nothing is left. The
// control: the same manifests with DRAINGUARD_HOLD emptied leave them stuck.
// On the way: readiness waits for the Deployment's finalizer, and /metrics and
// the pod's Events tell the hold and its release.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { type KubeletCluster, kubeletCluster } from '../support/kubelet/cluster.ts';
import { drainguard as drainguardCli } from '../support/proc.ts';
import { type OperatorSet, kubectl, leftOf, operatorPods, operatorSet, pathOf, removeSet, uninstallArgs } from './support.ts';

const TEARDOWN_MS = 8000;

let c: KubeletCluster;
test.before(async () => {
  c = await kubeletCluster();
});

/** GET http://ADDRESS/PATH: its status and body (status 0 once the listener is gone). */
async function get(address: string, path: string): Promise<{ status: number; body: string }> {
  try {
    const res = await fetch(`http://${address}${path}`, { signal: AbortSignal.timeout(5_000) });
    return { status: res.status, body: await res.text() };
  } catch {
    return { status: 0, body: '' };
  }
}

const sample = (metrics: string, name: string): number | undefined => {
  const line = metrics.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.slice(name.length + 1));
};

/** Reads /metrics every 50 ms until stopped: each distinct (held, released by reason) state, first seen at. */
function sampleMetrics(address: string): { states: { at: number; held?: number; finalized?: number }[]; stop(): Promise<void> } {
  const states: { at: number; held?: number; finalized?: number }[] = [];
  let done = false;
  const loop = (async () => {
    while (!done) {
      const m = await get(address, '/metrics');
      if (m.status === 200) {
        const state = {
          at: Date.now(),
          held: sample(m.body, 'drainguard_hold_held'),
          finalized: sample(m.body, 'drainguard_hold_released_total{reason="finalized"}'),
        };
        const last = states.at(-1);
        if (!last || last.held !== state.held || last.finalized !== state.finalized) states.push(state);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  })();
  return { states, stop: () => ((done = true), loop) };
}

/** Onto the timeline: when each object the uninstall deletes is gone. */
function goneTimes(s: OperatorSet): Promise<void> {
  const deleted = [
    ...s.objects.filter((o) => o.kind !== 'Namespace' && o.metadata.labels?.['app.kubernetes.io/name'] !== 'drainguard'),
    ...s.customResources,
  ];
  return Promise.all(
    deleted.map(async (o) => {
      await c.poll(pathOf(o), (_b, st) => st === 404, 120_000, `${o.kind}/${o.metadata.name} gone`);
      s.at(`${o.kind} ${o.metadata.name} gone`);
    }),
  ).then(() => undefined);
}

test('kubectl delete -f of deploy/rendered/hold.yaml with the hold: the operator finalizes its custom resources with its RBAC intact, then stops; nothing is left', async () => {
  // The teardown outlasts the settle (the rendered default, 5 s): the release waits for the finalizers, not for the settle.
  const s = await operatorSet(c, { finalizeAfterMs: TEARDOWN_MS });
  let metrics: ReturnType<typeof sampleMetrics> | undefined;
  try {
    // Readiness waits for the Deployment's finalizer: the first 200 of /readyz comes with it in place.
    const drainguard = await s.kubelet.process(s.name, 'drainguard', 60_000);
    const { address } = await drainguard.log('http listener started', 20_000);
    const ready = await c.cluster.waitFor(
      async () =>
        (await get(String(address), '/readyz')).status === 200
          ? c.api.must('GET', `/apis/apps/v1/namespaces/${s.ns}/deployments/${s.name}`)
          : undefined,
      30_000,
      '/readyz 200',
    );
    const [{ pod, operator }] = await operatorPods(c, s);
    const holder = `drainguard.dev/holder-${pod.metadata.uid}`;
    assert.ok(
      ready.metadata.finalizers?.includes(holder),
      `/readyz 200 only once the Deployment carries ${holder}: ${JSON.stringify(ready.metadata.finalizers)}`,
    );
    s.at(
      "drainguard ready: the Deployment and the RBAC carry the pod's finalizer; the operator adopted the Installation and the APIServer",
    );
    metrics = sampleMetrics(String(address));

    const [args, input] = uninstallArgs(s);
    const gone = goneTimes(s);
    const deleting = kubectl(c, args, input).then((r) => {
      s.at(`kubectl delete -f returned ${r.code}: ${r.stdout.trim().split('\n').length} objects deleted`);
      return r;
    });
    s.at("kubectl delete -l 'app.kubernetes.io/name!=drainguard' -f hold.yaml (but its Namespace) -f custom-resources.yaml started");
    const seen = await drainguard.log(
      'the Deployment is being deleted: holding the operator until the listed custom resources are finalized',
      20_000,
    );
    s.at(`drainguard: the Deployment is being deleted (finalizers ${JSON.stringify(seen.finalizers)}), holding`, seen.time);
    // Both cleanups start as their deletions come, in either order.
    await operator.line('cleanup installations/default started', 30_000);
    await operator.line('cleanup apiservers/default started', 30_000);
    s.at(`operator: cleanup of apiservers/default and installations/default started (each takes ${TEARDOWN_MS / 1000} s)`);
    await operator.line('cleanup installations/default: finalizer 200', 30_000);
    assert.ok(operator.stdout.includes('cleanup installations/default: delete configmap 200'), 'its cleanup authorised');
    s.at('operator: installations/default cleaned up (delete configmap 200, its RBAC still in force), finalizer removed 200');
    await operator.line('cleanup apiservers/default: finalizer 200', 30_000);
    s.at('operator: apiservers/default finalizer removed 200');
    const line = await c.cluster.waitFor(
      () => drainguard.logs().find((l) => String(l.msg).startsWith('hold released')),
      30_000,
      'the hold released',
    );
    assert.is(line.reason, 'finalized', String(line.msg));
    assert.ok(operator.stdout.includes('cleanup apiservers/default: finalizer 200'), 'released only once both finalizers were off');
    s.at(`drainguard: ${line.msg}`, line.time);
    await operator.line('drained', 30_000);
    s.at(`operator drained (${operator.stdout.find((l) => l.startsWith('stop: delete state'))})`);
    assert.ok(operator.stdout.includes('stop: delete state 200'), 'its stop still authorised');
    const guard = await drainguard.log('guard released', 30_000);
    s.at(`drainguard: guard released (${(guard.deleted as string[]).join(', ')} went with it)`, guard.time);
    await metrics.stop();
    const result = await deleting;
    assert.is(result.code, 0, result.stderr);
    await gone;

    // The Event on the pod, with the reason (read before the Namespace takes it).
    const events = (await c.api.must('GET', `/api/v1/namespaces/${s.ns}/events?fieldSelector=involvedObject.uid%3D${pod.metadata.uid}`))
      .items;
    const event = events.find((e: any) => e.reason === 'HoldReleased');
    assert.ok(event, `a HoldReleased Event on the pod: ${events.map((e: any) => e.reason)}`);
    assert.equal([event.involvedObject.kind, event.type], ['Pod', 'Normal']);
    assert.match(event.message, '(reason finalized)');

    // drainguard's own RBAC, once no holder is left, then the Namespace (docs/guard.md).
    const release = drainguardCli(['release', '--pod-namespace', s.ns, '--guard', s.guard, '--wait', '30s', '--delete', s.own], {
      KUBECONFIG: c.cluster.adminKubeconfig,
    });
    assert.is((await release.exit(40_000)).code, 0, release.stdout.join('\n'));
    s.at(`drainguard release --wait --delete: ${release.stdout.at(-1)}`);
    const ns = await kubectl(c, ['delete', 'namespace', s.ns]);
    assert.is(ns.code, 0, ns.stderr);
    s.at(`kubectl delete namespace ${s.ns} returned`);
    const left = await leftOf(c, s, 30_000);
    assert.equal(left, [], 'nothing is left');
    s.at('nothing is left');

    // What /metrics showed: held while the Deployment was held, released (finalized) once, after.
    const states = metrics.states.map((m) => [m.held, m.finalized ?? 0]);
    assert.equal(states[0], [1, 0], `held before the delete: ${JSON.stringify(states)}`);
    assert.ok(
      states.some(([held, finalized]) => held === 0 && finalized === 1),
      `drainguard_hold_held 0 and drainguard_hold_released_total{reason="finalized"} 1 after: ${JSON.stringify(states)}`,
    );
    assert.not.ok(states.some(([, finalized]) => (finalized ?? 0) > 1));
    const released = metrics.states.find((m) => m.finalized === 1)!;
    s.at('/metrics: drainguard_hold_held 0, drainguard_hold_released_total{reason="finalized"} 1', new Date(released.at).toISOString());
  } finally {
    await metrics?.stop();
    console.log(`\nwith the hold:\n${s.timeline.join('\n')}\n`);
    if (process.env.TEST_VERBOSE) console.log(`kubelet:\n${s.kubelet.timeline()}\n`);
    await removeSet(c, s);
  }
});

test('control: the same manifests with DRAINGUARD_HOLD emptied: the same kubectl delete -f leaves the custom resources stuck with their finalizer', async () => {
  const s = await operatorSet(c, { hold: false });
  try {
    const [{ pod, operator, drainguard }] = await operatorPods(c, s);
    s.at("drainguard ready: the RBAC carries the pod's finalizer (the guard); the operator adopted the Installation and the APIServer");
    const [args, input] = uninstallArgs(s, '--wait=false');
    assert.is((await kubectl(c, args, input)).code, 0);
    s.at(
      "kubectl delete -l 'app.kubernetes.io/name!=drainguard' -f hold.yaml (but its Namespace) -f custom-resources.yaml returned (--wait=false: it would wait for good)",
    );
    await operator.line('drained', 30_000);
    s.at(
      `operator drained: the pod was deleted with the Deployment at once${operator.stdout.includes('cleanup installations/default started') ? ', its cleanup of installations/default under way' : ''}`,
    );
    const released = await drainguard.log('guard released', 30_000);
    s.at('drainguard: guard released', released.time);
    await c.poll(`/api/v1/namespaces/${s.ns}/pods/${pod.metadata.name}`, (_b, st) => st === 404, 30_000, 'the pod gone');
    s.at('pod gone');
    assert.not.ok(
      operator.stdout.some((l) => /: finalizer \d+$/.test(l) && l.startsWith('cleanup ')),
      `it removed no finalizer: ${operator.stdout.join('\n')}`,
    );
    for (const cr of s.customResources) {
      const o = await c.api.must('GET', pathOf(cr));
      assert.ok(
        o.metadata.deletionTimestamp && o.metadata.finalizers.includes(`${s.group}/cleanup`),
        `${cr.kind}/default stuck Terminating with its finalizer`,
      );
    }
    const crd = await c.api.must('GET', `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/installations.${s.group}`);
    assert.ok(crd.metadata.deletionTimestamp, 'the CRD is Terminating, waiting for its objects');
    s.at(
      "installations/default and apiservers/default stuck Terminating with the operator's finalizer (and their CRDs with them), no operator left",
    );
  } finally {
    console.log(`\nwithout the hold:\n${s.timeline.join('\n')}\n`);
    await removeSet(c, s);
  }
});

test.run();
