// The guard of one pod: a holder Lease, and this pod's finalizer on every
// guarded object, held while the operator runs and released after it stopped,
// always before the pod's grace period runs out.
//
//   start()    Lease, then finalizers; keeps trying while the API is down.
//   every tick renew the Lease, put back a finalizer someone removed, sweep
//              stale holders' finalizers.
//   release()  stop, then remove this pod's finalizers and the Lease, by the deadline
//              (release-held.ts).
//   hold(), letGo()  one more object held from now on, and let go of early (the hold's
//              Deployment, src/hold): swept, released and reported as the others.

import { type Clock, systemClock } from '../clock.ts';
import type { GuardTarget } from '../config/guard-list.ts';
import { DrainguardError } from '../errors.ts';
import { guardTargetKey } from '../config/guard-list.ts';
import type { KubeClient } from '../kube/client.ts';
import { isStatus } from '../kube/errors.ts';
import { type KubeObject, RESOURCES, describe } from '../kube/objects.ts';
import type { PodRef } from '../kube/pod.ts';
import { KEEP_TRYING, backoff } from '../kube/retry.ts';
import { type Logger, silentLogger } from '../log/logger.ts';
import { ReleaseAnchor } from './anchor.ts';
import { addFinalizer, removeFinalizers } from './finalizers.ts';
import { listHolders } from './holders.ts';
import { HolderLease } from './lease.ts';
import { holdersOf, sweep, toSweep } from './sweep.ts';
import { type HeldTarget, finalizerFor, holderOf, refOf } from './names.ts';
import { releaseHeld } from './release-held.ts';

export interface GuardOptions {
  readonly client: KubeClient;
  readonly targets: readonly GuardTarget[];
  readonly pod: PodRef;
  /** How long the Lease stays valid without renewal; it is renewed every third of it. */
  readonly leaseDurationMs: number;
  readonly logger?: Logger;
  /** What the Lease's times, the renewals and the backoff go by; the wall clock by default. */
  readonly clock?: Clock;
  /** Told when the release left this pod's finalizer on objects, with the command that frees them (for an Event). */
  readonly onReleaseFailed?: (objects: readonly string[], fix: string) => void;
}

/** What an object's guard looks like from here. */
export type ObjectState =
  | 'unknown' // not read yet (API unreachable)
  | 'guarded' // carries this pod's finalizer
  | 'missing' // does not exist
  | 'unguarded-deleting' // being deleted without our finalizer: it cannot be added any more
  | 'error'; // the last write or read failed (see message)

/** What the guard reports, read at scrape time and by /readyz. */
export interface GuardReport {
  /** The Lease is held and every existing guarded object carries this pod's finalizer (readiness waits for it). */
  readonly set: boolean;
  /** Guarded objects that carry this pod's finalizer now. */
  readonly objectsHeld: number;
  /** Failed Kubernetes API calls since start. */
  readonly errors: number;
  /** The hold's part (src/hold), when it holds the Deployment through this guard. */
  readonly hold?: { readonly held: boolean; readonly released: Readonly<Record<string, number>> };
}

export interface GuardStatus {
  /** As GuardReport.set. */
  readonly set: boolean;
  readonly lease: 'held' | 'not-held';
  readonly objects: readonly {
    readonly object: string;
    readonly state: ObjectState;
    readonly deleting: boolean;
    readonly message?: string;
  }[];
  readonly lastError?: string;
}

interface Tracked {
  readonly target: HeldTarget;
  state: ObjectState;
  object?: KubeObject;
  message?: string;
  /** Whether our finalizer may be on it (we added it, or we could not tell). */
  mayHold: boolean;
  /** Let go of before the release (letGo): never held again. */
  letGo?: boolean;
}

export class Guard {
  readonly #client: KubeClient;
  readonly #pod: PodRef;
  readonly #finalizer: string;
  readonly #lease: HolderLease;
  readonly #anchor: ReleaseAnchor;
  /** The last attempt to make or update the release anchor failed (said once). */
  #anchorFailed = false;
  readonly #leaseDurationMs: number;
  readonly #log: Logger;
  readonly #clock: Clock;
  readonly #onReleaseFailed?: (objects: readonly string[], fix: string) => void;
  readonly #objects: Tracked[];
  readonly #stop = new AbortController();
  /** Cuts the wait between ticks short (an object to hold was added). */
  #wake = new AbortController();
  #podChecked = false;
  /** The pod's ServiceAccount, from the Pod: whose permissions the release order keeps. */
  #serviceAccount?: string;
  #lastError?: string;
  #failures = 0;
  #errors = 0;
  #loop?: Promise<void>;
  #releasing?: Promise<void>;

  constructor(options: GuardOptions) {
    this.#client = options.client;
    this.#pod = options.pod;
    this.#finalizer = finalizerFor(options.pod.uid);
    this.#leaseDurationMs = Math.max(1000, options.leaseDurationMs);
    this.#log = (options.logger ?? silentLogger).with({ guard: this.#finalizer });
    this.#clock = options.clock ?? systemClock;
    this.#onReleaseFailed = options.onReleaseFailed;
    this.#objects = options.targets.map((target) => ({ target, state: 'unknown', mayHold: true }));
    this.#lease = new HolderLease({
      client: this.#client,
      pod: options.pod,
      guards: options.targets.map(guardTargetKey),
      durationMs: this.#leaseDurationMs,
      logger: this.#log,
      clock: this.#clock,
    });
    this.#anchor = new ReleaseAnchor(this.#client, options.pod, this.#finalizer);
  }

  get finalizer(): string {
    return this.#finalizer;
  }

  status(): GuardStatus {
    const objects = this.#objects.map((o) => ({
      object: guardTargetKey(o.target),
      state: o.state,
      deleting: Boolean(o.object?.metadata.deletionTimestamp),
      ...(o.message !== undefined && { message: o.message }),
    }));
    const set = this.#lease.held && this.#objects.every((o) => o.letGo || o.state === 'guarded' || o.state === 'missing');
    return {
      set,
      lease: this.#lease.held ? 'held' : 'not-held',
      objects,
      ...(this.#lastError !== undefined && { lastError: this.#lastError }),
    };
  }

  /** The figures readiness and metrics read. */
  report(): GuardReport {
    return { set: this.status().set, objectsHeld: this.#objects.filter((o) => o.state === 'guarded').length, errors: this.#errors };
  }

  /** Sets the guard and keeps holding it in the background. Never throws, never waits. */
  start(): void {
    if (this.#loop) return;
    const accounts = this.#objects.filter((o) => o.target.kind === 'serviceaccount').map((o) => guardTargetKey(o.target));
    if (accounts.length > 0) {
      this.#log.warn(
        'a guarded ServiceAccount keeps its object, not its tokens: ' +
          "the API server rejects them 60 s after the ServiceAccount's deletion, finalizer or not; " +
          'clean up within that minute, or keep the ServiceAccount out of the uninstall',
        { serviceAccounts: accounts },
      );
    }
    this.#log.info('guard starting', {
      lease: this.#lease.name,
      objects: this.#objects.map((o) => guardTargetKey(o.target)),
      api: this.#client.server,
    });
    this.#loop = this.#run().catch((err: unknown) => this.#log.error('guard loop failed', { error: err as Error }));
  }

  async #run(): Promise<void> {
    const signal = this.#stop.signal;
    const renewEvery = Math.round(this.#leaseDurationMs / 3);
    while (!signal.aborted) {
      let wait = renewEvery;
      try {
        await this.#tick(signal);
        if (this.#failures > 0) this.#log.info('Kubernetes API reachable again: guard set', { afterFailures: this.#failures });
        this.#failures = 0;
        this.#lastError = undefined;
      } catch (err) {
        if (signal.aborted) break;
        this.#failures++;
        this.#errors++;
        this.#lastError = (err as Error).message;
        wait = Math.min(renewEvery, backoff(KEEP_TRYING, this.#failures));
        // The first failure and then every tenth: an API that stays down must not flood the log.
        if (this.#failures === 1 || this.#failures % 10 === 0) {
          this.#log.warn('guard not set: Kubernetes API call failed, the operator runs on and drainguard keeps trying', {
            error: this.#lastError,
            failures: this.#failures,
            retryInMs: wait,
          });
        }
      }
      await this.#clock.sleep(wait, AbortSignal.any([signal, this.#wake.signal]));
      if (this.#wake.signal.aborted) this.#wake = new AbortController();
    }
  }

  /** Holds `target` too from now on (at once, not at the next renewal); never throws. */
  hold(target: HeldTarget): void {
    const key = guardTargetKey(target);
    if (this.#objects.some((o) => guardTargetKey(o.target) === key)) return;
    this.#objects.push({ target, state: 'unknown', mayHold: true });
    this.#wake.abort();
  }

  /**
   * Removes this pod's finalizer from `target` now and never adds it again; resolves with
   * the removal's outcome or its error (then the release tries once more). Never throws.
   */
  async letGo(target: HeldTarget, options: { deadline?: number } = {}): Promise<'removed' | 'missing' | Error> {
    const key = guardTargetKey(target);
    const o = this.#objects.find((x) => guardTargetKey(x.target) === key);
    if (!o) return 'missing';
    o.letGo = true;
    try {
      const result = await removeFinalizers(this.#client, refOf(o.target), [this.#finalizer], options);
      o.mayHold = false;
      if (result.state === 'missing') {
        o.state = 'missing';
        return 'missing';
      }
      o.object = result.object;
      return 'removed';
    } catch (err) {
      return err as Error;
    }
  }

  async #tick(signal: AbortSignal): Promise<void> {
    if (!this.#podChecked) await this.#readPod(signal);
    await this.#lease.hold(signal);
    const foreign = new Set<string>();
    await Promise.all(this.#objects.map((o) => this.#holdObject(o, signal, foreign)));
    await this.#holdAnchor(signal);
    if (foreign.size > 0) await this.#sweep(foreign, signal);
    const failed = this.#objects.filter((o) => o.state === 'error');
    if (failed.length > 0)
      throw new DrainguardError('DG_GUARD_HOLD', failed.map((o) => `${guardTargetKey(o.target)}: ${o.message}`).join('; '));
  }

  /** Its ServiceAccount, and a check that DRAINGUARD_POD_UID is this pod's. */
  async #readPod(signal: AbortSignal): Promise<void> {
    const ref = { ...RESOURCES.pod, namespace: this.#pod.namespace, name: this.#pod.name };
    try {
      const pod = await this.#client.get(ref, { signal, retry: false });
      this.#podChecked = true;
      const account = (pod.spec as { serviceAccountName?: unknown } | undefined)?.serviceAccountName;
      this.#serviceAccount = typeof account === 'string' && account !== '' ? account : 'default';
      if (pod.metadata.uid !== this.#pod.uid) {
        this.#log.warn(
          'DRAINGUARD_POD_UID is not the uid of the pod DRAINGUARD_POD_NAME names: the holder Lease would be collected at once',
          {
            pod: describe(ref),
            uid: pod.metadata.uid,
            given: this.#pod.uid,
          },
        );
      }
    } catch (err) {
      if (!isStatus(err, 403, 404)) throw err;
      this.#podChecked = true;
      this.#log.debug('cannot read this pod to check its uid', { error: (err as Error).message });
    }
  }

  async #holdObject(o: Tracked, signal: AbortSignal, foreign: Set<string>): Promise<void> {
    if (o.letGo) return;
    const ref = refOf(o.target);
    const name = guardTargetKey(o.target);
    const before = o.state;
    try {
      const outcome = await addFinalizer(this.#client, ref, this.#finalizer, { signal });
      o.message = undefined;
      if (outcome.state === 'missing') {
        o.state = 'missing';
        o.object = undefined;
        o.mayHold = false;
        if (before !== 'missing')
          this.#log.warn(`guarded object ${name} does not exist: nothing to hold; drainguard guards it once it is created`, {
            object: name,
          });
        return;
      }
      o.object = outcome.object;
      for (const f of outcome.object.metadata.finalizers ?? []) {
        const uid = holderOf(f);
        if (uid !== undefined && f !== this.#finalizer) foreign.add(uid);
      }
      if (outcome.state === 'deleting') {
        o.state = 'unguarded-deleting';
        o.mayHold = false;
        if (before !== 'unguarded-deleting') {
          this.#log.warn(`${name} is being deleted and does not carry this pod's finalizer: the API server forbids adding one now`, {
            object: name,
          });
        }
        return;
      }
      o.state = 'guarded';
      o.mayHold = true;
      if (outcome.state === 'added')
        this.#log.info(before === 'guarded' ? 'finalizer was removed by someone else: added again' : 'finalizer added', { object: name });
    } catch (err) {
      if (signal.aborted) return;
      o.state = 'error';
      o.message = (err as Error).message;
    }
  }

  /** The release anchor owns what this pod holds now. Without it the guard still holds; what it costs is said once. */
  async #holdAnchor(signal: AbortSignal): Promise<void> {
    try {
      await this.#anchor.hold(
        this.#objects.filter((o) => !o.letGo && o.state === 'guarded'),
        { signal },
      );
      if (this.#anchorFailed) this.#log.info('release anchor made', { anchor: guardTargetKey(this.#anchor.target) });
      this.#anchorFailed = false;
    } catch (err) {
      if (signal.aborted) return;
      if (!this.#anchorFailed)
        this.#log.warn(
          "could not make the release anchor: if drainguard's own RBAC is deleted with the rest, " +
            'a finalizer may stay after the release (docs/guard.md, "Nothing stuck"); retrying on every renewal',
          { anchor: guardTargetKey(this.#anchor.target), error: (err as Error).message },
        );
      this.#anchorFailed = true;
    }
  }

  /** Removes the finalizers of holders whose Lease is gone or expired from the guarded objects. */
  async #sweep(foreign: Set<string>, signal: AbortSignal): Promise<void> {
    const holders = await listHolders(this.#client, this.#pod.namespace, () => this.#clock.now(), { signal });
    if ([...foreign].every((uid) => holders.state(uid).live)) return;
    // A dead holder's release anchor too: it would keep what that holder pinned (anchor.ts).
    const anchors = holders.anchors.map((object) => ({
      target: { kind: 'lease' as const, namespace: this.#pod.namespace, name: object.metadata.name },
      object,
    }));
    await Promise.all(
      [...this.#objects, ...anchors].map(async (o) => {
        const { remove } = toSweep(holdersOf(o.object, holders), { except: this.#finalizer });
        if (remove.length === 0) return;
        const name = guardTargetKey(o.target);
        try {
          const result = await sweep(this.#client, o.target, remove, { signal });
          if (result.state === 'removed') {
            o.object = result.object;
            this.#log.info('stale holder finalizers removed', { object: name, holders: remove.map((h) => `${h.uid} (${h.staleBecause})`) });
          }
        } catch (err) {
          if (!signal.aborted) this.#log.warn('could not remove stale holder finalizers', { object: name, error: (err as Error).message });
        }
      }),
    );
  }

  /** Stops holding, removes this pod's finalizers and the Lease; never throws, never outlasts `deadline` (epoch ms). */
  release(deadline: number): Promise<void> {
    this.#releasing ??= this.#release(deadline).catch((err: unknown) => this.#log.error('guard release failed', { error: err as Error }));
    return this.#releasing;
  }

  async #release(deadline: number): Promise<void> {
    this.#stop.abort();
    if (!this.#loop) return;
    const held = this.#loop.then(() => ({
      objects: this.#objects.filter((o) => o.mayHold),
      identity: { namespace: this.#pod.namespace, serviceAccount: this.#serviceAccount },
    }));
    await releaseHeld(
      {
        client: this.#client,
        finalizer: this.#finalizer,
        lease: this.#lease,
        anchor: this.#anchor,
        logger: this.#log,
        clock: this.#clock,
        onReleaseFailed: this.#onReleaseFailed,
        held,
      },
      deadline,
    );
  }
}
