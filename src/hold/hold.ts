// The hold of one pod: its guard's finalizer on the Deployment above it, so
// that deleting the Deployment in the background (Helm, kubectl, Flux) leaves
// the operator running until the custom resources deleted with it are
// finalized; then the finalizer goes early and the pods stop as in a rollout.
//
//   start()  find the Deployment (Pod → ReplicaSet → Deployment), have the
//            guard hold it, watch it.
//   on its deletion  wait SETTLE, then list the listed kinds until nothing
//            being deleted carries a finalizer (finalized), or TIMEOUT; at
//            once for foreground and orphan deletion (decide.ts).
//   stop()   at the release phase: the guard's release takes the finalizer
//            with the others.

import type { HoldKind } from '../config/hold-list.ts';
import { holdKindName } from '../config/hold-list.ts';
import type { KubeClient } from '../kube/client.ts';
import { isStatus } from '../kube/errors.ts';
import type { KubeObject } from '../kube/objects.ts';
import type { PodRef } from '../kube/pod.ts';
import { KEEP_TRYING, backoff } from '../kube/retry.ts';
import { type Logger, silentLogger } from '../log/logger.ts';
import { type Clock, systemClock } from '../clock.ts';
import { type Decision, type Finalizing, RELEASE_REASONS, type ReleaseReason, decide } from './decide.ts';
import { type DeploymentTarget, findDeployment } from './deployment.ts';
import { FinalizingObjects } from './finalizing.ts';
import { watchDeployment } from './watch.ts';

/** How often the listed kinds are listed while the hold waits for their finalizers. */
export const POLL_MS = 1000;

/** What the hold is made of: DRAINGUARD_HOLD and its two timings. */
export interface HoldSettings {
  readonly kinds: readonly HoldKind[];
  readonly timeoutMs: number;
  readonly settleMs: number;
}

/** What holds the Deployment: the pod's guard (guard/guard.ts), as one more object of its own. */
export interface Holder {
  /** This pod's finalizer. */
  readonly finalizer: string;
  /** Holds the Deployment from now on; never throws. */
  hold(deployment: DeploymentTarget): void;
  /** Removes the finalizer now, for good; resolves with the removal's outcome or its error. */
  letGo(deployment: DeploymentTarget): Promise<'removed' | 'missing' | Error>;
}

export interface HoldOptions extends HoldSettings {
  readonly client: KubeClient;
  readonly guard: Holder;
  readonly pod: PodRef;
  readonly logger?: Logger;
  readonly clock?: Clock;
  readonly pollMs?: number;
  /** Told once, when the hold lets go early (for the HoldReleased Event). */
  readonly onReleased?: (reason: ReleaseReason, message: string) => void;
}

export type HoldState = 'finding' | 'no-deployment' | 'holding' | 'deleting' | 'released' | 'gone' | 'stopped';

/** What readiness, metrics and the log read. */
export interface HoldReport {
  /** The Deployment was looked for: found and handed to the guard, or none above this pod (readiness waits for it). */
  readonly settled: boolean;
  /** This pod's finalizer is on the Deployment, as far as the hold knows. */
  readonly held: boolean;
  readonly released: Readonly<Record<ReleaseReason, number>>;
  readonly state: HoldState;
  readonly deployment?: string;
  /** While the Deployment is deleting: what is still being finalized (undefined: not known). */
  readonly waitingFor?: readonly Finalizing[];
}

const FOREGROUND_FIX =
  'delete with background propagation: kubectl delete --cascade=background (its default), Helm uninstall as it is; ' +
  'for Argo CD, the sync option PrunePropagationPolicy=background';

export class Hold {
  readonly #o: HoldOptions;
  readonly #log: Logger;
  readonly #clock: Clock;
  readonly #stop = new AbortController();
  readonly #warned = new Set<string>();
  readonly #released = Object.fromEntries(RELEASE_REASONS.map((r) => [r, 0])) as Record<ReleaseReason, number>;
  #state: HoldState = 'finding';
  #target?: DeploymentTarget;
  #finalizers?: readonly string[];
  #deletingSeenAt?: number;
  #finalizing?: readonly Finalizing[];
  #lastListed?: Error[];
  #reason?: ReleaseReason;
  #cancelTimer?: () => void;
  #polling = false;
  #loop?: Promise<void>;

  constructor(options: HoldOptions) {
    this.#o = options;
    this.#log = (options.logger ?? silentLogger).with({ hold: options.kinds.map(holdKindName).join(',') });
    this.#clock = options.clock ?? systemClock;
  }

  report(): HoldReport {
    return {
      settled: this.#state !== 'finding',
      held: this.#state === 'holding' || this.#state === 'deleting',
      released: { ...this.#released },
      state: this.#state,
      ...(this.#target && { deployment: `deployment/${this.#target.namespace}/${this.#target.name}` }),
      ...(this.#state === 'deleting' && { waitingFor: this.#finalizing }),
    };
  }

  /** Finds the Deployment and holds it in the background; never throws, never waits. */
  start(): void {
    this.#loop ??= this.#run().catch((err: unknown) => this.#log.error('hold loop failed', { error: err as Error }));
  }

  /** Stops watching (the release phase: the guard's release takes the finalizer). */
  async stop(): Promise<void> {
    this.#stop.abort();
    this.#cancelTimer?.();
    if (this.#state !== 'released' && this.#state !== 'gone' && this.#state !== 'no-deployment') this.#state = 'stopped';
    await this.#loop;
  }

  #warnOnce(message: string, error: Error): void {
    const key = `${message}: ${error.message}`;
    if (this.#warned.has(key)) return;
    this.#warned.add(key);
    const fix = isStatus(error, 403)
      ? { fix: "grant drainguard's ServiceAccount the verb on the resource the message names (docs: the hold's RBAC)" }
      : {};
    this.#log.warn(message, { error: error.message, ...fix });
  }

  async #run(): Promise<void> {
    const signal = this.#stop.signal;
    const { client, pod } = this.#o;
    for (let failures = 1; !signal.aborted; failures++) {
      try {
        const found = await findDeployment(client, pod, signal);
        if ('none' in found) {
          this.#state = 'no-deployment';
          this.#log.warn(`the hold needs a Deployment above this pod, and ${found.none}: nothing is held, the operator runs on`, {
            pod: `${pod.namespace}/${pod.name}`,
          });
          return;
        }
        this.#target = found.found;
        break;
      } catch (err) {
        if (signal.aborted) return;
        this.#warnOnce('the hold cannot find its Deployment yet: Kubernetes API call failed, drainguard keeps trying', err as Error);
        await this.#clock.sleep(backoff(KEEP_TRYING, failures), signal);
      }
    }
    if (signal.aborted || !this.#target) return;
    const target = this.#target;
    this.#o.guard.hold(target);
    this.#state = 'holding';
    this.#log.info("hold set: the Deployment carries this pod's finalizer", {
      deployment: `${target.namespace}/${target.name}`,
      finalizer: this.#o.guard.finalizer,
      timeoutMs: this.#o.timeoutMs,
      settleMs: this.#o.settleMs,
    });
    await watchDeployment({
      client,
      target,
      signal,
      clock: this.#clock,
      onObject: (d) => this.#observe(d),
      onError: (err) =>
        this.#warnOnce('the hold cannot watch its Deployment: Kubernetes API call failed, it keeps holding and trying', err),
    });
  }

  /** A state of the Deployment, as the watch saw it. */
  #observe(d: KubeObject | null): void {
    if (this.#state === 'released' || this.#state === 'stopped') {
      if (d === null && this.#state === 'released') this.#state = 'gone';
      return;
    }
    if (d === null) {
      this.#state = 'gone';
      this.#cancelTimer?.();
      return;
    }
    if (!d.metadata.deletionTimestamp) return;
    this.#finalizers = d.metadata.finalizers ?? [];
    if (this.#deletingSeenAt === undefined) {
      this.#deletingSeenAt = this.#clock.now();
      this.#state = 'deleting';
      this.#log.info('the Deployment is being deleted: holding the operator until the listed custom resources are finalized', {
        deployment: `${d.metadata.namespace}/${d.metadata.name}`,
        finalizers: this.#finalizers,
        settleMs: this.#o.settleMs,
        timeoutMs: this.#o.timeoutMs,
      });
    }
    this.#evaluate();
  }

  #decide(): Decision {
    return decide({
      deletingFinalizers: this.#finalizers,
      deletingSeenAt: this.#deletingSeenAt,
      finalizing: this.#finalizing,
      now: this.#clock.now(),
      settleMs: this.#o.settleMs,
      timeoutMs: this.#o.timeoutMs,
    });
  }

  #evaluate(): void {
    if (this.#state !== 'deleting' || this.#stop.signal.aborted) return;
    const d = this.#decide();
    if ('release' in d) {
      void this.#release(d.release);
      return;
    }
    this.#cancelTimer?.();
    if (d.hold === 'settling') this.#cancelTimer = this.#clock.after(d.lookAt - this.#clock.now(), () => this.#evaluate());
    if (d.hold === 'waiting') {
      this.#cancelTimer = this.#clock.after(d.until - this.#clock.now(), () => this.#evaluate());
      if (!this.#polling) void this.#poll();
    }
  }

  /** Lists the listed kinds every POLL_MS while the hold waits, each result decided on. */
  async #poll(): Promise<void> {
    this.#polling = true;
    const lister = new FinalizingObjects(this.#o.client, this.#o.kinds, this.#o.pod.namespace);
    while (this.#state === 'deleting' && !this.#stop.signal.aborted) {
      const listed = await lister.list(this.#stop.signal);
      if (this.#stop.signal.aborted) break;
      for (const e of listed.errors) this.#warnOnce(`the hold cannot list ${e.kind}: it keeps holding until the timeout`, e.error);
      this.#lastListed = listed.errors.map((e) => e.error);
      this.#finalizing = listed.finalizing;
      this.#evaluate();
      if (this.#state !== 'deleting') break;
      // One abort listener at a time: a listener left per round would pile up on the signal.
      await new Promise<void>((resolve) => {
        const onAbort = () => (cancel(), resolve());
        const cancel = this.#clock.after(this.#o.pollMs ?? POLL_MS, () => {
          this.#stop.signal.removeEventListener('abort', onAbort);
          resolve();
        });
        this.#stop.signal.addEventListener('abort', onAbort, { once: true });
      });
    }
    this.#polling = false;
  }

  #message(reason: ReleaseReason): string {
    const since = this.#deletingSeenAt === undefined ? 0 : this.#clock.now() - this.#deletingSeenAt;
    const after = `${(since / 1000).toFixed(1)}s after the Deployment's deletion was seen`;
    switch (reason) {
      case 'finalized':
        return (
          `hold released (finalized): no ${this.#o.kinds.map(holdKindName).join(', ')} being deleted ` +
          `carries a finalizer any more, ${after}`
        );
      case 'timeout': {
        const left =
          this.#finalizing === undefined
            ? `not known (${(this.#lastListed ?? []).map((e) => e.message).join('; ') || 'not listed yet'})`
            : this.#finalizing.map((f) => `${f.object} (${f.finalizers.join(', ')})`).join(', ');
        return `hold released (timeout): DRAINGUARD_HOLD_TIMEOUT passed, ${after}; still finalizing: ${left}`;
      }
      case 'foreground':
        return (
          'hold released (foreground): the Deployment is deleted in the foreground (foregroundDeletion), ' +
          `so the garbage collector deletes its pods first and the operator cannot be held; ${FOREGROUND_FIX}`
        );
      case 'orphan':
        return 'hold released (orphan): the Deployment is deleted with --cascade=orphan; its pods stay';
    }
  }

  async #release(reason: ReleaseReason): Promise<void> {
    if (this.#reason !== undefined) return;
    this.#reason = reason;
    this.#state = 'released';
    this.#cancelTimer?.();
    this.#released[reason]++;
    const message = this.#message(reason);
    const fields = {
      reason,
      deployment: this.#target && `${this.#target.namespace}/${this.#target.name}`,
      ...(this.#finalizing && this.#finalizing.length > 0 && { finalizing: this.#finalizing }),
    };
    if (reason === 'timeout' || reason === 'foreground') this.#log.warn(message, fields);
    else this.#log.info(message, fields);
    this.#o.onReleased?.(reason, message);
    const outcome = await this.#o.guard.letGo(this.#target!);
    if (outcome instanceof Error)
      this.#log.warn("could not remove this pod's finalizer from the Deployment: the guard's release tries again when the pod stops", {
        error: outcome.message,
      });
  }
}
