// The Job controller (pkg/controller/job): pods from the template until
// `completions` succeeded (each tracked with the batch.kubernetes.io/job-tracking
// finalizer until counted), failures within backoffLimit (restarts of
// OnFailure pods count), then SuccessCriteriaMet/Complete or
// FailureTarget/Failed, and the status counts. Pod changes are looked at in
// batches a second apart (syncJobBatchPeriod), as upstream does.

import { ApiError } from '../errors.ts';
import type { ResourceType } from '../resources.ts';
import type { Change, KubeObject } from '../store.ts';
import { timestamp } from '../strategies.ts';
import { Controller } from './controller.ts';
import { controllerOf, isReady, owned, podFromTemplate } from './pods.ts';

const TRACKING = 'batch.kubernetes.io/job-tracking';
const BATCH_MS = 1_000;
/** The pod failure backoff: 10 s, doubling, at most 6 min. */
const BACKOFF_MS = 10_000;

export class JobController extends Controller {
  constructor(registry: ConstructorParameters<typeof Controller>[0]) {
    super(registry, 'job-controller');
  }

  protected changed(c: Change): void {
    if (c.storage === 'batch/jobs' && c.type !== 'DELETED') this.enqueue(`${c.object.metadata.namespace}/${c.object.metadata.name}`);
    if (c.storage === '/pods') {
      const ref = controllerOf(c.object);
      if (ref?.kind === 'Job') this.enqueue(`${c.object.metadata.namespace}/${ref.name}`, BATCH_MS);
      // A pod of a Job that is gone still has its tracking finalizer to lose.
      else if (c.type !== 'DELETED' && (c.object.metadata.finalizers ?? []).includes(TRACKING)) this.enqueue(`orphan/${c.object.metadata.namespace}/${c.object.metadata.name}`);
    }
  }

  protected resync(): void {
    for (const j of this.registry.store.list('batch/jobs')) this.enqueue(`${j.metadata.namespace}/${j.metadata.name}`);
  }

  #type(group: string, resource: string): ResourceType {
    return this.registry.types.find(group, 'v1', resource)!;
  }

  protected sync(key: string): void {
    if (key.startsWith('orphan/')) {
      const [, ns, name] = key.split('/');
      const pod = this.registry.store.get('/pods', ns, name!);
      const owner = pod && controllerOf(pod);
      if (pod && !(owner && this.registry.store.get('batch/jobs', ns, owner.name)?.metadata.uid === owner.uid)) this.#untrack(pod);
      return;
    }
    const [namespace, name] = key.split('/') as [string, string];
    const job = this.registry.store.get('batch/jobs', namespace, name);
    if (!job) return;
    const now = this.registry.now();
    const pods = owned(this.registry, '/pods', job);
    const status: Record<string, any> = structuredClone(job.status ?? {});
    const finished = (status.conditions ?? []).some((c: any) => ['Complete', 'Failed'].includes(c.type) && c.status === 'True');
    const succeededPods = pods.filter((p) => p.status?.phase === 'Succeeded');
    const failedPods = pods.filter((p) => p.status?.phase === 'Failed' || (p.metadata.deletionTimestamp && p.status?.phase !== 'Succeeded'));
    const active = pods.filter((p) => !['Succeeded', 'Failed'].includes(p.status?.phase) && !p.metadata.deletionTimestamp);
    const terminating = pods.filter((p) => p.metadata.deletionTimestamp && !['Succeeded', 'Failed'].includes(p.status?.phase));
    // Terminated pods are counted once, then their tracking finalizer goes.
    let succeeded = status.succeeded ?? 0;
    let failed = status.failed ?? 0;
    for (const p of succeededPods) {
      if (!(p.metadata.finalizers ?? []).includes(TRACKING)) continue;
      succeeded++;
      this.#untrack(p);
    }
    for (const p of failedPods) {
      if (!(p.metadata.finalizers ?? []).includes(TRACKING)) continue;
      failed++;
      this.#untrack(p);
    }
    const completions = job.spec.completions ?? 1;
    const restarts = job.spec.template?.spec?.restartPolicy === 'OnFailure' ? pods.reduce((n, p) => n + (p.status?.containerStatuses ?? []).reduce((m: number, c: any) => m + (c.restartCount ?? 0), 0), 0) : 0;
    const conditions: any[] = status.conditions ?? [];
    const add = (type: string, reason: string, message: string) => {
      if (!conditions.some((c) => c.type === type)) conditions.push({ type, status: 'True', lastProbeTime: timestamp(now), lastTransitionTime: timestamp(now), reason, message });
    };
    if (!finished && !job.spec.suspend) {
      status.startTime ??= timestamp(now);
      if (succeeded >= completions) {
        add('SuccessCriteriaMet', 'CompletionsReached', 'Reached expected number of succeeded pods');
        for (const p of active) this.#deletePod(p);
        if (active.length === 0 && terminating.length === 0) {
          add('Complete', 'CompletionsReached', 'Reached expected number of succeeded pods');
          status.completionTime = timestamp(now);
        }
      } else if (failed + restarts > (job.spec.backoffLimit ?? 6)) {
        add('FailureTarget', 'BackoffLimitExceeded', 'Job has reached the specified backoff limit');
        for (const p of active) this.#deletePod(p);
        if (active.length === 0 && terminating.length === 0) add('Failed', 'BackoffLimitExceeded', 'Job has reached the specified backoff limit');
      } else {
        const want = Math.min(job.spec.parallelism ?? 1, completions - succeeded) - active.length - terminating.length;
        const lastFailure = Math.max(0, ...failedPods.map((p) => Date.parse(p.status?.containerStatuses?.[0]?.state?.terminated?.finishedAt ?? p.metadata.creationTimestamp)));
        const wait = failed > 0 ? lastFailure + Math.min(BACKOFF_MS * 2 ** (failed - 1), 360_000) - now : 0;
        if (want > 0 && wait > 0) this.enqueue(key, wait);
        else for (let i = 0; i < want; i++) this.#createPod(job);
      }
    }
    const current = owned(this.registry, '/pods', job);
    const nowActive = current.filter((p) => !['Succeeded', 'Failed'].includes(p.status?.phase) && !p.metadata.deletionTimestamp);
    Object.assign(status, {
      active: nowActive.length,
      ready: nowActive.filter(isReady).length,
      terminating: current.filter((p) => p.metadata.deletionTimestamp && !['Succeeded', 'Failed'].includes(p.status?.phase)).length,
      succeeded,
      failed,
      uncountedTerminatedPods: {},
      ...(conditions.length > 0 && { conditions }),
    });
    for (const k of ['active', 'succeeded', 'failed']) if (status[k] === 0) delete status[k];
    this.registry.mutate(this.#type('batch', 'jobs'), namespace, name, (o) => {
      o.status = status;
    }, this.caller, 'status');
  }

  #createPod(job: KubeObject): void {
    try {
      this.registry.create(this.#type('', 'pods'), job.metadata.namespace, podFromTemplate(job.spec.template, job, 'batch/v1', 'Job', { finalizers: [TRACKING] }), this.caller);
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      this.enqueue(`${job.metadata.namespace}/${job.metadata.name}`, 1000);
    }
  }

  #untrack(pod: KubeObject): void {
    this.registry.mutate(this.#type('', 'pods'), pod.metadata.namespace, pod.metadata.name, (o) => {
      if (!(o.metadata.finalizers ?? []).includes(TRACKING)) return false;
      o.metadata.finalizers = o.metadata.finalizers.filter((f: string) => f !== TRACKING);
    }, this.caller);
  }

  #deletePod(pod: KubeObject): void {
    try {
      this.registry.delete(this.#type('', 'pods'), pod.metadata.namespace, pod.metadata.name, {}, this.caller);
    } catch (err) {
      if (!(err instanceof ApiError && err.code === 404)) throw err;
    }
  }
}
