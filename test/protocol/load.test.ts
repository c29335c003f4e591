// The drain socket of the built executable under load: a thousand
// connections that never say hello, each holding 63 KiB of a line (before
// the caps: RSS 59 -> 165 MiB, the chart's limit is 160Mi), then greeted
// clients holding half lines and idle ones past the cap on all connections.
// drainguard holds no more than its caps (1024 connections, 128 of them yet to
// say hello), its RSS stays bounded, and a SIGTERM still drains on time.

import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { NODE, drainguard, fixture, tempDir } from '../support/proc.ts';
import { RawClient } from '../support/raw-client.ts';
import { until } from '../support/wait.ts';

const MAX_CONNECTIONS = 1024;
const MAX_UNGREETED = 128;
const HALF_LINE = 63 * 1024;
const DRAIN_TIMEOUT_MS = 10_000;

const status = (pid: number, field: string) =>
  Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
const sockets = (pid: number) =>
  readdirSync(`/proc/${pid}/fd`).filter((fd) => {
    try {
      return readlinkSync(`/proc/${pid}/fd/${fd}`).startsWith('socket:');
    } catch {
      return false;
    }
  }).length;

/** Opens `n` connections, a hundred at a time (the listen backlog is finite), and runs `then` on each once connected. */
async function openMany(path: string, n: number, then: (c: RawClient) => void): Promise<RawClient[]> {
  const all: RawClient[] = [];
  while (all.length < n) {
    const batch = await Promise.all(Array.from({ length: Math.min(100, n - all.length) }, () => new RawClient(path).connected()));
    batch.forEach(then);
    all.push(...batch);
  }
  return all;
}

/** 1000 connections that never say hello, each sending 63 KiB of a line at once. */
const flood = (path: string) => openMany(path, 1000, (c) => c.send('{"type":"hello","protocol":1,"name":"'.padEnd(HALF_LINE, 'x')));

/** Waits until `done` (what /proc and the sockets say is read again every 20 ms: there is no event for it). */
function polled(done: () => boolean, what: string): Promise<true> {
  return until(
    (check) => {
      const t = setInterval(check, 20);
      return () => clearInterval(t);
    },
    () => (done() ? true : undefined),
    30_000,
    what,
  );
}

/** Waits until drainguard has read everything sent to it (no byte queued on any of its sockets: ss, the kernel's view). */
function readAll(pid: number): Promise<true> {
  return polled(() => {
    const lines = execFileSync('ss', ['-xpnH'], { encoding: 'utf8' })
      .split('\n')
      .filter((l) => l.includes(`pid=${pid},`));
    return lines.reduce((sum, l) => sum + Number(l.trim().split(/\s+/)[2]), 0) === 0;
  }, 'drainguard to read what was sent');
}

const busy = (c: RawClient, reason: RegExp) =>
  c.messages().some((m) => m.type === 'error' && /^DG_PROTOCOL_BUSY: /.test(String(m.message)) && reason.test(String(m.message)));

test('a thousand silent half lines, alone and past 900 greeted clients: bounded, and the drain is on time', async () => {
  const path = join(tempDir(), 'drain.sock');
  const p = drainguard(['run', '--socket', path, '--drain-timeout', `${DRAIN_TIMEOUT_MS}ms`, '--', NODE, fixture('operator.ts')], {
    FIXTURE_WORK: '300',
  });
  await p.line('ready');
  const before = status(p.pid, 'VmRSS');
  // The listener and the operator's own connection (and whatever else drainguard holds) before the load.
  const base = sockets(p.pid);
  const connections = () => sockets(p.pid) - base + 1;
  const atMost = (n: number, what: string) => polled(() => connections() <= n, what);

  // 1000 connections that never say hello, each sending 63 KiB of a line at once: the cap on those yet to say hello.
  const silent = await flood(path);
  await polled(() => silent.filter((c) => c.closed).length >= silent.length - MAX_UNGREETED, 'the connections past the cap refused');
  const refusedSilent = silent.filter((c) => busy(c, /not said hello \(at most 128\)/)).length;
  const heldSilent = silent.filter((c) => !c.closed).length;
  await readAll(p.pid);
  // The refused ones are cut a second after their refusal (drainguard reads nothing of them, nor sees them close).
  await atMost(heldSilent + 1, 'the refused connections cut');
  const afterSilent = status(p.pid, 'VmRSS');
  for (const c of silent) c.socket.destroy();
  await atMost(1, 'the silent connections gone');

  // 900 greeted clients, 300 of them holding a half line (an inflight message they finish at drain); then the flood again: the cap on all connections.
  const greet = (c: RawClient) => c.send({ type: 'hello', protocol: 1, name: 'load', pid: 1 });
  const half = await openMany(path, 300, greet);
  const idle = await openMany(path, 600, greet);
  const greeted = [...half, ...idle];
  await Promise.all(greeted.map((c) => c.message('welcome', 20_000)));
  for (const c of half) c.send('{"type":"inflight","count":1'.padEnd(HALF_LINE, ' '));
  const again = await flood(path);
  const room = MAX_CONNECTIONS - 1 - greeted.length;
  await polled(() => again.filter((c) => c.closed).length >= again.length - room, 'the connections past the cap refused');
  await readAll(p.pid);
  await atMost(MAX_CONNECTIONS, 'at most 1024 connections once the refused ones are cut');
  const refusedAgain = again.filter((c) => busy(c, /too many connections \(at most 1024\)/)).length;
  const loaded = { rss: status(p.pid, 'VmRSS'), peak: status(p.pid, 'VmHWM'), connections: connections() };

  console.log(
    `  RSS ${before.toFixed(1)} MiB before; ${afterSilent.toFixed(1)} MiB with 1000 silent 63 KiB half lines (${heldSilent} held, ${refusedSilent} refused)`,
  );
  console.log(
    `  ${loaded.rss.toFixed(1)} MiB (peak ${loaded.peak.toFixed(1)}) with ${greeted.length} greeted clients (${half.length} holding 63 KiB) and the flood again (${refusedAgain} refused); ${loaded.connections} connections`,
  );
  assert.ok(heldSilent <= MAX_UNGREETED && refusedSilent >= 1000 - MAX_UNGREETED, `${heldSilent} held, ${refusedSilent} refused`);
  assert.ok(refusedAgain >= 1000 - room, `${refusedAgain} refused past the cap on all connections`);
  assert.ok(loaded.connections <= MAX_CONNECTIONS, `${loaded.connections} connections`);
  assert.ok(afterSilent - before < 40, `RSS grew by ${(afterSilent - before).toFixed(1)} MiB with the silent ones`);
  assert.ok(loaded.peak - before < 96, `RSS grew by ${(loaded.peak - before).toFixed(1)} MiB`);
  const refusals = p.logs().filter((l) => l.msg === 'drain socket connection refused').length;
  assert.ok(refusals <= 3, `${refusals} log lines for ${refusedSilent + refusedAgain} refusals`);

  // SIGTERM with the load present: every greeted client is told and acknowledges, the operator's work is done.
  for (const c of greeted) {
    void c.message('drain', 20_000).then(
      () => c.send(half.includes(c) ? '}\n{"type":"drained"}\n' : '{"type":"drained"}\n'),
      () => {},
    );
  }
  p.kill('SIGTERM');
  const exit = await p.exit(30_000);
  assert.equal(exit.code, 0);
  const ended = p.logs().find((l) => l.msg === 'drain ended')!;
  console.log(
    `  drain ended ${ended.outcome} after ${ended.durationMs} ms with ${greeted.length} greeted clients and the silent ones present`,
  );
  assert.equal(ended.outcome, 'drained');
  assert.ok((ended.durationMs as number) < DRAIN_TIMEOUT_MS, `${ended.durationMs} ms`);
  assert.ok(p.stdout.includes('work done 0'));
  assert.not.ok(p.stdout.some((l) => l.startsWith('work interrupted')));
  for (const c of [...greeted, ...again]) c.socket.destroy();
});

test.run();
