// Deadlines and Termination: every moment of a stop, from the settings and the
// Pod's grace period, with no clock at all (they take the moments as numbers).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { LogFields, Logger } from '../../../src/log/logger.ts';
import { Deadlines, type DeadlineSettings, Termination, checkFit, defaultDrainTimeout } from '../../../src/supervisor/shutdown.ts';

function recorder(): Logger & { lines: { level: string; msg: string; fields?: LogFields }[] } {
  const lines: { level: string; msg: string; fields?: LogFields }[] = [];
  const at = (level: string) => (msg: string, fields?: LogFields) => void lines.push({ level, msg, fields });
  const logger: Logger & { lines: typeof lines } = { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error'), with: () => logger };
  return logger;
}

/** Kubebuilder's scaffold: terminationGracePeriodSeconds 10, drainguard's stop timeout 5s. */
const scaffold: DeadlineSettings = { gracePeriodMs: 10_000, gracePeriodSource: 'default', drainTimeoutMs: defaultDrainTimeout(10_000, 5000), drainTimeoutExplicit: false, stopTimeoutMs: 5000 };

test('the drain timeout a grace period leaves: grace - stop timeout - 2s, never below 0', () => {
  assert.is(defaultDrainTimeout(10_000, 5000), 3000);
  assert.is(defaultDrainTimeout(30_000, 5000), 23_000);
  assert.is(defaultDrainTimeout(6000, 5000), 0);
});

test('checkFit: the stop timeout inside the grace period, drain + stop within it', () => {
  const sources = { stop: 'DRAINGUARD_STOP_TIMEOUT', drain: 'DRAINGUARD_DRAIN_TIMEOUT' };
  assert.is(checkFit({ gracePeriodMs: 10_000, stopTimeoutMs: 5000, drainTimeoutMs: 5000 }, sources), undefined);
  assert.match(checkFit({ gracePeriodMs: 10_000, stopTimeoutMs: 10_000 }, sources)!, /^DRAINGUARD_STOP_TIMEOUT: the stop timeout \(10s\) must be shorter than the grace period \(10s\)/);
  assert.match(checkFit({ gracePeriodMs: 10_000, stopTimeoutMs: 5000, drainTimeoutMs: 6000 }, sources)!, /^DRAINGUARD_DRAIN_TIMEOUT: .* lower it to at most 5s$/);
});

test("the Pod's grace period replaces the default one, and the derived drain timeout follows it", () => {
  const log = recorder();
  const d = new Deadlines({ ...scaffold, gracePeriodMs: 30_000, drainTimeoutMs: 23_000 }, log);
  assert.is(d.drainTimeoutMs(), 23_000);
  d.adoptPodGracePeriod(10_000);
  assert.equal(d.gracePeriod, { ms: 10_000, from: 'pod' });
  assert.is(d.drainTimeoutMs(), 3000);
  assert.equal(log.lines.map((l) => l.msg), ['grace period read from the Pod']);
});

test('an explicit grace period shorter than the Pod\'s stays; a longer one gives way, with a warning', () => {
  const shorter = recorder();
  const kept = new Deadlines({ ...scaffold, gracePeriodMs: 8000, gracePeriodSource: '--grace-period', drainTimeoutMs: 1000 }, shorter);
  kept.adoptPodGracePeriod(12_000);
  assert.equal(kept.gracePeriod, { ms: 8000, from: '--grace-period' });
  assert.equal(shorter.lines.map((l) => l.msg), ['grace period read from the Pod; --grace-period is shorter and stays']);
  const longer = recorder();
  const replaced = new Deadlines({ ...scaffold, gracePeriodMs: 60_000, gracePeriodSource: 'DRAINGUARD_GRACE_PERIOD', drainTimeoutMs: 53_000 }, longer);
  replaced.adoptPodGracePeriod(10_000);
  assert.equal(replaced.gracePeriod, { ms: 10_000, from: 'pod' });
  assert.equal(longer.lines.map((l) => l.level), ['warn', 'info']);
});

test("an explicit drain timeout that no longer fits the Pod's grace period is cut to fit, with a warning", () => {
  const log = recorder();
  const d = new Deadlines({ ...scaffold, gracePeriodMs: 30_000, drainTimeoutMs: 20_000, drainTimeoutExplicit: true }, log);
  assert.is(d.drainTimeoutMs(), 20_000);
  d.adoptPodGracePeriod(10_000);
  assert.is(d.drainTimeoutMs(), 5000, 'grace - stop timeout: the most that still lets the stop timeout run');
  assert.ok(log.lines.some((l) => l.level === 'warn' && l.msg.startsWith('the drain timeout plus the stop timeout exceed')));
});

test('the moments of a stop in the scaffold: drain deadline, kill time, release deadline, Events', () => {
  const d = new Deadlines(scaffold, recorder());
  const t = 1_000_000;
  assert.is(d.drainDeadline(t), t + 3000);
  assert.is(d.killTime(t + 3000), t + 8000);
  assert.is(d.releaseDeadline(t), t + 9500, "half a second before the kubelet's SIGKILL");
  assert.is(d.eventFlushDeadline(t + 100, t), t + 1100, 'a second for Events');
  assert.is(d.eventFlushDeadline(t + 9000, t), t + 9500, 'never past the release deadline');
  assert.is(d.eventFlushDeadline(t, undefined), t + 1000);
  assert.is(d.operatorWaitDeadline(t, t + 3000), t + 7500, 'two seconds kept for the release');
  assert.is(d.operatorWaitDeadline(t, t + 9000), t + 9000, 'never before now');
});

test("a sidecar's termination starts at a preStop drain shortly before its signal, else at the signal", () => {
  const d = new Deadlines(scaffold, recorder());
  assert.is(d.terminationStart(5000, 2000), 2000);
  assert.is(d.terminationStart(5000, undefined), 5000);
  assert.is(d.terminationStart(5000, 6000), 5000, 'a drain after the signal');
  assert.is(d.terminationStart(50_000, 2000), 50_000, 'a drain a grace period or more before: another termination');
});

test('Termination: the first signal drains, the second cuts short, later ones are ignored', async () => {
  let now = 42;
  const t = new Termination(() => now);
  assert.is(t.at, undefined);
  assert.is(t.signal(), 'drain');
  now = 50;
  assert.is(t.signal(), 'cut-short');
  assert.is(t.signal(), 'ignored');
  assert.is(t.at, 42);
  assert.is(t.count, 3);
  await t.requested;
  await t.cutShort;
});

test.run();
