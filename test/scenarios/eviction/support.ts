// What the EvictionRequest files share: deploy/examples/wrap run by the
// kubelet stand-in on the control plane given, its pod naming drainguard's
// responder or not, drainguard's word on the EvictionRequest API awaited, a
// reconcile of WORK_MS under way.

import { randomBytes } from 'node:crypto';
import * as assert from 'uvu/assert';
import { Kubelet } from '../../support/kubelet/index.ts';
import type { KubeletCluster } from '../../support/kubelet/cluster.ts';
import { DRAINGUARD_IMAGE, drainguardImage, operatorImage } from '../../support/kubelet/runners.ts';
import { type Proc, fixture } from '../../support/proc.ts';
import { type KubeObject, example } from '../../deploy/support/manifests.ts';

export const RESPONDER = 'drainguard.dev/drain';
const GUARDED = ['ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding'];
const pathOf = (o: KubeObject) =>
  `${o.apiVersion === 'v1' ? '/api/v1' : `/apis/${o.apiVersion}`}${o.metadata.namespace ? `/namespaces/${o.metadata.namespace}` : ''}/${o.kind.toLowerCase()}s/${o.metadata.name}`;
export const WORK_MS = 6000;

export const at = (line: Record<string, unknown> | undefined) => Date.parse(line?.time as string);

export interface Running {
  readonly ns: string;
  readonly pod: string;
  readonly uid: string;
  readonly kubelet: Kubelet;
  readonly dg: Proc;
  /** The Pod's terminationGracePeriodSeconds, in ms: the kubelet's SIGKILL after its SIGTERM. */
  readonly graceMs: number;
  timeline(): string;
  close(): Promise<void>;
}

/** deploy/examples/wrap, its pod naming drainguard's responder or not, running, its reconcile of WORK_MS under way. */
export async function running(c: KubeletCluster, responder: boolean, keptByApi = responder): Promise<Running> {
  const ex = example('wrap', `er-${randomBytes(3).toString('hex')}`);
  const objects = structuredClone(ex.objects);
  const spec = objects.find((o) => o.kind === 'Deployment')!.spec.template.spec;
  if (responder) spec.evictionResponders = [{ name: RESPONDER, priority: 1000 }];
  spec.containers.find((k: { name: string }) => k.name === 'manager').env.push({ name: 'DRAINGUARD_LOG_LEVEL', value: 'debug' });
  const kubelet = await Kubelet.start({
    cluster: c.access,
    namespaces: [ex.namespace],
    images: {
      [DRAINGUARD_IMAGE]: drainguardImage(),
      [ex.image]: operatorImage(fixture('operator.ts'), { FIXTURE_WORK: String(WORK_MS), FIXTURE_WORK_AT: 'usr2' }),
    },
  });
  let dg: Proc | undefined;
  const timeline = () => `${kubelet.timeline()}\n${dg?.stderr.join('\n')}\n${dg?.stdout.join('\n')}`;
  // What the example leaves behind (the guarded objects hold finalizers of pods the test ended), removed.
  const close = async () => {
    await kubelet.stop();
    await c.freeAnchors(ex.namespace);
    for (const o of objects.filter((x) => GUARDED.includes(x.kind) || x.kind === 'Namespace')) {
      await c.api.call('PATCH', pathOf(o), { metadata: { finalizers: null } }, 'application/merge-patch+json');
      await c.api.call('DELETE', pathOf(o));
    }
  };
  try {
    c.kubectl(['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }));
    await c.poll(
      `/apis/apps/v1/namespaces/${ex.namespace}/deployments/${ex.name}`,
      (b) => b.status?.availableReplicas === 1,
      90_000,
      'the Deployment available',
    );
    const [pod] = (await c.api.must('GET', `/api/v1/namespaces/${ex.namespace}/pods`)).items;
    assert.equal(
      pod.spec.evictionResponders?.map((r: { name: string }) => r.name),
      keptByApi ? [RESPONDER] : undefined,
      keptByApi ? 'the API server keeps spec.evictionResponders (the gate is on)' : 'the API server drops spec.evictionResponders',
    );
    dg = await kubelet.process(pod.metadata.name, 'manager', 60_000);
    await dg.line('ready', 20_000);
    // drainguard's word on the EvictionRequest API, before the request is made.
    await dg.log(responder && keptByApi ? 'responding to eviction requests' : 'not responding to eviction requests', 30_000);
    dg.kill('SIGUSR2');
    await dg.line('work start 0', 10_000);
    const graceMs = pod.spec.terminationGracePeriodSeconds * 1000;
    return { ns: ex.namespace, pod: pod.metadata.name, uid: pod.metadata.uid, kubelet, dg, graceMs, timeline, close };
  } catch (err) {
    await close();
    throw err;
  }
}
