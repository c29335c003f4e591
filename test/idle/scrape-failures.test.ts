// A DRAINGUARD_IDLE_METRICS that cannot be read, as users get it wrong: the
// built executable warns at the first failed scrape (once per distinct error)
// and `drain ended` says how many failed and why. The endpoints: nothing
// listening, a name that does not resolve (in a network namespace of its own,
// so that no lookup leaves the machine), and a stand-in of controller-runtime's
// endpoint (metrics-stand-in.ts) that fails, then answers, or stays silent.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { EXE, type LogLine, NODE, Proc, fixture } from '../support/proc.ts';
import { freePort } from '../support/free-port.ts';
import { MetricsStandIn } from './metrics-stand-in.ts';

const WARNING = "cannot read the operator's metrics: the drain waits on, for an idle scrape or the deadline";

/** drainguard run with an operator that speaks no protocol, stopped at once; resolves with its log once it exited. */
async function stopWith(url: string, drainTimeout: string, prefix: string[] = []): Promise<LogLine[]> {
  const args = ['run', '--idle-metrics', url, '--drain-timeout', drainTimeout, '--', NODE, fixture('operator.ts')];
  const p =
    prefix.length > 0
      ? new Proc(prefix[0]!, [...prefix.slice(1), EXE, ...args], { FIXTURE_CONNECT: 'never' })
      : new Proc(EXE, args, { FIXTURE_CONNECT: 'never' });
  await p.line('ready');
  p.kill('SIGTERM');
  assert.equal((await p.exit()).code, 0);
  return p.logs();
}

const warnings = (logs: LogLine[]) => logs.filter((l) => l.msg === WARNING);
const ended = (logs: LogLine[]) => logs.find((l) => l.msg === 'drain ended')!;

test('nothing listening: one warning at the first scrape, and drain ended counts the refused scrapes', async () => {
  const port = await freePort();
  const logs = await stopWith(`http://127.0.0.1:${port}/metrics`, '1s');
  const told = warnings(logs);
  assert.is(told.length, 1, JSON.stringify(told));
  assert.is(told[0]!.level, 'warn');
  assert.is(told[0]!.scrape, 1);
  assert.is(told[0]!.error, `connect ECONNREFUSED 127.0.0.1:${port}`);
  assert.is(told[0]!.url, `http://127.0.0.1:${port}/metrics`);
  assert.match(String(told[0]!.fix), /DRAINGUARD_IDLE_METRICS/);
  const end = ended(logs);
  assert.is(end.outcome, 'deadline');
  assert.ok((end.failedScrapes as number) > 1, JSON.stringify(end));
  assert.is(end.lastScrapeError, `connect ECONNREFUSED 127.0.0.1:${port}`);
  // Told while the drain waited, not at its end.
  assert.ok(logs.indexOf(told[0]!) < logs.indexOf(end));
  assert.ok(Date.parse(end.time as string) - Date.parse(told[0]!.time as string) >= 500, `${told[0]!.time} .. ${end.time}`);
});

test('http://wrong:8080/metrics, a name that does not resolve: the lookup error is told at the first scrape', async () => {
  const logs = await stopWith('http://wrong:8080/metrics', '1s', ['unshare', '--net', '--']);
  const told = warnings(logs);
  assert.is(told.length, 1, JSON.stringify(told));
  assert.is(told[0]!.scrape, 1);
  assert.match(String(told[0]!.error), /^getaddrinfo (EAI_AGAIN|ENOTFOUND) wrong$/);
  const end = ended(logs);
  assert.is(end.outcome, 'deadline');
  assert.ok((end.failedScrapes as number) > 1, JSON.stringify(end));
  assert.is(end.lastScrapeError, told[0]!.error);
});

test('errors that change: each distinct one told once, drain ended keeps the last after the endpoint recovered', async () => {
  const s = await new MetricsStandIn([{ status: 503 }, { status: 503 }, { status: 503 }, { status: 404 }, { active: 1 }]).listen();
  try {
    const logs = await stopWith(s.url, '1500ms');
    assert.ok(s.scrapes.length > 5, `${s.scrapes.length} scrapes`);
    assert.equal(
      warnings(logs).map((l) => [l.error, l.scrape]),
      [
        ['HTTP 503', 1],
        ['HTTP 404', 4],
      ],
    );
    const end = ended(logs);
    assert.is(end.outcome, 'deadline');
    assert.is(end.failedScrapes, 4);
    assert.is(end.lastScrapeError, 'HTTP 404');
  } finally {
    await s.close();
  }
});

test('an endpoint that accepts and never answers: told after the scrape timeout, not at the deadline', async () => {
  const s = await new MetricsStandIn(['silent']).listen();
  try {
    const logs = await stopWith(s.url, '2500ms');
    const told = warnings(logs);
    assert.ok(told.length === 1, JSON.stringify(told));
    assert.is(told[0]!.error, 'no answer within 1000 ms');
    assert.is(told[0]!.scrape, 1);
    const end = ended(logs);
    assert.is(end.outcome, 'deadline');
    assert.ok((end.failedScrapes as number) >= 1);
    assert.is(end.lastScrapeError, 'no answer within 1000 ms');
    assert.ok(logs.indexOf(told[0]!) < logs.indexOf(end));
  } finally {
    await s.close();
  }
});

test('a readable endpoint: no warning, and drain ended says no scrape failed', async () => {
  const s = await new MetricsStandIn([{ active: 1 }, { active: 0 }]).listen();
  try {
    const logs = await stopWith(s.url, '5s');
    assert.equal(warnings(logs), []);
    const end = ended(logs);
    assert.is(end.outcome, 'idle');
    assert.is(end.failedScrapes, 0);
    assert.is(end.lastScrapeError, undefined);
  } finally {
    await s.close();
  }
});

test.run();
