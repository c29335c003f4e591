// A toy operator that drains with drainguard, the TypeScript twin of
// clients/go/example. N workers run "reconciles" of random length while intake
// is open; on a drain they stop taking work and finish what is in flight; on
// SIGTERM or SIGINT whatever still runs is interrupted and the process exits 0.
//
// Lines on stdout:  ready | reconcile start ID | reconcile done ID |
//   reconcile interrupted ID | drain received | drained sent | exit
//
//   drainguard run -- node examples/demo-operator.ts --workers 3 --min 200ms --max 2s
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { parseDuration } from '../src/config/duration.ts';
import { DrainClient } from '../src/protocol/client.ts';

const { values } = parseArgs({
  options: { workers: { type: 'string', default: '3' }, min: { type: 'string', default: '200ms' }, max: { type: 'string', default: '2s' } },
});
const workers = Number(values.workers);
const min = parseDuration(values.min!) ?? NaN;
const max = parseDuration(values.max!) ?? NaN;
if (!(workers >= 1) || !(min >= 0) || !(max >= min)) {
  process.stderr.write('demo-operator: need --workers >= 1 and 0 <= --min <= --max\n');
  process.exit(2);
}

const say = (line: string) => process.stdout.write(`${line}\n`);
const stop = new AbortController(); // SIGTERM: interrupt everything
const dg = new DrainClient({ name: 'demo-operator', onError: (err) => process.stderr.write(`demo-operator: ${err.message}\n`) });
const running = new Set<Promise<void>>();

async function shutdown(): Promise<void> {
  stop.abort();
  await Promise.all(running);
  dg.close();
  say('exit');
  process.exit(0);
}
process.once('SIGTERM', shutdown);
process.once('SIGINT', shutdown);

dg.draining.addEventListener('abort', () => {
  say('drain received');
  void dg.drainedSent().then(() => say('drained sent'));
});

await dg.ready();
say('ready');

let lastId = 0;
async function reconcile(id: number, ms: number, deadline: AbortSignal): Promise<void> {
  say(`reconcile start ${id}`);
  try {
    await sleep(ms, undefined, { signal: AbortSignal.any([deadline, stop.signal]) });
    say(`reconcile done ${id}`);
  } catch {
    say(`reconcile interrupted ${id}`);
  }
}

async function worker(): Promise<void> {
  while (!stop.signal.aborted) {
    const done = dg.tryBegin(); // refused once the drain has started
    if (!done) return;
    const id = ++lastId;
    const work = reconcile(id, min + Math.random() * (max - min), dg.deadline).finally(done);
    running.add(work);
    await work;
    running.delete(work);
  }
}

for (let i = 0; i < workers; i++) void worker();
setInterval(() => {}, 1 << 30); // an operator runs until it is stopped
