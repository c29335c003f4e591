// The stop procedure with a mode the test plays and a clock it moves: the
// phases in their one order, what each termination signal means, and every
// deadline handed to the mode, the guard and the Events, for Kubebuilder's
// scaffold (terminationGracePeriodSeconds 10, stop timeout 5s). The signals
// are real ones, sent to this process.
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createLogger } from '../../src/log/logger.ts';
import { DrainClient } from '../../src/protocol/client.ts';
import type { ChildExit } from '../../src/supervisor/child.ts';
import type { DrainResult, DrainTicket } from '../../src/supervisor/drain.ts';
import type { ContainerStopSignal, PodDeletion } from '../../src/kube/pod.ts';
import { SidecarMode } from '../../src/supervisor/sidecar-mode.ts';
import type { Mode, StartContext, StartedOperator } from '../../src/supervisor/stop-procedure.ts';
import { recorder } from '../support/log-recorder.ts';
import { tempDir } from '../support/proc.ts';
import { within } from '../support/wait.ts';
import { settle } from '../support/fake-clock.ts';
import { procedure, sigterm, until } from './procedure.ts';

/** A mode whose operator is the test's: it records what the procedure asked of it. */
class PlayedMode implements Mode {
  readonly otherSignals: NodeJS.Signals[] = [];
  readonly passesSignalsOn = true;
  readonly takesDrainRequests = false;
  readonly statusIfCalledOff = 143;
  readonly countsClientsAtTermination = false;
  readonly calls: string[] = [];
  readonly exited: Promise<ChildExit>;
  exit!: (exit: ChildExit) => void;
  context?: StartContext;
  stopped?: { drain: DrainTicket; result: DrainResult; at: number; killInMs: number };
  constructor() {
    this.exited = new Promise((r) => (this.exit = r));
  }
  onOtherSignal(): void {}
  async start(context: StartContext): Promise<StartedOperator> {
    this.context = context;
    this.calls.push('start');
    return {
      exited: this.exited,
      stop: async ({ drain, result, killTime }) => {
        this.calls.push(`stop ${result.outcome}`);
        const at = context.clock.now();
        this.stopped = { drain, result, at, killInMs: killTime(at) - at };
        return 0;
      },
    };
  }
}

/** A client that never says drained, connected; then SIGTERM, and the procedure draining. */
async function drainingWithClient(s: ReturnType<typeof procedure>): Promise<DrainClient> {
  const client = new DrainClient({ socketPath: s.server().path, autoDrained: false });
  await within(5000, 'client', client.ready());
  sigterm();
  await until(() => s.phases.includes('draining'), 'draining');
  return client;
}

test('a SIGTERM with no client: drain, stop, release, exit, in that order; the release by the end of the grace period', async () => {
  const mode = new PlayedMode();
  const s = procedure(mode, []);
  await s.listens;
  await until(() => s.phases.includes('running'), 'running');
  assert.equal(s.guardCalls, ['guard start']);
  sigterm();
  assert.is(await within(5000, 'exit', s.running), 0);
  assert.equal(s.phases, ['starting', 'running', 'draining', 'stopping', 'releasing', 'exited']);
  assert.equal(mode.calls, ['start', 'stop no-client']);
  // Nothing took time on the clock: the release has the grace period less its margin, Events a second each.
  assert.equal(s.guardCalls, ['guard start', 'guard release by +9500']);
  assert.equal(s.flushes, [1000, 1000]);
});

test('the observer hears each event once, in the stated order: the starting request before draining, drainEnded before stopping', async () => {
  const mode = new PlayedMode();
  const heard: string[] = [];
  const s = procedure(mode, [], {
    observer: {
      phase: (phase) => heard.push(phase),
      drainRequested: (source) => heard.push(`requested ${source}`),
      drainEnded: (outcome) => heard.push(`ended ${outcome}`),
    },
  });
  await s.listens;
  await until(() => heard.includes('running'), 'running');
  sigterm();
  assert.is(await within(5000, 'exit', s.running), 0);
  assert.equal(heard, ['starting', 'running', 'requested signal', 'draining', 'ended no-client', 'stopping', 'releasing', 'exited']);
});

test('a client that never drains: the stop comes at the drain deadline (grace - stop timeout - 2s), the release by the grace period', async () => {
  const mode = new PlayedMode();
  const s = procedure(mode, []);
  await s.listens;
  const client = await drainingWithClient(s);
  await s.clock.advance(2999);
  assert.equal(mode.calls, ['start'], 'not stopped a millisecond early');
  await s.clock.advance(1);
  await until(() => mode.calls.length === 2, 'stopped');
  assert.equal(mode.calls, ['start', 'stop deadline']);
  assert.is(mode.stopped!.result.durationMs, 3000);
  await within(5000, 'exit', s.running);
  assert.equal(s.guardCalls.at(-1), 'guard release by +6500', 'what is left of 9.5 s after a 3 s drain');
  client.close();
});

test("the Pod's grace period, asked once the operator runs, replaces the default one and sets the drain deadline", async () => {
  const mode = new PlayedMode();
  let asked = 0;
  const s = procedure(mode, [], { flags: ['--stop-timeout=5s'], podGracePeriod: async () => (asked++, 12_000) });
  await s.listens;
  await until(() => s.phases.includes('running'), 'running');
  await settle();
  assert.is(asked, 1);
  const client = await drainingWithClient(s);
  await s.clock.advance(5000);
  await within(5000, 'exit', s.running);
  assert.is(mode.stopped!.drain.deadline - mode.stopped!.drain.startedAt, 5000, "the Pod's 12 s - 5 s - 2 s, not the default 30 s's 23 s");
  assert.is(mode.stopped!.result.outcome, 'deadline');
  assert.is(mode.stopped!.result.durationMs, 5000);
  client.close();
});

test("kubectl delete --grace-period=4 on a 30 s Pod: the Pod's deletion, read at the SIGTERM, sets the drain deadline the clients are told and the release deadline", async () => {
  const mode = new PlayedMode();
  let deletionAt = 0;
  const reads: number[] = [];
  const s = procedure(mode, [], {
    flags: ['--stop-timeout=5s'],
    podGracePeriod: async () => 30_000,
    podDeletion: async (timeoutMs) => (reads.push(timeoutMs), { state: 'deleting', at: deletionAt, graceMs: 4000 }),
  });
  await s.listens;
  await until(() => s.phases.includes('running'), 'running');
  const client = new DrainClient({ socketPath: s.server().path, autoDrained: false });
  await within(5000, 'client', client.ready());
  deletionAt = s.clock.now() + 4000;
  sigterm();
  await until(() => s.phases.includes('draining'), 'draining');
  await within(
    5000,
    'the drain message',
    new Promise<void>((r) => (client.draining.aborted ? r() : client.draining.addEventListener('abort', () => r()))),
  );
  assert.is(client.deadlineAt?.getTime(), s.clock.now(), 'told: no time left to drain');
  await s.clock.advance(0);
  await until(() => mode.calls.length === 2, 'stopped');
  assert.equal(reads, [1000, 1000], 'read at the signal and again before the release, each within a second');
  assert.equal(mode.calls, ['start', 'stop deadline'], 'no time left to drain: the stop at once');
  assert.is(mode.stopped!.killInMs, 2000, 'the stop timeout cut to what the release leaves');
  await within(5000, 'exit', s.running);
  assert.equal(s.guardCalls.at(-1), 'guard release by +3500', "half a second before the deletion's SIGKILL, not 29.5 s");
  client.close();
});

test('the Pod cannot be read in time: the drain starts after a second on the clock, by the grace period from the signal', async () => {
  const mode = new PlayedMode();
  const s = procedure(mode, [], { podDeletion: () => new Promise(() => {}) });
  await s.listens;
  const client = new DrainClient({ socketPath: s.server().path, autoDrained: false });
  await within(5000, 'client', client.ready());
  sigterm();
  await until(() => s.clock.nextAt !== undefined, 'waiting for the read');
  assert.not.ok(s.phases.includes('draining'), 'the drain waits for the read');
  await s.clock.advance(1000);
  await until(() => s.phases.includes('draining'), 'draining after the read gave up');
  await s.clock.advance(2000);
  await until(() => s.phases.includes('releasing'), 'releasing');
  // The read again before the release, which answers no better: a quarter of what is left (6.5 s) at most.
  await s.clock.advance(1000);
  await within(5000, 'exit', s.running);
  assert.equal(mode.calls, ['start', 'stop deadline']);
  assert.is(mode.stopped!.drain.deadline - mode.stopped!.drain.startedAt, 2000, 'the scaffold: 3 s from the signal, less the second spent');
  assert.equal(s.guardCalls.at(-1), 'guard release by +5500', 'the grace period from the signal, less the 3 s drain and the 1 s read');
  client.close();
});

test('a preStop request over HTTP: the drain starts at once, and ends sooner once the Pod says its deletion leaves less', async () => {
  const path = join(tempDir(), 'drain.sock');
  const mode = new SidecarMode();
  let answer!: (d: PodDeletion) => void;
  const s = procedure(mode, [`--socket=${path}`], {
    command: 'sidecar',
    flags: ['--stop-timeout=5s'],
    podDeletion: () => new Promise((r) => (answer = r)),
  });
  await s.listens;
  const client = new DrainClient({ socketPath: path, autoDrained: false });
  await within(5000, 'client', client.ready());
  const ticket = s.p.startDrain('http');
  assert.is(ticket.deadline - s.clock.now(), 23_000, 'told what was known: the default 30 s');
  await s.clock.advance(500);
  answer({ state: 'deleting', at: s.clock.now() + 9500, graceMs: 10_000 });
  await settle();
  await s.clock.advance(2499);
  assert.not.ok(s.phases.includes('stopping'), "still draining 1 ms before the deletion's drain deadline");
  await s.clock.advance(1);
  assert.is(
    (await within(5000, 'drain end', ticket.ended)).outcome,
    'deadline',
    'at the deletion less 2 s and the stop timeout: 3 s after the request',
  );
  client.close();
  sigterm();
  await s.clock.advance(10_000);
  await within(5000, 'exit', s.running);
});

test('a SIGTERM after a preStop drain is over joins it at once: the termination is logged before the sidecar stops, the Pod not yet read', async () => {
  const path = join(tempDir(), 'drain.sock');
  const lines: string[] = [];
  const logger = createLogger({ level: 'info', format: 'json', stream: { write: (l: string) => lines.push(String(JSON.parse(l).msg)) } });
  const s = procedure(new SidecarMode(), [`--socket=${path}`], { command: 'sidecar', logger, podDeletion: () => new Promise(() => {}) });
  await s.listens;
  await until(() => s.phases.includes('running'), 'running');
  const ticket = s.p.startDrain('http');
  assert.is((await within(5000, 'drain end', ticket.ended)).outcome, 'no-client');
  await settle();
  assert.equal(s.phases, ['starting', 'running', 'draining'], 'the stop waits for the signal');
  sigterm();
  await until(() => s.phases.includes('releasing'), 'releasing without a second on the clock: the read of the Pod is not waited for');
  const at = (msg: string) => lines.indexOf(msg);
  assert.ok(
    at('termination requested') >= 0 && at('termination requested') < at('no operator client connected: releasing at once'),
    lines.join(' | '),
  );
  await s.clock.advance(1000);
  assert.is(await within(5000, 'exit', s.running), 0);
  assert.is(lines.at(-1), 'sidecar stopped');
});

test('a second delete, shorter, read at the second signal, moves the release deadline', async () => {
  const mode = new PlayedMode();
  let deletionAt = 0;
  const s = procedure(mode, [], {
    flags: ['--stop-timeout=5s', '--drain-timeout=20s', '--grace-period=30s'],
    podDeletion: async () => ({ state: 'deleting', at: deletionAt }),
  });
  await s.listens;
  deletionAt = s.clock.now() + 30_000;
  const client = await drainingWithClient(s);
  await s.clock.advance(1000);
  deletionAt = s.clock.now() + 2000;
  sigterm();
  await within(5000, 'exit', s.running);
  assert.equal(mode.calls, ['start', 'stop cut-short']);
  assert.equal(s.guardCalls.at(-1), 'guard release by +1500', "the second delete's 2 s, not the first's 29 s");
  client.close();
});

test('a second, shorter delete with no signal of its own: seen at the next read while draining (every 2 s), the drain ends then', async () => {
  const mode = new PlayedMode();
  let deletionAt = 0;
  let reads = 0;
  const s = procedure(mode, [], {
    flags: ['--stop-timeout=5s', '--grace-period=30s'],
    podDeletion: async () => (reads++, { state: 'deleting', at: deletionAt }),
  });
  await s.listens;
  const t0 = s.clock.now();
  deletionAt = t0 + 30_000;
  const client = await drainingWithClient(s);
  await s.clock.advance(1000);
  deletionAt = t0 + 5000;
  await s.clock.advance(999);
  assert.equal([reads, mode.calls], [1, ['start']], 'not read again yet');
  await s.clock.advance(1);
  await until(() => mode.calls.length === 2, 'stopped at the next read');
  assert.is(mode.stopped!.drain.deadline, t0 + 23_000, 'the deadline first told');
  assert.equal(mode.calls, ['start', 'stop deadline']);
  await within(5000, 'exit', s.running);
  assert.equal(s.guardCalls.at(-1), 'guard release by +2500', "half a second before the second delete's SIGKILL");
  client.close();
});

test('a second SIGTERM cuts the drain short; a third changes nothing', async () => {
  const mode = new PlayedMode();
  const s = procedure(mode, []);
  await s.listens;
  const client = await drainingWithClient(s);
  sigterm();
  sigterm();
  await within(5000, 'exit', s.running);
  assert.equal(mode.calls, ['start', 'stop cut-short']);
  client.close();
});

test('the operator exiting by itself: released at once, its status is the exit status, no drain', async () => {
  const mode = new PlayedMode();
  const s = procedure(mode, []);
  await until(() => s.phases.includes('running'), 'running');
  await s.clock.advance(60_000);
  mode.exit({ status: 3, code: 3 });
  assert.is(await within(5000, 'exit', s.running), 3);
  assert.equal(s.phases, ['starting', 'running', 'releasing', 'exited']);
  assert.equal(mode.calls, ['start']);
  assert.equal(s.guardCalls.at(-1), 'guard release by +9500', 'a full grace period: the kubelet has not started counting');
});

test('a SIGTERM before the start calls it off: the mode is never started, nothing is held or released', async () => {
  const mode = new PlayedMode();
  const s = procedure(mode, [], { onServer: () => sigterm() });
  assert.is(await within(5000, 'exit', s.running), 143);
  assert.equal(mode.calls, []);
  assert.equal(s.guardCalls, []);
  assert.equal(s.phases, ['starting', 'exited']);
});

test('sidecar mode: an operator that stays connected is waited for until the wait deadline, which leaves the release its time', async () => {
  const path = join(tempDir(), 'drain.sock');
  const mode = new SidecarMode();
  const s = procedure(mode, [`--socket=${path}`], { command: 'sidecar' });
  await s.listens;
  const client = new DrainClient({ socketPath: path });
  await within(5000, 'client', client.ready());
  sigterm();
  await until(() => s.phases.includes('stopping'), 'stopping: the client said drained by itself');
  // The wait deadline: the release deadline (9.5 s) less min(2 s, grace / 4).
  await s.clock.advance(7499);
  assert.ok(!s.phases.includes('releasing'), 'still waiting for the operator');
  await s.clock.advance(1);
  assert.is(await within(5000, 'exit', s.running), 0);
  assert.equal(s.guardCalls.at(-1), 'guard release by +2000');
  client.close();
});

test("the leader release: once the operator is gone, beside the guard's release and by its deadline, which it does not hold up", async () => {
  const mode = new PlayedMode();
  const order: string[] = [];
  let leaderDone!: () => void;
  const s = procedure(mode, [], {
    releaseLeader: (deadline) => {
      order.push(`leader by +${deadline - s.clock.now()} after ${mode.calls.join(', ')}`);
      return new Promise<void>((r) => (leaderDone = r));
    },
  });
  await s.listens;
  await until(() => s.phases.includes('running'), 'running');
  sigterm();
  // The guard is released while the leader release is still under way.
  await until(() => s.guardCalls.length === 2, 'the guard released');
  assert.equal(order, ['leader by +9500 after start, stop no-client']);
  assert.equal(s.guardCalls, ['guard start', 'guard release by +9500']);
  assert.not.ok(s.phases.includes('exited'), 'the exit waits for the leader release (bounded by the same deadline)');
  leaderDone();
  assert.is(await within(5000, 'exit', s.running), 0);
});

test('the step before the drain (a namespace being deleted): the operator runs and the guard is held meanwhile; the drain keeps its deadline; a second SIGTERM cuts the step short', async () => {
  for (const cut of [false, true]) {
    const mode = new PlayedMode();
    const steps: string[] = [];
    let done!: () => void;
    const s = procedure(mode, [], {
      beforeDrain: async (deadline, signal) => {
        steps.push(`step by +${deadline - s.clock.now()}`);
        await new Promise<void>((r) => {
          done = r;
          signal.addEventListener('abort', () => (steps.push('aborted'), r()), { once: true });
        });
      },
    });
    await s.listens;
    const client = new DrainClient({ socketPath: s.server().path, autoDrained: false });
    await within(5000, 'client', client.ready());
    sigterm();
    await until(() => steps.length === 1, 'the step');
    // Grace 10 s, stop timeout 5 s: a 3 s drain, of which the step may take all but the last 1.5 s.
    assert.equal(steps, ['step by +1500']);
    await s.clock.advance(1000);
    assert.not.ok(s.phases.includes('draining'), 'no drain yet: the operator works on');
    assert.equal(s.guardCalls, ['guard start'], 'the guard held');
    if (cut) {
      sigterm();
      await until(() => mode.calls.length === 2, `stopped (cut): ${mode.calls} ${s.phases}`);
      assert.equal(steps, ['step by +1500', 'aborted']);
      assert.equal(mode.calls, ['start', 'stop cut-short'], 'the second signal cuts the drain short too');
    } else {
      done();
      await until(() => s.phases.includes('draining'), 'draining');
      await s.clock.advance(1999);
      assert.equal(mode.calls, ['start'], 'not stopped a millisecond early');
      await s.clock.advance(1);
      await until(() => mode.calls.length === 2, `stopped: ${mode.calls} ${s.phases} ${s.clock.nextAt! - s.clock.now()}`);
      assert.equal(mode.calls, ['start', 'stop deadline']);
      assert.is(mode.stopped!.result.durationMs, 2000, 'the drain ends 3 s after the signal, as without the step');
    }
    client.close();
    await within(5000, 'exit', s.running);
  }
});

test('DRAINGUARD_DRAIN_SIGNALS=SIGUSR2: a SIGUSR2 starts the drain as SIGTERM does, and a second one cuts it short', async () => {
  const mode = new PlayedMode();
  const log = recorder();
  const s = procedure(mode, ['--drain-signals=USR2'], { logger: log });
  await s.listens;
  await until(() => s.phases.includes('running'), 'running');
  const client = new DrainClient({ socketPath: s.server().path, autoDrained: false });
  await within(5000, 'client', client.ready());
  process.kill(process.pid, 'SIGUSR2');
  await until(() => s.phases.includes('draining'), 'draining at SIGUSR2');
  assert.equal(log.lines.find((l) => l.msg === 'termination requested')?.fields?.signal, 'SIGUSR2');
  process.kill(process.pid, 'SIGUSR2');
  await within(5000, 'exit', s.running);
  assert.equal(mode.calls, ['start', 'stop cut-short']);
  client.close();
});

test("the container's stop signal from the Pod (SIGHUP): asked once the operator runs, then caught and draining; its handler goes with the run", async () => {
  const mode = new PlayedMode();
  const log = recorder();
  const before = process.listenerCount('SIGHUP');
  let tell!: (reading: ContainerStopSignal) => void;
  const s = procedure(mode, [], { logger: log, podStopSignal: () => new Promise((r) => (tell = r)) });
  await s.listens;
  await until(() => s.phases.includes('running') && tell !== undefined, 'asked once running');
  assert.is(process.listenerCount('SIGHUP'), before, 'not caught before the Pod said so (the played mode catches nothing else)');
  tell({ container: 'manager', signal: 'SIGHUP', from: 'status' });
  await until(() => process.listenerCount('SIGHUP') === before + 1, 'SIGHUP caught');
  const said = log.lines.find((l) => l.msg.startsWith("the container's stop signal read from the Pod"));
  assert.equal(said?.msg, "the container's stop signal read from the Pod: it starts the drain, no longer passed on to the operator");
  assert.equal(said?.fields, { container: 'manager', stopSignal: 'SIGHUP', from: 'status', drainSignals: ['SIGTERM', 'SIGINT', 'SIGHUP'] });
  process.kill(process.pid, 'SIGHUP');
  await within(5000, 'exit', s.running);
  assert.equal(mode.calls, ['start', 'stop no-client']);
  assert.is(process.listenerCount('SIGHUP'), before, "the run's handler removed at its end");
});

test('what the Pod says of a stop signal drainguard cannot drain on, or of none, is said once; the drain signals stay', async () => {
  for (const [reading, level, said] of [
    [
      { container: 'manager', signal: 'SIGKILL', from: 'spec' },
      'warn',
      /is SIGKILL: it cannot be caught.*set the container's lifecycle.stopSignal to SIGTERM/,
    ],
    [
      { container: 'manager', signal: 'SIGRTMIN+1', from: 'spec' },
      'warn',
      /is SIGRTMIN\+1: drainguard does not catch it: its default action ends drainguard/,
    ],
    [{ container: 'manager', signal: 'SIGTERM', from: 'status' }, 'info', /read from the Pod: it starts the drain$/],
    [{ container: 'manager' }, 'debug', /the Pod does not say the container's stop signal/],
    [
      { containers: ['manager', 'proxy'] },
      'info',
      /cannot tell which of the Pod's containers is drainguard's.*needs DRAINGUARD_DRAIN_SIGNALS/,
    ],
  ] as [ContainerStopSignal, string, RegExp][]) {
    const mode = new PlayedMode();
    const log = recorder();
    const s = procedure(mode, [], { logger: log, podStopSignal: async () => reading });
    await s.listens;
    await until(() => log.lines.some((l) => said.test(l.msg)), `said: ${said}`);
    assert.equal(
      log.lines.filter((l) => said.test(l.msg)).map((l) => l.level),
      [level],
    );
    sigterm();
    await within(5000, 'exit', s.running);
    assert.equal(mode.calls, ['start', 'stop no-client']);
  }
});

test.run();
