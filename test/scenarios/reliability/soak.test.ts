// Soak: many start/drain/stop cycles in a row, with descriptors, sockets,
// processes, files and memory counted before and after. Each `drainguard run`
// is a process of its own, so what could leak there is what it leaves behind;
// the long-lived pieces (the drain server, the client) are soaked in this
// process, where a leak accumulates.

import { readdirSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parseArgs } from '../../../src/config/load.ts';
import { resolveSupervisorConfig } from '../../../src/config/supervisor.ts';
import { DrainClient } from '../../../src/protocol/client.ts';
import { DrainServer, type ServerEvent } from '../../../src/protocol/server.ts';
import { StopProcedure } from '../../../src/supervisor/stop-procedure.ts';
import { WrapMode } from '../../../src/supervisor/wrap-mode.ts';
import { tellDrain } from '../../support/drain.ts';
import { NODE, Proc, drainguard, fixture, tempDir } from '../../support/proc.ts';
import { until, within } from '../../support/wait.ts';
import { countSockets, descriptors, memory, mib, processesWithEnv, unixSocketsUnder } from './support/procfs.ts';
import { prng } from '../../support/random.ts';
import { median, percentile } from '../../support/stats.ts';
import { sizes } from './support/sizes.ts';
import { logOf, noWorkInterrupted } from './support/timeline.ts';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const OPERATOR = fixture('operator.ts');

/** Heap in use after a full collection, in bytes. */
function heap(): number {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

/** Handles and timers keeping this process's event loop alive, by type. */
function activeResources(): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const type of process.getActiveResourcesInfo()) counts[type] = (counts[type] ?? 0) + 1;
  return counts;
}

/** No more handles or timers of any type than before (fewer is fine: a connect in flight then). */
function noMoreResources(before: Record<string, number>, what: string): void {
  const after = activeResources();
  const grown = Object.entries(after).filter(([type, n]) => n > (before[type] ?? 0));
  assert.equal(grown, [], `${what}: ${JSON.stringify(before)} -> ${JSON.stringify(after)}`);
}

const poll =
  (ms = 10) =>
  (check: () => void) => {
    const t = setInterval(check, ms);
    return () => clearInterval(t);
  };

test(`soak: ${sizes.soakCycles} start/drain/stop cycles of the executable leave nothing behind`, async () => {
  const tmp = tempDir();
  const soakId = `soak-${process.pid}`;
  const fdsBefore = descriptors('self').length;
  const perCycle: { fds: number; sockets: number; rssKiB: number; drainMs: number }[] = [];
  const cycle = async (i: number) => {
    const p: Proc = drainguard(['run', '--', NODE, OPERATOR], {
      TMPDIR: tmp,
      FIXTURE_SOAK: soakId,
      FIXTURE_WORK: String(50 + (i % 5) * 20),
      DRAINGUARD_DRAIN_TIMEOUT: '5s',
    });
    await p.line('ready');
    const fds = descriptors(p.pid);
    const rssKiB = memory(p.pid).rssKiB;
    p.kill('SIGTERM');
    assert.equal((await p.exit()).code, 0, `cycle ${i}: ${p.stderr.join('\n')}`);
    const ended = logOf(p, 'drain ended');
    assert.equal(ended.outcome, 'drained', `cycle ${i}`);
    noWorkInterrupted(p);
    perCycle.push({ fds: fds.length, sockets: countSockets(fds), rssKiB, drainMs: ended.durationMs as number });
  };
  let next = 0;
  await Promise.all(
    Array.from({ length: 2 }, async () => {
      while (next < sizes.soakCycles) await cycle(next++);
    }),
  );

  // Nothing left: no operator, no private socket directory, no bound socket, no descriptor of ours.
  assert.equal(processesWithEnv('FIXTURE_SOAK', soakId), [], 'operators left running');
  assert.equal(readdirSync(tmp), [], 'files left in TMPDIR');
  assert.equal(unixSocketsUnder(tmp), [], 'sockets left bound');
  assert.ok(descriptors('self').length <= fdsBefore, `the test's own descriptors: ${fdsBefore} -> ${descriptors('self').length}`);
  // Every drainguard held the same descriptors at the same point: none grows from one start to the next.
  const fds = new Set(perCycle.map((c) => c.fds));
  const sockets = new Set(perCycle.map((c) => c.sockets));
  assert.ok(fds.size === 1 && sockets.size === 1, `descriptors per drainguard: ${[...fds]}, sockets: ${[...sockets]}`);
  const rss = perCycle.map((c) => c.rssKiB);
  const drains = perCycle.map((c) => c.drainMs);
  console.log(
    `  ${perCycle.length} cycles: drainguard held ${[...fds][0]} fds (${[...sockets][0]} sockets) each; RSS median ${mib(median(rss))}, max ${mib(percentile(rss, 100))}; drain median ${median(drains)} ms, max ${percentile(drains, 100)} ms`,
  );
});

test(`soak: one drain server, ${sizes.soakServerCycles} clients connecting, greeting, misbehaving and leaving`, async () => {
  const dir = tempDir();
  const random = prng(sizes.seed);
  const events: Record<ServerEvent['type'], number> = { hello: 0, inflight: 0, drained: 0, disconnect: 0, rejected: 0 };
  const server = new DrainServer({ path: join(dir, 'drain.sock'), onEvent: (e) => events[e.type]++ });
  await server.listen();
  const warm = async (n: number) => {
    for (let i = 0; i < n; i++) {
      const s = connect(server.path);
      const kind = random.int(4);
      const answered = new Promise<void>((resolve) => {
        s.on('data', () => resolve());
        s.on('close', () => resolve());
      });
      s.on('error', () => {});
      s.write(
        kind === 0
          ? '{"type":"hello","protocol":1,"name":"soak"}\n{"type":"inflight","count":2}\n{"type":"drained"}\n'
          : kind === 1
            ? 'not json\n'
            : kind === 2
              ? '{"type":"hello","protocol":1}\n{"type":"inflight","count":-1}\n'
              : '{"type":"hello","protocol":1}\n',
      );
      await within(5000, 'an answer', answered);
      s.destroy();
    }
    await until(poll(), () => (server.clients().length === 0 ? true : undefined), 5000, 'every client gone');
  };
  await warm(200);
  const fdList = descriptors('self');
  const fds = fdList.length;
  const heapBefore = heap();
  const started = Date.now();
  await warm(sizes.soakServerCycles);
  const ms = Date.now() - started;
  // A rejected client's socket may linger up to a second, half-closed, before it is destroyed.
  await until(poll(), () => (descriptors('self').length <= fds ? true : undefined), 5000, `descriptors back to ${fdList.join(' ')}`).catch(
    (err: Error) => {
      throw new Error(`${err.message}; now ${descriptors('self').join(' ')}`);
    },
  );
  const heapAfter = heap();
  assert.equal(server.clients(), []);
  // A drain with nobody connected still ends at once, after all that.
  const drain = tellDrain(server, Date.now() + 1000);
  assert.is(drain.told, 0);
  assert.equal(await within(1000, 'drain', drain.answered), { acknowledged: 0, disconnected: 0 });
  await server.close();
  const grown = heapAfter - heapBefore;
  console.log(
    `  ${sizes.soakServerCycles + 200} connections in ${ms} ms, events ${JSON.stringify(events)}; heap ${grown >= 0 ? '+' : ''}${(grown / 1024).toFixed(0)} KiB`,
  );
  assert.ok(events.rejected > 0 && events.drained > 0 && events.hello > 0);
  assert.ok(grown < 1024 * 1024, `heap grew ${(grown / 1024).toFixed(0)} KiB over ${sizes.soakServerCycles} connections`);
});

test(`soak: drain servers started, drained and closed ${Math.ceil(sizes.soakServerCycles / 10)} times with a client each`, async () => {
  const dir = tempDir();
  const path = join(dir, 'drain.sock');
  const cycles = Math.ceil(sizes.soakServerCycles / 10);
  const cycle = async () => {
    const server = new DrainServer({ path });
    await server.listen();
    const client = new DrainClient({ socketPath: path, name: 'soak', reconnectDelayMs: [5, 20] });
    await within(5000, 'welcome', client.ready());
    const end = client.begin();
    const drained = tellDrain(server, Date.now() + 5000).answered;
    await within(5000, 'the drain to reach the client', new Promise((r) => client.draining.addEventListener('abort', r)));
    end();
    assert.equal(await within(5000, 'drained', drained), { acknowledged: 1, disconnected: 0 });
    client.close();
    await server.close();
  };
  for (let i = 0; i < 20; i++) await cycle();
  const fds = descriptors('self').length;
  const resources = activeResources();
  const heapBefore = heap();
  for (let i = 0; i < cycles; i++) await cycle();
  const grown = heap() - heapBefore;
  assert.equal(readdirSync(dir), [], 'socket file removed each time');
  assert.ok(descriptors('self').length <= fds, `descriptors: ${fds} -> ${descriptors('self').length}`);
  noMoreResources(resources, 'handles and timers');
  console.log(
    `  ${cycles} listen/drain/close cycles: heap ${grown >= 0 ? '+' : ''}${(grown / 1024).toFixed(0)} KiB, fds and handles unchanged`,
  );
  assert.ok(grown < 1024 * 1024, `heap grew ${(grown / 1024).toFixed(0)} KiB`);
});

test('soak: a client outliving many drainguards reconnects to each, and holds nothing from the old ones', async () => {
  const dir = tempDir();
  const path = join(dir, 'drain.sock');
  const restarts = Math.max(20, Math.ceil(sizes.soakServerCycles / 30));
  let hellos = 0;
  const errors: string[] = [];
  const client = new DrainClient({
    socketPath: path,
    name: 'survivor',
    reconnectDelayMs: [2, 10],
    onError: (e) => errors.push((e as NodeJS.ErrnoException).code ?? e.message),
  });
  const fds = descriptors('self').length;
  const resources = activeResources();
  let heapBefore = 0;
  for (let i = 0; i < restarts; i++) {
    const server = new DrainServer({ path, onEvent: (e) => e.type === 'hello' && hellos++ });
    await server.listen();
    await until(poll(5), () => (server.clients().some((c) => c.greeted) ? true : undefined), 5000, `reconnect ${i}`);
    await server.close();
    if (i === 9) heapBefore = heap();
  }
  const grown = heap() - heapBefore;
  client.close();
  await until(poll(), () => (descriptors('self').length <= fds ? true : undefined), 5000, 'descriptors back');
  assert.equal(hellos, restarts, 'one hello per drainguard');
  assert.ok(
    errors.every((e) => e === 'ENOENT' || e === 'ECONNREFUSED'),
    errors.join(','),
  );
  noMoreResources(resources, 'handles and timers after close');
  console.log(
    `  ${restarts} drainguard restarts: ${hellos} reconnects, ${errors.length} refused attempts; heap ${grown >= 0 ? '+' : ''}${(grown / 1024).toFixed(0)} KiB`,
  );
  assert.ok(grown < 512 * 1024, `heap grew ${(grown / 1024).toFixed(0)} KiB`);
});

test('soak: clients created and closed before, during and after connecting hold nothing', async () => {
  const dir = tempDir();
  const path = join(dir, 'drain.sock');
  const server = new DrainServer({ path });
  await server.listen();
  const fds = descriptors('self').length;
  const resources = activeResources();
  const heapBefore = heap();
  const n = sizes.soakServerCycles;
  for (let i = 0; i < n; i++) {
    const client = new DrainClient({ socketPath: path, name: 'short-lived' });
    if (i % 3 === 1) await within(5000, 'welcome', client.ready());
    if (i % 3 === 2) await new Promise((r) => setImmediate(r));
    client.close();
  }
  await until(
    poll(),
    () => (server.clients().length === 0 && descriptors('self').length <= fds ? true : undefined),
    5000,
    'every client gone',
  );
  const grown = heap() - heapBefore;
  noMoreResources(resources, 'handles and timers');
  await server.close();
  console.log(`  ${n} short-lived clients: heap ${grown >= 0 ? '+' : ''}${(grown / 1024).toFixed(0)} KiB`);
  assert.ok(grown < 1024 * 1024, `heap grew ${(grown / 1024).toFixed(0)} KiB`);
});

test('soak: the wrap supervisor run again and again in one process restores its signal handlers and exit hooks', async () => {
  const tmp = tempDir();
  const runs = Math.max(20, Math.ceil(sizes.soakCycles / 2));
  const config = resolveSupervisorConfig(parseArgs('run', ['--stop-timeout=2s', '--drain-timeout=1s'], {}));
  const listeners = () => Object.fromEntries(['SIGTERM', 'SIGINT', 'SIGHUP', 'SIGUSR1', 'exit'].map((e) => [e, process.listenerCount(e)]));
  const run = (i: number) =>
    // What `drainguard run` builds, without the pod's API, the guard and the HTTP listener.
    new StopProcedure(config, new WrapMode(['sleep', '30'], { PATH: process.env.PATH, TMPDIR: tmp })).run({
      // Stopped once it runs: a real SIGTERM through the whole drain and stop.
      observer: { phase: (phase) => phase === 'running' && i % 2 === 0 && process.kill(process.pid, 'SIGTERM') },
      onServer: () => i % 2 === 1 && process.kill(process.pid, 'SIGTERM'),
    });
  assert.equal(await within(10_000, 'a first run', run(0)), 143);
  const before = listeners();
  const fds = descriptors('self').length;
  const resources = activeResources();
  const heapBefore = heap();
  for (let i = 0; i < runs; i++) assert.equal(await within(10_000, `run ${i}`, run(i)), 143, `run ${i}`);
  const grown = heap() - heapBefore;
  assert.equal(listeners(), before, 'signal handlers and exit hooks');
  assert.ok(descriptors('self').length <= fds, `descriptors: ${fds} -> ${descriptors('self').length}`);
  noMoreResources(resources, 'handles and timers');
  assert.equal(readdirSync(tmp), [], 'private socket directories removed');
  console.log(
    `  ${runs} supervised runs in one process: listeners ${JSON.stringify(before)} unchanged; heap ${grown >= 0 ? '+' : ''}${(grown / 1024).toFixed(0)} KiB`,
  );
});

test.run();
