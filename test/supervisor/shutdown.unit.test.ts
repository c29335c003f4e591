// Deadlines and Termination: every moment of a stop, from the settings and the
// Pod's grace period, with no clock at all (they take the moments as numbers).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { defaultDrainTimeout } from '../../src/config/grace-rule.ts';
import { Deadlines, type DeadlineSettings, Termination } from '../../src/supervisor/shutdown.ts';
import { stopCauseMessage } from '../../src/supervisor/stop-cause.ts';
import { recorder } from '../support/log-recorder.ts';

/** For the rules that read no moment: a clock that never moves. */
const stillClock = { now: () => 1_000_000 };

/** Kubebuilder's scaffold: terminationGracePeriodSeconds 10, drainguard's stop timeout 5s. */
const scaffold: DeadlineSettings = {
  gracePeriodMs: 10_000,
  gracePeriodSource: 'default',
  drainTimeoutMs: defaultDrainTimeout(10_000, 5000),
  drainTimeoutExplicit: false,
  stopTimeoutMs: 5000,
};

test("the Pod's grace period replaces the default one, and the derived drain timeout follows it", () => {
  const log = recorder();
  const d = new Deadlines({ ...scaffold, gracePeriodMs: 30_000, drainTimeoutMs: 23_000 }, log, stillClock);
  assert.is(d.drainTimeoutMs(), 23_000);
  d.adoptPodGracePeriod(10_000);
  assert.equal(d.gracePeriod, { ms: 10_000, from: 'pod' });
  assert.is(d.drainTimeoutMs(), 3000);
  assert.equal(
    log.lines.map((l) => l.msg),
    ['grace period read from the Pod'],
  );
});

test("an explicit grace period shorter than the Pod's stays; a longer one gives way, with a warning", () => {
  const shorter = recorder();
  const kept = new Deadlines(
    { ...scaffold, gracePeriodMs: 8000, gracePeriodSource: '--grace-period', drainTimeoutMs: 1000 },
    shorter,
    stillClock,
  );
  kept.adoptPodGracePeriod(12_000);
  assert.equal(kept.gracePeriod, { ms: 8000, from: '--grace-period' });
  assert.equal(
    shorter.lines.map((l) => l.msg),
    ['grace period read from the Pod; --grace-period is shorter and stays'],
  );
  const longer = recorder();
  const replaced = new Deadlines(
    { ...scaffold, gracePeriodMs: 60_000, gracePeriodSource: 'DRAINGUARD_GRACE_PERIOD', drainTimeoutMs: 53_000 },
    longer,
    stillClock,
  );
  replaced.adoptPodGracePeriod(10_000);
  assert.equal(replaced.gracePeriod, { ms: 10_000, from: 'pod' });
  assert.equal(
    longer.lines.map((l) => l.level),
    ['warn', 'info'],
  );
});

test("an explicit drain timeout that no longer fits the Pod's grace period is cut to fit, with a warning", () => {
  const log = recorder();
  const d = new Deadlines({ ...scaffold, gracePeriodMs: 30_000, drainTimeoutMs: 20_000, drainTimeoutExplicit: true }, log, stillClock);
  assert.is(d.drainTimeoutMs(), 20_000);
  d.adoptPodGracePeriod(10_000);
  assert.is(d.drainTimeoutMs(), 5000, 'grace - stop timeout: the most that still lets the stop timeout run');
  assert.ok(log.lines.some((l) => l.level === 'warn' && l.msg.startsWith('the drain timeout plus the stop timeout exceed')));
});

/** Deadlines on a clock the test sets: the moments are numbers, nothing waits. */
function at(settings: DeadlineSettings, log = recorder()) {
  const clock = { now: 1_000_000 };
  return { clock, log, d: new Deadlines(settings, log, { now: () => clock.now }) };
}

test('the moments of a stop in the scaffold: drain deadline, kill time, release deadline, Events', () => {
  const { d, clock } = at(scaffold);
  const t = clock.now;
  d.signalled(t);
  assert.is(d.drainDeadline(), t + 3000);
  assert.is(d.killTime(t + 3000), t + 8000);
  assert.is(d.releaseDeadline(), t + 9500, "half a second before the kubelet's SIGKILL");
  clock.now = t + 100;
  assert.is(d.eventFlushDeadline(), t + 1100, 'a second for Events');
  clock.now = t + 9000;
  assert.is(d.eventFlushDeadline(), t + 9500, 'never past the release deadline');
  clock.now = t + 3000;
  assert.is(d.operatorWaitDeadline(), t + 7500, 'two seconds kept for the release');
  clock.now = t + 9000;
  assert.is(d.operatorWaitDeadline(), t + 9000, 'never before now');
});

test('an operator that exits by itself, no signal: a full grace period from now', () => {
  const { d, clock } = at(scaffold);
  assert.is(d.releaseDeadline(), clock.now + 9500);
  assert.is(d.eventFlushDeadline(), clock.now + 1000);
});

test("a sidecar's termination starts at a preStop drain shortly before its signal, else at the signal", () => {
  const cases: [number | undefined, number, number][] = [
    [2000, 5000, 2000],
    [undefined, 5000, 5000],
    [6000, 5000, 5000],
    [2000, 50_000, 50_000],
  ];
  for (const [request, signal, start] of cases) {
    const { d } = at(scaffold);
    if (request !== undefined && request < signal) d.drainRequested(request);
    d.signalled(signal);
    if (request !== undefined && request >= signal) d.drainRequested(request);
    assert.is(d.terminatedAt(), start, `drain request at ${request}, signal at ${signal}`);
  }
  const { d } = at(scaffold);
  d.drainRequested(7000);
  assert.is(d.terminatedAt(), 7000, 'a preStop request before any signal');
});

/** The spec's 30 s, defaults: drain 23 s, stop 5 s. */
const spec30: DeadlineSettings = {
  gracePeriodMs: 30_000,
  gracePeriodSource: 'default',
  drainTimeoutMs: 23_000,
  drainTimeoutExplicit: false,
  stopTimeoutMs: 5000,
};

test("kubectl delete --grace-period=4 on a 30 s Pod: the drain gives way first, then the stop timeout; the release stays before the kubelet's SIGKILL", () => {
  const { d, clock, log } = at(spec30);
  // The DELETE came 30 ms before the SIGTERM; its deletionTimestamp is whole seconds: up to a second early.
  const deletion = clock.now - 30 + 4000 - 970;
  d.adoptPodGracePeriod(30_000);
  d.signalled(clock.now);
  assert.is(d.drainDeadline(), clock.now + 23_000, 'before the deletion is known: the spec');
  assert.ok(d.adoptDeletion({ state: 'deleting', at: deletion, graceMs: 4000 }));
  // The kubelet counts the 4 s from when it acts, its SIGTERM: not from the truncated timestamp.
  const kill = clock.now + 4000;
  assert.is(d.drainDeadline(), clock.now, 'no time to drain');
  assert.is(d.stopTimeoutMs(), 2000, 'the stop gets half of what is left');
  assert.is(d.killTime(clock.now), clock.now + 2000);
  assert.is(d.releaseDeadline(), kill - 500);
  assert.equal(log.lines.at(-1)!.msg, 'deletion read from the Pod');
  assert.equal(log.lines.at(-1)!.fields!.leftMs, 4000);
  // Read again while draining, the same deletion (its same timestamp) moves nothing.
  assert.not.ok(d.adoptDeletion({ state: 'deleting', at: deletion, graceMs: 4000 }), 'the same deletion again');
  assert.is(d.releaseDeadline(), kill - 500);
});

test('the deletionTimestamp bounds it below: a start long before the delete counts from the delete', () => {
  const { d, clock } = at(spec30);
  // A drain request 10 s before a delete with a 4 s grace (not the kubelet's preStop): the kill is the delete's.
  d.drainRequested(clock.now);
  d.adoptDeletion({ state: 'deleting', at: clock.now + 14_000, graceMs: 4000 });
  assert.is(d.releaseDeadline(), clock.now + 14_000 - 500);
  // A later, shorter delete only ever moves it earlier, to its own timestamp.
  assert.ok(d.adoptDeletion({ state: 'deleting', at: clock.now + 12_000, graceMs: 1000 }));
  assert.is(d.releaseDeadline(), clock.now + 12_000 - 500);
  assert.not.ok(d.adoptDeletion({ state: 'deleting', at: clock.now + 13_000, graceMs: 3000 }), 'a longer one changes nothing');
});

test('a deletion that leaves room: the drain ends so that the stop timeout and 2 s fit before it; the stop timeout stays', () => {
  const { d, clock } = at(spec30);
  d.signalled(clock.now);
  d.adoptDeletion({ state: 'deleting', at: clock.now + 12_000, graceMs: 12_000 });
  assert.is(d.drainDeadline(), clock.now + 5000);
  assert.is(d.stopTimeoutMs(), 5000);
  assert.is(d.killTime(clock.now + 5000), clock.now + 10_000);
  assert.is(d.releaseDeadline(), clock.now + 11_500);
});

test("1 s, 0 s or less left by the deletionTimestamp (whole seconds): the kubelet's 2 s after drainguard's own SIGTERM", () => {
  for (const leftMs of [1000, 0, -2000]) {
    const { d, clock } = at(spec30);
    d.signalled(clock.now);
    d.adoptDeletion({ state: 'deleting', at: clock.now + leftMs, graceMs: 1000 });
    assert.equal(
      [d.drainDeadline(), d.stopTimeoutMs(), d.releaseDeadline()],
      [clock.now, 1000, clock.now + 1500],
      `${leftMs}: no drain, 1 s to stop, the release by 1.5 s`,
    );
  }
});

test('a preStop request before any signal, a 1 s grace whatever the timestamp says: everything shrinks to fit, nothing goes past the SIGKILL', () => {
  // The kubelet runs the preStop hook when it acts on the deletion and kills 1 s later, even when it acts after the deletionTimestamp.
  for (const leftMs of [1000, 0, -2000]) {
    const { d, clock } = at(spec30);
    d.drainRequested(clock.now);
    d.adoptDeletion({ state: 'deleting', at: clock.now + leftMs, graceMs: 1000 });
    const kill = clock.now + 1000;
    assert.is(d.drainDeadline(), clock.now, `${leftMs}: no drain`);
    assert.ok(d.killTime(clock.now) <= kill, `${leftMs}: the operator's SIGKILL by the kubelet's`);
    assert.ok(d.releaseDeadline() <= kill, `${leftMs}: the release before the kubelet's SIGKILL`);
    assert.equal(
      [d.stopTimeoutMs(), d.releaseDeadline() - clock.now],
      [500, 750],
      `${leftMs}: a second: half to stop, a quarter to release`,
    );
  }
});

test("a deletion with a longer grace period than the spec's: a derived drain takes it; a given one keeps its own; an explicit shorter grace period stays", () => {
  const derived = at(spec30);
  derived.d.signalled(derived.clock.now);
  derived.d.adoptDeletion({ state: 'deleting', at: derived.clock.now + 60_000, graceMs: 60_000 });
  assert.is(derived.d.drainDeadline(), derived.clock.now + 53_000);
  const given = at({ ...spec30, drainTimeoutMs: 10_000, drainTimeoutExplicit: true });
  given.d.signalled(given.clock.now);
  given.d.adoptDeletion({ state: 'deleting', at: given.clock.now + 60_000, graceMs: 60_000 });
  assert.is(given.d.drainDeadline(), given.clock.now + 10_000);
  const shorter = at({ ...spec30, gracePeriodMs: 20_000, gracePeriodSource: 'DRAINGUARD_GRACE_PERIOD' });
  shorter.d.signalled(shorter.clock.now);
  shorter.d.adoptDeletion({ state: 'deleting', at: shorter.clock.now + 30_000, graceMs: 30_000 });
  assert.is(shorter.d.releaseDeadline(), shorter.clock.now + 19_500);
});

test('a second, shorter delete moves everything earlier; a longer one changes nothing', () => {
  const { d, clock, log } = at(spec30);
  d.signalled(clock.now);
  assert.ok(d.adoptDeletion({ state: 'deleting', at: clock.now + 30_000, graceMs: 30_000 }));
  assert.is(d.drainDeadline(), clock.now + 23_000);
  assert.not.ok(d.adoptDeletion({ state: 'deleting', at: clock.now + 40_000, graceMs: 10_000 }), 'later: nothing moves');
  assert.ok(d.adoptDeletion({ state: 'deleting', at: clock.now + 10_000, graceMs: 2000 }));
  assert.is(d.drainDeadline(), clock.now + 3000);
  assert.is(d.releaseDeadline(), clock.now + 9500);
  assert.equal(log.lines.at(-1)!.msg, "the Pod's deletion moved earlier: the stop is fitted to it");
  assert.not.ok(d.adoptDeletion({ state: 'unknown' }), 'a later failure to read forgets nothing');
  assert.is(d.releaseDeadline(), clock.now + 9500);
});

test("a second delete read late, at the stop: the operator's stop timeout is fitted to what is left then, not killed at once", () => {
  const { d, clock } = at(spec30);
  const t = clock.now;
  d.signalled(t);
  d.adoptDeletion({ state: 'deleting', at: t + 30_000, graceMs: 30_000 });
  d.adoptDeletion({ state: 'deleting', at: t + 4000, graceMs: 4000 });
  assert.is(d.drainDeadline(), t, 'the drain gives way at once');
  assert.is(d.killTime(t + 2200), t + 3100, 'of the 1.8 s left: half to stop, half kept');
  assert.is(d.releaseDeadline(), t + 3500);
});

test('a force delete (the Pod read gone): the kubelet kills a second after the termination; no drain, the stop fitted, said once', () => {
  const { d, clock, log } = at(spec30);
  d.signalled(clock.now);
  const t = clock.now;
  assert.ok(d.adoptDeletion({ state: 'gone' }), 'the kill moved');
  assert.not.ok(d.adoptDeletion({ state: 'gone' }));
  assert.equal(
    log.lines.map((l) => l.msg),
    [
      'the Pod is gone (force-deleted): the kubelet kills its containers a second after the termination: no drain, the stop is fitted to it',
    ],
  );
  assert.is(d.drainDeadline(), t, 'no drain');
  assert.is(d.stopTimeoutMs(), 500, 'of the second: half to stop, half kept');
  assert.is(d.releaseDeadline(), t + 750);
});

test('no deletion to read (a liveness kill, no answer): the grace period from the signal, said once', () => {
  for (const [reading, line] of [
    [{ state: 'not-deleting' }, 'the Pod is not being deleted: going by the grace period from the termination'],
    [{ state: 'unknown', error: 'timeout' }, "could not read the Pod's deletion in time: going by the grace period from the termination"],
  ] as const) {
    const { d, clock, log } = at(spec30);
    d.signalled(clock.now);
    assert.not.ok(d.adoptDeletion(reading));
    assert.not.ok(d.adoptDeletion(reading));
    assert.equal(
      log.lines.map((l) => l.msg),
      [line],
    );
    assert.is(log.lines[0]!.level, reading.state === 'unknown' ? 'warn' : 'info');
    assert.equal([d.drainDeadline(), d.releaseDeadline()], [clock.now + 23_000, clock.now + 29_500]);
  }
});

test('the step before the drain ends 2 s before the drain deadline, or halfway when less is left', () => {
  const { d, clock } = at(scaffold);
  d.signalled(clock.now);
  const end = clock.now + 3000;
  assert.is(d.drainDeadline(), end, 'the scaffold: a 3 s drain');
  assert.is(d.beforeDrainDeadline(), end - 1500, 'half of the 3 s left');
  const long = at({ ...scaffold, gracePeriodMs: 30_000, drainTimeoutMs: 23_000 });
  long.d.signalled(long.clock.now);
  assert.is(long.d.beforeDrainDeadline(), long.clock.now + 21_000, 'the drain keeps its last 2 s');
  long.clock.now += 22_000;
  assert.is(long.d.beforeDrainDeadline(), long.clock.now + 500, '1 s left: half of it');
});

test('Termination: the first signal drains, the second cuts short, later ones are ignored', async () => {
  const t = new Termination();
  assert.is(t.signal(42), 'drain');
  assert.is(t.signal(50), 'cut-short');
  assert.is(t.signal(60), 'ignored');
  assert.is(t.count, 3);
  assert.is(await t.requested, 42, "the first signal's moment");
  await t.cutShort;
});

const NODE_SHUTDOWN = {
  reason: 'TerminationByKubelet',
  message: 'Pod was terminated in response to imminent node shutdown.',
} as const;

test("a graceful node shutdown (no deletion, DisruptionTarget TerminationByKubelet): DRAINGUARD_NODE_SHUTDOWN_GRACE, capped by the Pod's", () => {
  for (const [budget, grace, from] of [
    [8000, 8000, 'DRAINGUARD_NODE_SHUTDOWN_GRACE'],
    [45_000, 30_000, "the Pod's grace period (DRAINGUARD_NODE_SHUTDOWN_GRACE is longer)"],
  ] as const) {
    const { d, clock, log } = at({ ...spec30, nodeShutdownGraceMs: budget });
    d.adoptPodGracePeriod(30_000);
    d.signalled(clock.now);
    assert.ok(d.adoptDeletion({ state: 'not-deleting', disruption: NODE_SHUTDOWN }) || grace === 30_000);
    assert.is(d.releaseDeadline(), clock.now + grace - 500);
    assert.is(d.drainDeadline(), clock.now + grace - 5000 - 2000);
    const line = log.lines.at(-1)!;
    assert.equal(
      [line.level, line.msg, line.fields!.cause, line.fields!.graceMs],
      ['info', `the node is shutting down: going by ${from}`, 'node-shutdown', grace],
    );
    const cause = d.takeStopCause();
    assert.equal([cause?.cause, cause?.graceMs, cause?.from, cause?.proven], ['node-shutdown', grace, from, true]);
    assert.is(d.takeStopCause(), undefined, 'told once');
    // Read again while the drain runs: nothing moves, nothing more is said.
    assert.not.ok(d.adoptDeletion({ state: 'not-deleting', disruption: NODE_SHUTDOWN }));
    assert.is(d.takeStopCause(), undefined);
  }
});

test('a node shutdown without DRAINGUARD_NODE_SHUTDOWN_GRACE: the grace period, said as a bound (warn); pressure likewise', () => {
  for (const [disruption, cause] of [
    [NODE_SHUTDOWN, 'node-shutdown'],
    [{ reason: 'TerminationByKubelet', message: 'The node was low on resource: memory.' }, 'node-pressure'],
  ] as const) {
    const { d, clock, log } = at(spec30);
    d.adoptPodGracePeriod(30_000);
    d.signalled(clock.now);
    d.adoptDeletion({ state: 'not-deleting', disruption });
    assert.is(d.releaseDeadline(), clock.now + 29_500);
    assert.equal([log.lines.at(-1)!.level, log.lines.at(-1)!.fields!.cause], ['warn', cause]);
    assert.equal(d.takeStopCause()?.proven, false);
  }
});

test('the condition read late (the kubelet posts it after its signal): the next read moves the SIGKILL earlier and tells the new cause', () => {
  const { d, clock } = at(spec30);
  d.adoptPodGracePeriod(30_000);
  d.signalled(clock.now);
  assert.not.ok(d.adoptDeletion({ state: 'not-deleting' }));
  assert.is(d.takeStopCause()?.cause, 'no-deletion');
  assert.is(d.releaseDeadline(), clock.now + 29_500);
});

test('no deletion and nothing that says why, with a node-shutdown budget: the budget at once, the cause named when it comes', () => {
  const { d, clock, log } = at({ ...spec30, nodeShutdownGraceMs: 8000 });
  d.adoptPodGracePeriod(30_000);
  d.signalled(clock.now);
  assert.ok(d.adoptDeletion({ state: 'not-deleting' }), 'moved to the budget');
  assert.is(d.releaseDeadline(), clock.now + 7500);
  assert.match(
    log.lines.at(-1)!.msg,
    /nothing says why \(a liveness probe's kill, a node shutdown or pressure\): going by DRAINGUARD_NODE_SHUTDOWN_GRACE/,
  );
  assert.equal([d.takeStopCause()?.cause, d.takeStopCause()], ['no-deletion', undefined]);
  clock.now += 2000;
  assert.not.ok(d.adoptDeletion({ state: 'not-deleting', disruption: NODE_SHUTDOWN }), 'the same SIGKILL');
  assert.is(d.releaseDeadline(), clock.now - 2000 + 7500, 'counted from the signal, not from the read');
  assert.is(d.takeStopCause()?.cause, 'node-shutdown');
  // Without the budget, the grace period in force.
  const other = at(spec30);
  other.d.adoptPodGracePeriod(30_000);
  other.d.signalled(other.clock.now);
  assert.not.ok(other.d.adoptDeletion({ state: 'not-deleting' }));
  assert.is(other.d.releaseDeadline(), other.clock.now + 29_500);
});

test("no deletion, a liveness probe with its own terminationGracePeriodSeconds: the shortest of it, the budget and the Pod's, said as a bound", () => {
  const liveness = (ms: number) => ({ probe: 'livenessProbe', container: 'manager', ms }) as const;
  for (const [budget, probeMs, grace, from] of [
    [undefined, 10_000, 10_000, "the livenessProbe's terminationGracePeriodSeconds (container manager)"],
    [8000, 10_000, 8000, 'DRAINGUARD_NODE_SHUTDOWN_GRACE'],
    [12_000, 6000, 6000, "the livenessProbe's terminationGracePeriodSeconds (container manager)"],
    [undefined, 45_000, 30_000, "the Pod's grace period (the livenessProbe's terminationGracePeriodSeconds (container manager) is longer)"],
  ] as const) {
    const { d, clock, log } = at({ ...spec30, ...(budget !== undefined && { nodeShutdownGraceMs: budget }) });
    d.adoptPodGracePeriod(30_000);
    d.signalled(clock.now);
    assert.ok(d.adoptDeletion({ state: 'not-deleting', probeGrace: liveness(probeMs) }), 'the SIGKILL set by the bound');
    assert.is(d.releaseDeadline(), clock.now + grace - 500);
    assert.is(d.drainDeadline(), Math.max(clock.now, clock.now + grace - 5000 - 2000), 'the drain gives way first');
    const line = log.lines.at(-1)!;
    assert.equal(
      [line.level, line.fields!.cause, line.fields!.graceMs, line.fields!.probeGraceMs],
      ['info', 'no-deletion', grace, probeMs],
    );
    assert.match(line.msg, `going by ${from}, the shortest grace a stop without a deletion can have`);
    const cause = d.takeStopCause();
    assert.equal([cause?.cause, cause?.graceMs, cause?.from, cause?.proven], ['no-deletion', grace, from, false]);
    assert.match(stopCauseMessage(cause!), /\(the best bound drainguard can prove\)$/);
  }
  // A node shutdown found later goes by its own budget, not the probe's.
  const { d, clock } = at({ ...spec30, nodeShutdownGraceMs: 8000 });
  d.adoptPodGracePeriod(30_000);
  d.signalled(clock.now);
  d.adoptDeletion({ state: 'not-deleting', probeGrace: liveness(6000) });
  assert.is(d.releaseDeadline(), clock.now + 5500);
  assert.not.ok(d.adoptDeletion({ state: 'not-deleting', disruption: NODE_SHUTDOWN }), 'a later read never moves it later');
});

test("a soft pressure eviction: DRAINGUARD_NODE_PRESSURE_GRACE, capped by the Pod's; the bound for a stop that says nothing", () => {
  const PRESSURE = { reason: 'TerminationByKubelet', message: 'The node was low on resource: memory.' } as const;
  const { d, clock, log } = at({ ...spec30, nodePressureGraceMs: 8000, nodeShutdownGraceMs: 12_000 });
  d.adoptPodGracePeriod(30_000);
  d.signalled(clock.now);
  // At the signal the kubelet has said nothing yet: the shortest budget, as a bound.
  assert.ok(d.adoptDeletion({ state: 'not-deleting' }));
  assert.is(d.releaseDeadline(), clock.now + 7500);
  assert.match(log.lines.at(-1)!.msg, 'going by DRAINGUARD_NODE_PRESSURE_GRACE, the shortest grace');
  assert.equal([d.takeStopCause()?.proven], [false]);
  // Said later: the pressure's own budget, proven.
  assert.not.ok(d.adoptDeletion({ state: 'not-deleting', disruption: PRESSURE }));
  const line = log.lines.at(-1)!;
  assert.equal([line.level, line.msg], ['info', 'the kubelet evicts the pod for node pressure: going by DRAINGUARD_NODE_PRESSURE_GRACE']);
  assert.equal([d.takeStopCause()?.cause, d.releaseDeadline()], ['node-pressure', clock.now + 7500]);
  // A node shutdown does not go by the pressure budget, nor a pressure eviction by the shutdown's.
  const other = at({ ...spec30, nodePressureGraceMs: 8000 });
  other.d.adoptPodGracePeriod(30_000);
  other.d.signalled(other.clock.now);
  other.d.adoptDeletion({ state: 'not-deleting', disruption: NODE_SHUTDOWN });
  assert.is(other.d.releaseDeadline(), other.clock.now + 29_500);
});

test('an eviction, a preemption, a taint: the deletionTimestamp, and the cause named', () => {
  for (const [reason, cause] of [
    ['EvictionByEvictionAPI', 'eviction-api'],
    ['PreemptionByScheduler', 'preemption'],
    ['DeletionByTaintManager', 'taint-eviction'],
  ] as const) {
    const { d, clock, log } = at(spec30);
    d.adoptPodGracePeriod(30_000);
    d.signalled(clock.now);
    d.adoptDeletion({ state: 'deleting', at: clock.now + 12_000, graceMs: 12_000, disruption: { reason, message: '' } });
    assert.is(d.releaseDeadline(), clock.now + 11_500);
    assert.equal([log.lines.at(-1)!.msg, log.lines.at(-1)!.fields!.cause], ['deletion read from the Pod', cause]);
    assert.equal([d.takeStopCause()?.cause, d.takeStopCause()], [cause, undefined]);
  }
});

test.run();
