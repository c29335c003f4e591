// The drain socket's bounds (DrainServer with small limits, real Unix
// sockets): the caps on connections and on those yet to say hello, the hello
// deadline, and refusals logged at a bounded rate.

import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createLogger } from '../../src/log/logger.ts';
import { type IntakeLimits, DrainServer } from '../../src/protocol/server.ts';
import { tellDrain } from '../support/drain.ts';
import { tempDir } from '../support/proc.ts';
import { until, within } from '../support/wait.ts';
import { RawClient } from '../support/raw-client.ts';

const HELLO = { type: 'hello', protocol: 1, name: 'intake', pid: 1 };

async function serve(limits: IntakeLimits): Promise<{ server: DrainServer; path: string; logs: Record<string, unknown>[] }> {
  const logs: Record<string, unknown>[] = [];
  const logger = createLogger({
    level: 'debug',
    format: 'json',
    stream: { write: (l: string) => logs.push(JSON.parse(l) as Record<string, unknown>) },
  });
  const path = join(tempDir(), 'drain.sock');
  const server = new DrainServer({ path, logger, limits });
  await server.listen();
  return { server, path, logs };
}

const connect = (path: string) => new RawClient(path).connected();

async function greeted(path: string): Promise<RawClient> {
  const c = await connect(path);
  c.send(HELLO);
  await c.message('welcome');
  return c;
}

/** The first message drainguard sent on a connection. */
function firstAnswer(c: RawClient): Promise<Record<string, unknown>> {
  return until(
    (check) => {
      c.socket.on('data', check);
      return () => c.socket.off('data', check);
    },
    () => c.messages()[0],
    5000,
    'an answer',
  );
}

/** A connection past a cap: `error` with the code, then closed by drainguard. */
async function refused(path: string, reason: RegExp): Promise<void> {
  const c = await connect(path);
  const error = await c.message('error');
  assert.match(String(error.message), /^DG_PROTOCOL_BUSY: /);
  assert.match(String(error.message), reason);
  await c.close();
}

test('connections yet to say hello are capped; one that says hello makes room', async () => {
  const { server, path } = await serve({ maxConnections: 10, maxUngreeted: 3, helloTimeoutMs: 60_000 });
  const silent = await Promise.all([connect(path), connect(path), connect(path)]);
  await refused(path, /not said hello \(at most 3\)/);
  silent[0]!.send(HELLO);
  await silent[0]!.message('welcome');
  const next = await connect(path);
  next.send(HELLO);
  await next.message('welcome');
  assert.not.ok(silent.some((c) => c.closed));
  await within(5000, 'the server to close', server.close());
});

test('all connections together are capped, greeted ones included', async () => {
  const { server, path } = await serve({ maxConnections: 4, maxUngreeted: 2, helloTimeoutMs: 60_000 });
  const clients = [];
  for (let i = 0; i < 4; i++) clients.push(await greeted(path));
  await refused(path, /too many connections \(at most 4\)/);
  clients[0]!.socket.destroy();
  await clients[0]!.close();
  // The room is back once drainguard has seen the close; a retry after the refusal finds it.
  for (let attempt = 1; ; attempt++) {
    const c = await connect(path);
    c.send(HELLO);
    const first = await firstAnswer(c);
    if (first.type === 'welcome') break;
    assert.ok(attempt < 100, 'refused 100 times after a client left');
    await c.close();
  }
  await within(5000, 'the server to close', server.close());
});

test('no hello within the deadline: error and closed, a half line too; a greeted client stays', async () => {
  const { server, path } = await serve({ maxConnections: 10, maxUngreeted: 5, helloTimeoutMs: 300 });
  const hello = await greeted(path);
  const silent = await connect(path);
  const halfLine = await connect(path);
  halfLine.send('{"type":"hello","protocol":1,'.padEnd(60_000, ' '));
  for (const c of [silent, halfLine]) {
    const error = await c.message('error', 5000);
    assert.match(String(error.message), /^DG_PROTOCOL_HELLO_TIMEOUT: no hello within 300 ms/);
    await c.close();
  }
  // The greeted client was not cut: it is still told to drain.
  tellDrain(server, Date.now() + 5000);
  await hello.message('drain');
  assert.not.ok(hello.closed);
  await within(5000, 'the server to close', server.close());
});

test('refusals and protocol errors are logged at a bounded rate, each line counting what it left out', async () => {
  const { server, path, logs } = await serve({ maxConnections: 100, maxUngreeted: 1, helloTimeoutMs: 60_000 });
  for (let i = 0; i < 40; i++) {
    const c = await greeted(path);
    c.send('not json\n');
    await c.message('error');
    await c.close();
  }
  const holder = await connect(path);
  for (let i = 0; i < 40; i++) await refused(path, /not said hello/);
  const refusedLines = logs.filter((l) => l.msg === 'drain socket connection refused');
  const errorLines = logs.filter((l) => l.msg === 'protocol error, closing the connection');
  assert.equal(refusedLines.length, 1, JSON.stringify(refusedLines));
  assert.equal(errorLines.length, 1, JSON.stringify(errorLines));
  assert.match(String(refusedLines[0]!.reason), /DG_PROTOCOL_BUSY/);
  holder.socket.destroy();
  await within(5000, 'the server to close', server.close());
});

test.run();
