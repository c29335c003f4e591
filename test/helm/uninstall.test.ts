// The example operator's chart through the real helm on the real control plane,
// its pods run by the kubelet stand-in: helm install, helm upgrade with a
// changed pod template (a rolling update), helm uninstall --wait. With
// drainguard the operator's cleanup gets the RBAC it needs and nothing of the
// release is left; the same chart with drainguard switched off fails as
// tigera-operator did (its cleanup refused once Helm deleted its RBAC, its
// custom resource stuck). And Kubebuilder's 10 s grace period.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { type TestCluster, useCluster } from '../support/cluster/index.ts';
import { Kubelet } from '../support/kubelet/index.ts';
import type { HelmResult } from '../support/helm.ts';
import { adminAccess, adminHelm } from './support/admin.ts';
import { EXAMPLE, cleanupCharts, stageChart } from './support/charts.ts';
import { GROUP, HOLDER, RBAC, exampleImages, holdersOf, images, releaseRbac, strip } from './support/example.ts';

const FIN = 'operator.example.io/cleanup';
const HELM_TIMEOUT_MS = 150_000;
/** ConfigMaps the controller-manager publishes in every namespace (the second: OpenShift's fork of the controller-manager). */
const PUBLISHED = ['kube-root-ca.crt', 'openshift-service-ca.crt'];

let cluster: TestCluster;
let chart: string;

test.before(async () => {
  cluster = await useCluster();
  chart = stageChart(EXAMPLE);
});

test.after(async () => {
  // Helm never deletes crds/; a failed test may leave custom resources behind.
  for (const plural of ['installations', 'apiservers']) {
    for (const o of await cluster.api.list(`${GROUP}/${plural}`).catch(() => [])) {
      await cluster.api.patch(`${GROUP}/${plural}/${o.metadata.name}`, { metadata: { finalizers: null } });
      await cluster.api.delete(`${GROUP}/${plural}/${o.metadata.name}`);
    }
    await cluster.api.delete(`/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${plural}.operator.example.io`);
  }
  for (const name of ['example-operator']) {
    for (const kind of ['clusterroles', 'clusterrolebindings']) {
      const o = await cluster.api.get(`${RBAC}/${kind}/${name}`);
      if (o) {
        await cluster.api.patch(`${RBAC}/${kind}/${name}`, { metadata: { finalizers: null } });
        await cluster.api.delete(`${RBAC}/${kind}/${name}`);
      }
    }
  }
  cleanupCharts();
});

const access = () => adminAccess(cluster);
const helm = (args: string[]): Promise<HelmResult> => adminHelm(cluster, HELM_TIMEOUT_MS)(args);
const setArgs = (set: Record<string, unknown>) => Object.entries(set).flatMap(([k, v]) => ['--set-json', `${k}=${JSON.stringify(v)}`]);

async function mustHelm(args: string[]): Promise<HelmResult> {
  const r = await helm(args);
  assert.equal(r.code, 0, `helm ${args.join(' ')}: ${r.stderr}${r.stdout}`);
  return r;
}

/** Polls CHECK every 50 ms while PROMISE runs; resolves with its result, what CHECK saw first when, and every poll's answer. */
async function observe<T>(
  promise: Promise<T>,
  check: () => Promise<string[]>,
): Promise<{ result: T; seen: Map<string, number>; polls: string[][] }> {
  const seen = new Map<string, number>();
  const polls: string[][] = [];
  let done = false;
  const loop = (async () => {
    while (!done) {
      const state = await check().catch(() => []);
      polls.push(state);
      for (const what of state) if (!seen.has(what)) seen.set(what, Date.now());
      await new Promise((r) => setTimeout(r, 50));
    }
  })();
  const result = await promise.finally(() => (done = true));
  await loop;
  return { result, seen, polls };
}

/**
 * FIRST came before THEN: both were seen, and no poll saw THEN without FIRST. Two
 * states first seen in the same poll are not ordered by their times (equal), but
 * a poll that saw THEN alone would show the wrong order.
 */
function assertBefore(polls: string[][], first: string, then: string, seen: Map<string, number>, t0: number): void {
  assert.ok(seen.has(first) && seen.has(then), timeline(seen, t0));
  assert.not.ok(
    polls.some((p) => p.includes(then) && !p.includes(first)),
    `${then} seen before ${first}:\n${timeline(seen, t0)}`,
  );
}

/** What the observer reports about the release's objects. */
function releaseState(ns: string) {
  return async (): Promise<string[]> => {
    const out: string[] = [];
    const inst = await cluster.api.get(`${GROUP}/installations/default`);
    out.push(!inst ? 'installation gone' : inst.metadata.deletionTimestamp ? 'installation deleting' : 'installation present');
    const deployment = await cluster.api.get(`/apis/apps/v1/namespaces/${ns}/deployments/example-operator`);
    if (!deployment) out.push('deployment gone');
    const crb = await cluster.api.get(`${RBAC}/clusterrolebindings/example-operator`);
    out.push(
      !crb
        ? 'clusterrolebinding gone'
        : crb.metadata.deletionTimestamp
          ? `clusterrolebinding deleting, held by ${holdersOf(crb).length}`
          : 'clusterrolebinding present',
    );
    const pods = await cluster.api.list(`/api/v1/namespaces/${ns}/pods?labelSelector=app.kubernetes.io%2Fname%3Dexample-operator`);
    if (pods.length === 0) out.push('operator pod gone');
    else if (pods.some((p: any) => p.metadata.deletionTimestamp)) out.push('operator pod terminating');
    const jobs = await cluster.api.list(`/api/v1/namespaces/${ns}/pods`);
    for (const p of jobs)
      if (p.metadata.labels?.['app.kubernetes.io/name']?.startsWith('example-operator-drainguard-'))
        out.push(`${p.metadata.labels['app.kubernetes.io/name']} pod ${p.status?.phase ?? 'Pending'}`);
    return out;
  };
}

/** releaseState, and the Deployment while it is being deleted: held by how many pods. */
function holdState(ns: string) {
  return async (): Promise<string[]> => {
    const out = await releaseState(ns)();
    const deployment = await cluster.api.get(`/apis/apps/v1/namespaces/${ns}/deployments/example-operator`);
    if (deployment?.metadata.deletionTimestamp) out.push(`deployment deleting, held by ${holdersOf(deployment).length}`);
    return out;
  };
}

const timeline = (seen: Map<string, number>, t0: number) =>
  [...seen]
    .sort((a, b) => a[1] - b[1])
    .map(([what, at]) => `${String(at - t0).padStart(6)} ms  ${what}`)
    .join('\n');

/** The custom resources adopted by the operator, and the operator's pod holding the guard on its RBAC. */
async function installed(ns: string, guarded: boolean): Promise<any> {
  await cluster.waitFor(
    async () => (await cluster.api.get(`${GROUP}/installations/default`))?.metadata.finalizers?.includes(FIN),
    30_000,
    'the operator adopted the Installation',
  );
  await cluster.waitFor(
    () => cluster.api.get(`/api/v1/namespaces/${ns}/configmaps/installations-default`),
    30_000,
    "the operator's ConfigMap for the Installation",
  );
  const [pod] = await cluster.api.list(`/api/v1/namespaces/${ns}/pods?labelSelector=app.kubernetes.io%2Fname%3Dexample-operator`);
  assert.ok(pod, 'the operator pod');
  if (guarded) {
    for (const path of [
      `${RBAC}/clusterroles/example-operator`,
      `${RBAC}/clusterrolebindings/example-operator`,
      `/api/v1/namespaces/${ns}/serviceaccounts/example-operator`,
    ]) {
      await cluster.waitFor(
        async () => holdersOf(await cluster.api.get(path)).includes(`${HOLDER}${pod.metadata.uid}`),
        30_000,
        `the guard on ${path}`,
      );
    }
  }
  return pod;
}

/**
 * Nothing of the release left: no RBAC (drainguard's own included: the post-delete hook deletes it), no finalizer, no Lease, no pod, no custom resource, no ConfigMap of the operator's.
 * `kept`: objects the uninstall leaves by their resource policy (no hook deleted them), held by nobody.
 */
async function nothingLeft(ns: string, kept: readonly string[] = []): Promise<void> {
  for (const path of kept) assert.equal(holdersOf(await cluster.api.get(path)), [], `${path} kept, held by nobody`);
  for (const path of [`${GROUP}/installations/default`, `${GROUP}/apiservers/default`, ...releaseRbac(ns).filter((p) => !kept.includes(p))])
    assert.equal(await cluster.api.get(path), undefined, `${path} is gone`);
  // The pods first: helm --wait returns once the Deployment is gone, while its pod may still be releasing.
  await cluster.emptied(`/api/v1/namespaces/${ns}/pods`, 'pod');
  // A holder Lease drainguard could no longer delete (its ServiceAccount went in the release) is owned by
  // its Pod: the garbage collector takes it, a moment after the Pod.
  await cluster.emptied(`/apis/coordination.k8s.io/v1/namespaces/${ns}/leases`, 'Lease');
  const configMaps = (await cluster.api.list(`/api/v1/namespaces/${ns}/configmaps`))
    .map((c: any) => c.metadata.name)
    .filter((n: string) => !PUBLISHED.includes(n));
  assert.equal(configMaps, [], 'the operator cleaned up what it made');
}

async function withKubelet(prefix: string, body: (ns: string, kubelet: Kubelet) => Promise<void>, runners = images): Promise<void> {
  const ns = (await cluster.namespace(prefix)).name;
  const kubelet = await Kubelet.start({ cluster: access(), namespaces: [ns], images: runners });
  try {
    await body(ns, kubelet);
    assert.equal(kubelet.errors, []);
  } catch (err) {
    process.stderr.write(`kubelet events:\n${kubelet.timeline()}\n`);
    for (const e of kubelet.events.filter((x) => x.what === 'started' && x.proc)) {
      process.stderr.write(`--- ${e.pod}/${e.container}\n${[...e.proc!.stdout, ...e.proc!.stderr].slice(-15).join('\n')}\n`);
    }
    throw err;
  } finally {
    // A failed test may leave the release: take it away without hooks, and what holds it.
    await helm(['uninstall', 'ex', '-n', ns, '--no-hooks', '--ignore-not-found']);
    await strip(cluster, ns);
    await kubelet.stop();
  }
}

const operatorOutput = async (kubelet: Kubelet, pod: string): Promise<string[]> => {
  const container = kubelet.events.find((e) => e.pod === pod && e.what === 'started' && e.container === 'manager');
  assert.ok(container?.proc, `the operator of ${pod} ran`);
  return container.proc.stdout;
};

test('drainguard on (native sidecar): install, a rolling update, uninstall --wait: the cleanup gets its RBAC, nothing is left', async () => {
  await withKubelet('helm-on', async (ns, kubelet) => {
    await mustHelm(['install', 'ex', chart, '-n', ns, '--wait', '--timeout', '60s']);
    const first = await installed(ns, true);

    // A rolling update: the new pod is ready (its guard set) before the old one drains.
    const { seen: upgrade } = await observe(
      mustHelm([
        'upgrade',
        'ex',
        chart,
        '-n',
        ns,
        '--reuse-values',
        ...setArgs({ podAnnotations: { revision: '2' } }),
        '--wait',
        '--timeout',
        '60s',
      ]),
      async () => {
        const role = await cluster.api.get(`${RBAC}/clusterroles/example-operator`);
        return [`holders ${holdersOf(role).length}`];
      },
    );
    assert.ok(upgrade.has('holders 2'), `both pods held the ClusterRole at once: ${[...upgrade.keys()].join(', ')}`);
    await cluster.waitFor(
      async () => !(await cluster.api.get(`/api/v1/namespaces/${ns}/pods/${first.metadata.name}`)),
      60_000,
      'the old pod gone',
    );
    const old = await operatorOutput(kubelet, first.metadata.name);
    assert.ok(old.includes('drain') && old.includes('drained'), old.join('\n'));
    assert.not.ok(old.includes('interrupted'), 'no reconcile interrupted');
    assert.ok(old.includes('stop: not an uninstall'));
    const role = await cluster.api.get(`${RBAC}/clusterroles/example-operator`);
    assert.not.ok(holdersOf(role).includes(`${HOLDER}${first.metadata.uid}`), "the old pod's finalizer released");
    const second = await installed(ns, true);
    assert.not.equal(second.metadata.uid, first.metadata.uid);

    const t0 = Date.now();
    const { result, seen, polls } = await observe(helm(['uninstall', 'ex', '-n', ns, '--wait', '--timeout', '30s']), releaseState(ns));
    if (process.env.TEST_VERBOSE)
      process.stdout.write(
        `helm uninstall --wait, drainguard on:\n${timeline(seen, t0)}\n${String(result.at - t0).padStart(6)} ms  helm exited ${result.code}\n`,
      );
    assert.equal(result.code, 0, `helm uninstall --wait: ${result.stderr}${result.stdout}`);
    // The pre-delete hook: the custom resources went first, while the operator ran with its RBAC.
    assertBefore(polls, 'installation gone', 'deployment gone', seen, t0);
    // The guard: the binding stayed, terminating and held, while the pod drained.
    assert.ok(seen.has('clusterrolebinding deleting, held by 1'), timeline(seen, t0));
    const out = await operatorOutput(kubelet, second.metadata.name);
    assert.ok(out.includes('cleanup installations/default: finalizer 200'), out.join('\n'));
    assert.ok(out.includes('cleanup apiservers/default: finalizer 200'), out.join('\n'));
    assert.ok(out.includes('saw clusterrolebinding terminating'), out.join('\n'));
    assert.ok(out.includes('stop: delete state 200'), out.join('\n'));
    assert.not.ok(out.includes('interrupted'));
    await nothingLeft(ns);
  });
});

test("uninstall without --wait (sidecar): the post-delete hook runs while the pod drains, waits for its holder, then deletes drainguard's own RBAC", async () => {
  await withKubelet('helm-nowait', async (ns, kubelet) => {
    await mustHelm(['install', 'ex', chart, '-n', ns, '--wait', '--timeout', '60s', ...setArgs({ 'drainguard.mode': 'sidecar' })]);
    const pod = await installed(ns, true);
    const own = `${RBAC}/clusterroles/drainguard:${ns}:example-operator`;
    const t0 = Date.now();
    const { result, seen, polls } = await observe(helm(['uninstall', 'ex', '-n', ns, '--timeout', '60s']), async () => {
      const state = await releaseState(ns)();
      const role = await cluster.api.get(own);
      state.push(!role ? "drainguard's ClusterRole gone" : `drainguard's ClusterRole held by ${holdersOf(role).length}`);
      return state;
    });
    if (process.env.TEST_VERBOSE)
      process.stdout.write(
        `helm uninstall, sidecar:\n${timeline(seen, t0)}\n${String(result.at - t0).padStart(6)} ms  helm exited ${result.code}\n`,
      );
    assert.equal(result.code, 0, `helm uninstall: ${result.stderr}${result.stdout}`);
    assert.match(result.stdout + result.stderr, /These resources were kept due to the resource policy:/);
    // drainguard's own RBAC stayed, held, while the pod drained, and went only after it.
    assert.ok(seen.has("drainguard's ClusterRole held by 1"), timeline(seen, t0));
    assertBefore(polls, 'clusterrolebinding gone', "drainguard's ClusterRole gone", seen, t0);
    const out = await operatorOutput(kubelet, pod.metadata.name);
    assert.ok(out.includes('stop: delete state 200'), out.join('\n'));
    await nothingLeft(ns);
  });
});

test('control: the same chart with drainguard switched off fails the tigera way', async () => {
  await withKubelet('helm-off', async (ns, kubelet) => {
    await mustHelm(['install', 'ex', chart, '-n', ns, '--wait', '--timeout', '60s', ...setArgs({ 'drainguard.enabled': false })]);
    const pod = await installed(ns, false);
    const t0 = Date.now();
    const { result, seen } = await observe(helm(['uninstall', 'ex', '-n', ns, '--wait', '--timeout', '20s']), releaseState(ns));
    if (process.env.TEST_VERBOSE)
      process.stdout.write(
        `helm uninstall --wait, drainguard off:\n${timeline(seen, t0)}\n${String(result.at - t0).padStart(6)} ms  helm exited ${result.code}\n`,
      );
    assert.not.equal(result.code, 0, 'helm uninstall --wait fails');
    const out = await operatorOutput(kubelet, pod.metadata.name);
    // Its cleanup is refused: the binding was gone before it got to it.
    assert.match(out.join('\n'), /saw clusterrolebinding (403|404|401)\nstop: delete state (403|401)/);
    // The custom resource is stuck: deleted, with the operator's finalizer nobody will remove.
    const inst = await cluster.api.get(`${GROUP}/installations/default`);
    assert.ok(inst?.metadata.deletionTimestamp, 'the Installation is terminating');
    assert.equal(inst.metadata.finalizers, [FIN]);
    assert.ok(await cluster.api.get(`/api/v1/namespaces/${ns}/configmaps/example-operator-state`), "the operator's state is left behind");
    assert.equal(await cluster.api.get(`${RBAC}/clusterroles/example-operator`), undefined, 'its RBAC went at once');
  });
});

/** drainguard's own RBAC in `ns`: `helm.sh/resource-policy: keep`, deleted by the post-delete hook alone. */
const ownRbac = (ns: string) => releaseRbac(ns).filter((p) => p.includes('drainguard:'));
const HOLD = ['installations.operator.example.io', 'apiservers.operator.example.io'];
/** The operator's cleanup of a deleted custom resource takes a teardown's time, longer than the hold's settle (5 s). */
const slowCleanup = exampleImages({ FIXTURE_FINALIZE_AFTER_MS: '8000' });

test('helm uninstall --no-hooks with drainguard.hold.kinds: the Deployment held until the operator finalized its custom resources; nothing left but what Helm keeps', async () => {
  await withKubelet(
    'helm-hold',
    async (ns, kubelet) => {
      await mustHelm(['install', 'ex', chart, '-n', ns, '--wait', '--timeout', '60s', ...setArgs({ 'drainguard.hold.kinds': HOLD })]);
      const pod = await installed(ns, true);
      await cluster.waitFor(
        async () =>
          holdersOf(await cluster.api.get(`/apis/apps/v1/namespaces/${ns}/deployments/example-operator`)).includes(
            `${HOLDER}${pod.metadata.uid}`,
          ),
        30_000,
        'the hold on the Deployment',
      );
      const t0 = Date.now();
      const { result, seen, polls } = await observe(
        helm(['uninstall', 'ex', '-n', ns, '--no-hooks', '--wait', '--timeout', '60s']),
        holdState(ns),
      );
      if (process.env.TEST_VERBOSE)
        process.stdout.write(
          `helm uninstall --no-hooks --wait, the hold on:\n${timeline(seen, t0)}\n${String(result.at - t0).padStart(6)} ms  helm exited ${result.code}\n`,
        );
      assert.equal(result.code, 0, `helm uninstall --no-hooks --wait: ${result.stderr}${result.stdout}`);
      // The hold: the Deployment stayed, held by the pod, until the Installation was gone; the guard kept the binding while the pod drained.
      assert.ok(seen.has('deployment deleting, held by 1'), timeline(seen, t0));
      assertBefore(polls, 'installation gone', 'deployment gone', seen, t0);
      assert.ok(seen.has('clusterrolebinding deleting, held by 1'), timeline(seen, t0));
      const out = await operatorOutput(kubelet, pod.metadata.name);
      for (const r of ['installations', 'apiservers']) {
        assert.ok(
          out.includes(`cleanup ${r}/default started`) &&
            out.includes(`cleanup ${r}/default: delete configmap 200`) &&
            out.includes(`cleanup ${r}/default: finalizer 200`),
          out.join('\n'),
        );
      }
      assert.ok(out.includes('stop: delete state 200'), out.join('\n'));
      await nothingLeft(ns, ownRbac(ns));
    },
    slowCleanup,
  );
});

test('control: the same helm uninstall --no-hooks without the hold leaves the custom resources stuck', async () => {
  await withKubelet(
    'helm-nohold',
    async (ns, kubelet) => {
      await mustHelm(['install', 'ex', chart, '-n', ns, '--wait', '--timeout', '60s']);
      const pod = await installed(ns, true);
      const t0 = Date.now();
      const { result, seen } = await observe(
        helm(['uninstall', 'ex', '-n', ns, '--no-hooks', '--wait', '--timeout', '20s']),
        holdState(ns),
      );
      if (process.env.TEST_VERBOSE)
        process.stdout.write(
          `helm uninstall --no-hooks --wait, no hold:\n${timeline(seen, t0)}\n${String(result.at - t0).padStart(6)} ms  helm exited ${result.code}\n`,
        );
      assert.not.equal(result.code, 0, 'helm uninstall --no-hooks --wait fails');
      assert.not.ok(
        [...seen.keys()].some((k) => k.startsWith('deployment deleting')),
        timeline(seen, t0),
      );
      const out = await operatorOutput(kubelet, pod.metadata.name);
      assert.not.ok(
        out.some((l) => /^cleanup .*: finalizer/.test(l)),
        `it removed no finalizer: ${out.join('\n')}`,
      );
      for (const r of ['installations', 'apiservers']) {
        const o = await cluster.api.get(`${GROUP}/${r}/default`);
        assert.ok(o?.metadata.deletionTimestamp, `${r}/default terminating`);
        assert.equal(o.metadata.finalizers, [FIN], `${r}/default stuck with the operator's finalizer`);
      }
    },
    slowCleanup,
  );
});

test("Kubebuilder's 10 s grace period (wrap mode): the drain and the release fit, nothing is left", async () => {
  await withKubelet('helm-10s', async (ns, kubelet) => {
    await mustHelm([
      'install',
      'ex',
      chart,
      '-n',
      ns,
      '--wait',
      '--timeout',
      '60s',
      ...setArgs({ 'drainguard.mode': 'wrap', 'drainguard.terminationGracePeriodSeconds': 10 }),
    ]);
    const pod = await installed(ns, true);
    assert.equal(pod.spec.terminationGracePeriodSeconds, 10);
    const t0 = Date.now();
    const { result, seen } = await observe(helm(['uninstall', 'ex', '-n', ns, '--wait', '--timeout', '30s']), releaseState(ns));
    if (process.env.TEST_VERBOSE)
      process.stdout.write(
        `helm uninstall --wait, 10 s grace, wrap:\n${timeline(seen, t0)}\n${String(result.at - t0).padStart(6)} ms  helm exited ${result.code}\n`,
      );
    assert.equal(result.code, 0, `helm uninstall --wait: ${result.stderr}${result.stdout}`);
    assert.ok(seen.get('operator pod gone')! - seen.get('operator pod terminating')! < 10_000, 'the pod is gone inside its grace period');
    const killed = kubelet.events.filter((e) => e.uid === pod.metadata.uid && /SIGKILL/.test(e.what));
    assert.equal(killed, [], 'no SIGKILL: drainguard released before the grace period ran out');
    const out = await operatorOutput(kubelet, pod.metadata.name);
    assert.ok(out.includes('stop: delete state 200'), out.join('\n'));
    await nothingLeft(ns);
  });
});

test.run();
