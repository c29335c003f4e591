// The stop, in both modes: the termination state (the first SIGTERM or SIGINT
// drains, the second cuts it short, later ones change nothing) and Deadlines,
// the only code that turns grace periods, the Pod's deletion and timeouts into
// moments (docs/deadlines.md).
//
//   SIGTERM ──drain──▶ drain deadline ──stop signal──▶ kill time (SIGKILL)
//      └──── the Pod's deletionTimestamp, else the grace period ────▶ the kubelet's SIGKILL
//                                     release deadline ◀─ margin ─┘

import type { Clock } from '../clock.ts';
import { GRACE_MARGIN_MS, defaultDrainTimeout } from '../config/grace-rule.ts';
import type { PodDeletion } from '../kube/pod.ts';
import type { Logger } from '../log/logger.ts';
import { type StopCause, type StopCauseKind, stopCauseOf } from './stop-cause.ts';

/**
 * Kept between the end of the release and the kubelet's SIGKILL: enough to exit. The kubelet
 * counts the grace period from when it saw the deletion, at or after the Pod's
 * deletionTimestamp minus the grace period, so both moments below are early, not late.
 */
const RELEASE_MARGIN_MS = 500;
/**
 * The kubelet never SIGKILLs a container sooner than this after its stop signal
 * (minimumGracePeriodInSeconds, pkg/kubelet/kuberuntime): the floor under a
 * deletionTimestamp that whole seconds and a grace period of 1 s put at or
 * before drainguard's own SIGTERM.
 */
export const KUBELET_MIN_GRACE_MS = 2000;
/** After a force delete the kubelet kills the containers this long after it starts the stop (its grace period floor). */
export const FORCE_DELETE_KILL_MS = 1000;
/** Kept for the release itself out of the sidecar's wait for the operator. */
const RELEASE_BUDGET_MS = 2000;
/** How long Events still on their way may hold up the exit. */
const EVENT_FLUSH_MS = 1000;
/** What the drain keeps of its time after the step before it (a namespace being deleted): its last 2 s, half when less is left. */
const DRAIN_KEPT_MS = 2000;
/** How long the termination waits for the Pod's deletion to be read (two tries); then it goes by what it knows. */
export const DELETION_READ_MS = 1000;
/** How often the Pod's deletion is read again while the drain runs (a second, shorter delete). */
export const DELETION_POLL_MS = 2000;

export type TerminationStep = 'drain' | 'cut-short' | 'ignored';

/** The termination signals seen so far, and what each one means. */
export class Termination {
  #count = 0;
  #onRequested = (_at: number): void => {};
  #onCutShort = (): void => {};
  /** Resolves at the first termination signal, with its moment (epoch ms): the kubelet's grace period runs from about then. */
  readonly requested = new Promise<number>((r) => (this.#onRequested = r));
  /** Resolves at the second. */
  readonly cutShort = new Promise<void>((r) => (this.#onCutShort = r));

  get count(): number {
    return this.#count;
  }

  /** Counts a termination signal that came at `at` (epoch ms); says what it means. */
  signal(at: number): TerminationStep {
    this.#count++;
    if (this.#count === 1) {
      this.#onRequested(at);
      return 'drain';
    }
    if (this.#count === 2) {
      this.#onCutShort();
      return 'cut-short';
    }
    // The stop signal goes out once: operators such as controller-runtime exit hard on a second one.
    return 'ignored';
  }
}

export interface DeadlineSettings {
  readonly gracePeriodMs: number;
  /** Where the grace period came from: the flag or variable, or 'default'. */
  readonly gracePeriodSource: string;
  readonly drainTimeoutMs: number;
  /** False when the drain timeout is derived from the grace period in force (the Pod's, once read). */
  readonly drainTimeoutExplicit: boolean;
  readonly stopTimeoutMs: number;
  /** DRAINGUARD_NODE_SHUTDOWN_GRACE: what the kubelet gives the pod in a graceful node shutdown; unset, the grace period. */
  readonly nodeShutdownGraceMs?: number;
  /** DRAINGUARD_NODE_PRESSURE_GRACE: what the kubelet gives the pod in a soft node-pressure eviction (evictionMaxPodGracePeriod). */
  readonly nodePressureGraceMs?: number;
}

/** What a read of the Pod's deletion gave: the Pod's answer, or none in time. */
export type DeletionReading = PodDeletion | { readonly state: 'unknown'; readonly error?: unknown };

export interface GracePeriod {
  readonly ms: number;
  /** 'pod', or the flag or variable it was configured with, or 'default'. */
  readonly from: string;
}

/**
 * The moments of a stop, from what is known when they are asked for: the
 * configured grace period, the Pod's (once read), and the Pod's deletion (read
 * at the termination). Every moment is counted back from the kubelet's SIGKILL:
 *
 *   start ──drain──▶ drain deadline ──stop timeout──▶ stop end ──reserve──▶ the kubelet's SIGKILL
 *                                                      release deadline ◀─ margin ─┘
 *
 * The SIGKILL is the deletion's (its deletionTimestamp) once known, else the
 * grace period in force after the start. When it leaves less than the drain,
 * the stop timeout and the reserve need, the drain is shortened first, then
 * the stop timeout; the reserve shrinks last, to half of what is left.
 */
export class Deadlines {
  readonly #settings: DeadlineSettings;
  readonly #log: Logger;
  readonly #clock: Pick<Clock, 'now'>;
  #grace: GracePeriod;
  /** The Pod's deletionTimestamp (epoch ms, whole seconds), once read: a later, earlier one is a second delete. */
  #deletionStamp?: number;
  /** The kubelet's SIGKILL by the Pod's deletion (epoch ms), once read. */
  #deletionAt?: number;
  #signalAt?: number;
  #requestAt?: number;
  /** Whether the line saying the deletion is not known was written (once is enough). */
  #toldUnknown = false;
  /** The Pod was read gone (force-deleted): the kubelet's kill is a second after the termination. */
  #forceDeleted = false;
  /** The stop's cause as last found, and whether it was taken for its Event. */
  #cause?: StopCause;
  #causeTaken?: StopCauseKind;

  constructor(settings: DeadlineSettings, logger: Logger, clock: Pick<Clock, 'now'>) {
    this.#settings = settings;
    this.#log = logger;
    this.#clock = clock;
    this.#grace = { ms: settings.gracePeriodMs, from: settings.gracePeriodSource };
  }

  get gracePeriod(): GracePeriod {
    return this.#grace;
  }

  /**
   * Takes the Pod's terminationGracePeriodSeconds. The kubelet kills at it
   * whatever drainguard was told, so it wins over the configured grace period,
   * except over an explicit one that is shorter (a budget the user chose).
   */
  adoptPodGracePeriod(podMs: number): void {
    const { gracePeriodMs, gracePeriodSource } = this.#settings;
    const explicit = gracePeriodSource !== 'default';
    if (explicit && podMs >= gracePeriodMs) {
      this.#log.info(`grace period read from the Pod; ${gracePeriodSource} is shorter and stays`, {
        gracePeriodMs,
        podGracePeriodMs: podMs,
      });
      return;
    }
    if (explicit) {
      this.#log.warn(
        `${gracePeriodSource} is longer than the Pod's terminationGracePeriodSeconds, and the kubelet kills at the Pod's: ` +
          "going by the Pod's",
        {
          gracePeriodMs: podMs,
          configuredMs: gracePeriodMs,
        },
      );
    }
    this.#grace = { ms: podMs, from: 'pod' };
    const { stopTimeoutMs } = this.#settings;
    this.#log.info('grace period read from the Pod', { gracePeriodMs: podMs, drainTimeoutMs: this.drainTimeoutMs() });
    if (this.#settings.drainTimeoutExplicit && this.#settings.drainTimeoutMs + stopTimeoutMs > podMs) {
      this.#log.warn(
        "the drain timeout plus the stop timeout exceed the Pod's grace period: " +
          'the drain is cut to fit, or the kubelet would kill the operator before it stopped',
        {
          gracePeriodMs: podMs,
          drainTimeoutMs: this.drainTimeoutMs(),
          configuredDrainTimeoutMs: this.#settings.drainTimeoutMs,
          stopTimeoutMs,
        },
      );
    }
  }

  /**
   * Takes what the Pod said of its deletion at the termination (or that it
   * could not be asked), and says so in one line. A deletion moves the
   * kubelet's SIGKILL to its deletionTimestamp; a later read only ever moves it
   * earlier (a second delete with a shorter grace period; a longer one changes
   * nothing). Returns whether the SIGKILL moved.
   */
  adoptDeletion(reading: DeletionReading): boolean {
    const known = this.#deletionAt;
    const cause = stopCauseOf(reading);
    if (reading.state === 'gone') return this.#adoptForceDeletion();
    if ((cause === 'node-shutdown' || cause === 'node-pressure') && reading.state !== 'unknown')
      return this.#adoptKubeletStop(cause, reading);
    // No deletion and nothing that says why (a liveness kill says nothing; the Node unreadable without `get nodes`;
    // the condition comes after the containers stopped): a node budget or a probe's grace is the bound to go by.
    if (
      cause === 'no-deletion' &&
      reading.state === 'not-deleting' &&
      (this.#settings.nodeShutdownGraceMs !== undefined ||
        this.#settings.nodePressureGraceMs !== undefined ||
        reading.probeGrace !== undefined)
    )
      return this.#adoptKubeletStop(cause, reading);
    if (reading.state !== 'deleting') {
      if (known || this.#toldUnknown) return false;
      this.#toldUnknown = true;
      const fields = { cause, gracePeriodMs: this.#grace.ms, gracePeriodFrom: this.#grace.from };
      this.#found(cause, reading, 'the grace period in force', true);
      if (reading.state === 'unknown')
        this.#log.warn("could not read the Pod's deletion in time: going by the grace period from the termination", {
          ...fields,
          error: reading.error,
        });
      else this.#log.info('the Pod is not being deleted: going by the grace period from the termination', fields);
      return false;
    }
    // The kubelet counts the deletion's grace period from when it acts on it, which is when it
    // starts the stop (the signal, the preStop hook): from the start, as drainguard counts. The
    // deletionTimestamp (the delete's time plus the grace, in whole seconds) is up to a second
    // and the kubelet's lag earlier, so it is the bound below; a later delete only moves it earlier.
    // A later read moves it only when its timestamp is earlier than the first's (a second delete).
    if (this.#deletionStamp !== undefined && this.#deletionStamp <= reading.at) return false;
    const kill =
      known === undefined && reading.graceMs !== undefined
        ? Math.max(reading.at, this.terminatedAt() + reading.graceMs)
        : Math.min(known ?? reading.at, reading.at);
    this.#deletionStamp = reading.at;
    this.#deletionAt = kill;
    this.#found(cause, reading, "the Pod's deletionTimestamp", true);
    this.#log[known === undefined ? 'info' : 'warn'](
      known === undefined ? 'deletion read from the Pod' : "the Pod's deletion moved earlier: the stop is fitted to it",
      {
        cause,
        ...(reading.disruption && { disruption: reading.disruption.reason }),
        deletionTimestamp: new Date(reading.at).toISOString(),
        deletionGracePeriodMs: reading.graceMs,
        leftMs: kill - this.#clock.now(),
        drainDeadline: new Date(this.drainDeadline()).toISOString(),
        stopTimeoutMs: this.stopTimeoutMs(),
        releaseDeadline: new Date(this.releaseDeadline()).toISOString(),
        ...(known !== undefined && { previousDeletionTimestamp: new Date(known).toISOString() }),
      },
    );
    return true;
  }

  /**
   * The kubelet stops the pod itself, with no deletion: a graceful node shutdown (with the
   * grace its shutdownGracePeriod leaves, capped by the spec's; published nowhere, so
   * DRAINGUARD_NODE_SHUTDOWN_GRACE says it) or a node-pressure eviction (soft: its
   * evictionMaxPodGracePeriod, capped likewise, published nowhere either: DRAINGUARD_NODE_PRESSURE_GRACE). The kubelet
   * counts it from when it starts the stop, as drainguard counts from its signal. A stop
   * that says nothing (`no-deletion`) goes by the shortest grace any stop without a deletion
   * can have: the node-shutdown and node-pressure budgets, a probe's own
   * terminationGracePeriodSeconds (a liveness kill), the Pod's.
   */
  #adoptKubeletStop(
    cause: 'node-shutdown' | 'node-pressure' | 'no-deletion',
    reading: PodDeletion & { state: 'deleting' | 'not-deleting' },
  ): boolean {
    if (this.#cause?.cause === cause) return false;
    const bounds: { ms: number; from: string }[] = [];
    const { nodeShutdownGraceMs: shutdownMs, nodePressureGraceMs: pressureMs } = this.#settings;
    if (cause !== 'node-pressure' && shutdownMs !== undefined) bounds.push({ ms: shutdownMs, from: 'DRAINGUARD_NODE_SHUTDOWN_GRACE' });
    if (cause !== 'node-shutdown' && pressureMs !== undefined) bounds.push({ ms: pressureMs, from: 'DRAINGUARD_NODE_PRESSURE_GRACE' });
    const budget = cause === 'node-shutdown' ? shutdownMs : cause === 'node-pressure' ? pressureMs : undefined;
    const probe = cause === 'no-deletion' && reading.state === 'not-deleting' ? reading.probeGrace : undefined;
    if (probe) bounds.push({ ms: probe.ms, from: `the ${probe.probe}'s terminationGracePeriodSeconds (container ${probe.container})` });
    const shortest = bounds.reduce<{ ms: number; from: string } | undefined>((a, b) => (a && a.ms <= b.ms ? a : b), undefined);
    const graceMs = shortest === undefined ? this.#grace.ms : Math.min(shortest.ms, this.#grace.ms);
    const kill = this.terminatedAt() + graceMs;
    const moved = this.#deletionAt === undefined || kill < this.#deletionAt;
    if (moved) {
      this.#deletionAt = kill;
      this.#deletionStamp = kill;
    }
    const from =
      shortest === undefined
        ? `the grace period in force (${this.#grace.from})`
        : shortest.ms <= this.#grace.ms
          ? shortest.from
          : `the Pod's grace period (${bounds.map((b) => b.from).join(', ')} ${bounds.length > 1 ? 'are' : 'is'} longer)`;
    // A node shutdown or a pressure eviction by its budget is what the kubelet does; without it a bound: the kubelet's own
    // budget may be shorter than the spec's, and a stop that says nothing may be any of them.
    const proven = cause !== 'no-deletion' && budget !== undefined;
    this.#found(cause, reading, from, proven);
    const what =
      cause === 'no-deletion'
        ? `the Pod is not being deleted and nothing says why (a liveness probe's kill, a node shutdown or pressure): going by ${from}, ` +
          'the shortest grace a stop without a deletion can have'
        : cause === 'node-shutdown'
          ? proven
            ? `the node is shutting down: going by ${from}`
            : "the node is shutting down: going by the Pod's grace period, which the kubelet's shutdownGracePeriod may cut; " +
              'set DRAINGUARD_NODE_SHUTDOWN_GRACE to what it leaves'
          : proven
            ? `the kubelet evicts the pod for node pressure: going by ${from}`
            : "the kubelet evicts the pod for node pressure: going by the Pod's grace period, which evictionMaxPodGracePeriod may cut; " +
              'set DRAINGUARD_NODE_PRESSURE_GRACE to it';
    this.#log[proven || cause === 'no-deletion' ? 'info' : 'warn'](what, {
      cause,
      disruption: reading.disruption?.reason,
      disruptionMessage: reading.disruption?.message,
      graceMs,
      ...(probe && { probe: probe.probe, probeGraceMs: probe.ms }),
      leftMs: this.#deletionAt! - this.#clock.now(),
      drainDeadline: new Date(this.drainDeadline()).toISOString(),
      stopTimeoutMs: this.stopTimeoutMs(),
      releaseDeadline: new Date(this.releaseDeadline()).toISOString(),
    });
    return moved;
  }

  /** Notes the cause found and the SIGKILL it gives (the kill as planned now). */
  #found(cause: StopCauseKind, reading: DeletionReading, from: string, proven: boolean): void {
    const { start, kill } = this.#plan();
    this.#cause = {
      cause,
      ...(reading.state !== 'gone' && reading.state !== 'unknown' && reading.disruption && { disruption: reading.disruption }),
      killAt: kill,
      graceMs: kill - start,
      from,
      proven,
    };
  }

  /** The stop's cause, once for each cause found (the StopCause Event); undefined when nothing new was found. */
  takeStopCause(): StopCause | undefined {
    if (!this.#cause || this.#cause.cause === this.#causeTaken) return undefined;
    this.#causeTaken = this.#cause.cause;
    return this.#cause;
  }

  /**
   * The Pod is gone from the API: force-deleted (grace period 0). The kubelet then kills its
   * containers FORCE_DELETE_KILL_MS after it starts the stop, whatever the spec's grace period
   * (calculateEffectiveGracePeriod: the deletion's 0 wins, raised to its floor; measured on
   * 1.37, docs/kubernetes.md): no drain fits, the stop is fitted to what is left.
   */
  #adoptForceDeletion(): boolean {
    if (this.#forceDeleted) return false;
    this.#forceDeleted = true;
    const kill = this.terminatedAt() + FORCE_DELETE_KILL_MS;
    const moved = this.#deletionAt === undefined || kill < this.#deletionAt;
    if (moved) {
      this.#deletionAt = kill;
      this.#deletionStamp = kill;
    }
    this.#found('force-deletion', { state: 'gone' }, 'a force deletion (the kubelet kills a second after the termination)', true);
    this.#log.warn(
      'the Pod is gone (force-deleted): the kubelet kills its containers a second after the termination: ' +
        'no drain, the stop is fitted to it',
      {
        leftMs: this.#deletionAt! - this.#clock.now(),
        stopTimeoutMs: this.stopTimeoutMs(),
      },
    );
    return moved;
  }

  /** The first termination signal came at `at`. */
  signalled(at: number): void {
    this.#signalAt ??= at;
  }

  /** The first drain request (preStop, or the signal's own) came at `at`. */
  drainRequested(at: number): void {
    this.#requestAt ??= at;
  }

  /**
   * When the pod's termination began, as the kubelet counts it: a sidecar's
   * preStop drain request when one came shortly before its signal (a native
   * sidecar gets SIGTERM only after the operator has stopped), else the signal;
   * now, when neither came (an operator that exited by itself).
   */
  terminatedAt(): number {
    const [s, d] = [this.#signalAt, this.#requestAt];
    if (s === undefined) return d ?? this.#clock.now();
    return d !== undefined && d <= s && s - d < this.#grace.ms ? d : s;
  }

  /** The drain timeout the settings give: the configured one, cut to fit the grace period, or derived from it. */
  drainTimeoutMs(): number {
    const fit = defaultDrainTimeout(this.#grace.ms, this.#settings.stopTimeoutMs);
    const { drainTimeoutMs: given, drainTimeoutExplicit } = this.#settings;
    // A given one was checked against the configured grace period; the Pod's may be shorter.
    return drainTimeoutExplicit ? Math.min(given, Math.max(0, this.#grace.ms - this.#settings.stopTimeoutMs)) : fit;
  }

  /** The moment the drain ends whatever the clients do. */
  drainDeadline(): number {
    const { start, kill, reserveMs, stopMs } = this.#plan();
    if (this.#deletionAt === undefined) return start + this.drainTimeoutMs();
    // By the deletion: a derived drain takes all it leaves (more, under a longer grace), a given one at most its own.
    const latest = kill - reserveMs - stopMs;
    return Math.max(start, this.#settings.drainTimeoutExplicit ? Math.min(start + this.#settings.drainTimeoutMs, latest) : latest);
  }

  /**
   * By when the step before the drain (a namespace being deleted) is over: the drain keeps its last
   * DRAIN_KEPT_MS, half when less is left.
   */
  beforeDrainDeadline(): number {
    const end = this.drainDeadline();
    const left = Math.max(0, end - this.#clock.now());
    return end - Math.min(DRAIN_KEPT_MS, left / 2);
  }

  /** The stop timeout in force: the configured one, cut when the kubelet's SIGKILL leaves less. */
  stopTimeoutMs(): number {
    return this.#plan().stopMs;
  }

  /** drainguard's SIGKILL of its operator, once the stop signal went out at `stopAt`. */
  killTime(stopAt: number): number {
    // Fitted to what is left at the stop signal: a deletion read late (a second delete) leaves less than the start did.
    const { kill, reserveMs, stopMs } = this.#plan(stopAt);
    return Math.min(stopAt + stopMs, Math.max(stopAt, kill - reserveMs));
  }

  /** By when the release must be over: the margin before the kubelet's SIGKILL. */
  releaseDeadline(): number {
    const { kill, reserveMs } = this.#plan();
    return kill - Math.min(RELEASE_MARGIN_MS, reserveMs / 2);
  }

  /** How long Events may still be waited for now, never past the release deadline. */
  eventFlushDeadline(): number {
    return Math.min(this.#clock.now() + EVENT_FLUSH_MS, this.releaseDeadline());
  }

  /** How long a sidecar may wait for the operator to stop, leaving time for the release. */
  operatorWaitDeadline(): number {
    const { start, kill } = this.#plan();
    return Math.max(this.#clock.now(), this.releaseDeadline() - Math.min(RELEASE_BUDGET_MS, Math.max(0, kill - start) / 4));
  }

  /**
   * The kubelet's SIGKILL and what is kept before it, as seen from the start
   * (or from `from`, a later moment that plans the rest). The deletion's moment
   * (never sooner than the kubelet's minimum after drainguard's own signal)
   * wins over the grace period, except an explicit configured one that ends
   * sooner (a budget the user chose).
   */
  #plan(from?: number): { start: number; kill: number; reserveMs: number; stopMs: number } {
    const start = this.terminatedAt();
    const byGrace = start + this.#grace.ms;
    const explicit = this.#grace.from !== 'pod' && this.#grace.from !== 'default';
    // A force delete's kill comes sooner than the floor (measured: a second after the stop signal).
    const floor = this.#forceDeleted ? 0 : KUBELET_MIN_GRACE_MS;
    const byDeletion = this.#deletionAt === undefined ? undefined : Math.max(this.#deletionAt, (this.#signalAt ?? -Infinity) + floor);
    const kill = byDeletion === undefined ? byGrace : explicit ? Math.min(byDeletion, byGrace) : byDeletion;
    const left = Math.max(0, kill - Math.max(start, from ?? start));
    const reserveMs = Math.min(GRACE_MARGIN_MS, left / 2);
    const stopMs = Math.max(0, Math.min(this.#settings.stopTimeoutMs, left - reserveMs));
    return { start, kill, reserveMs, stopMs };
  }
}
