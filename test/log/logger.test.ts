// The logger's hold: what is logged inside comes out when the outermost hold
// returns (also when it throws), in order, each line with the time it was
// logged at, from every logger made with `with`, in one write. And a line's
// time, which the logger formats itself.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createLogger } from '../../src/log/logger.ts';

function capture() {
  const lines: Record<string, unknown>[] = [];
  const writes: string[] = [];
  let clock = 0;
  const write = (chunk: string) => {
    writes.push(chunk);
    for (const l of chunk.split('\n').slice(0, -1)) lines.push(JSON.parse(l) as Record<string, unknown>);
  };
  const logger = createLogger({ format: 'json', stream: { write }, now: () => new Date(Date.UTC(2026, 0, 1) + ++clock) });
  return { logger, lines, writes };
}

test('lines logged inside hold() are written when it returns, in order, with their own times', () => {
  const { logger, lines, writes } = capture();
  const child = logger.with({ part: 'server' });
  const seen: number[] = [];
  const result = logger.hold(() => {
    logger.info('first');
    logger.hold(() => child.warn('nested', { n: 1 }));
    seen.push(lines.length); // the nested hold returned, the outer one not yet
    logger.debug('below the level');
    logger.info('last');
    seen.push(lines.length);
    return 42;
  });
  assert.is(result, 42);
  assert.equal(seen, [0, 0]);
  assert.equal(lines.map((l) => l.msg), ['first', 'nested', 'last']);
  assert.equal(lines.map((l) => l.time), ['2026-01-01T00:00:00.001Z', '2026-01-01T00:00:00.002Z', '2026-01-01T00:00:00.003Z']);
  assert.is(lines[1]!.part, 'server');
  assert.is(lines[1]!.level, 'warn');
  assert.is(writes.length, 1, 'the held lines go out in one write: whoever reads stderr is woken once');
  logger.info('after');
  assert.is(lines.length, 4, 'outside a hold, a line is written at once');
});

test('a hold that throws still writes what was logged', () => {
  const { logger, lines } = capture();
  assert.throws(() =>
    logger.hold(() => {
      logger.error('before the throw');
      throw new Error('boom');
    }),
  /boom/);
  assert.equal(lines.map((l) => l.msg), ['before the throw']);
});

test('a line has its time as Date#toISOString gives it, in UTC, to the millisecond', () => {
  const times = [Date.UTC(2026, 0, 1), Date.UTC(2026, 8, 9, 7, 5, 3, 9), Date.UTC(2026, 11, 31, 23, 59, 59, 999), Date.UTC(2027, 1, 28, 12, 30, 0, 40), Date.UTC(2028, 1, 29, 0, 0, 0, 100)];
  const lines: string[] = [];
  let i = 0;
  const logger = createLogger({ format: 'json', stream: { write: (chunk) => lines.push(chunk) }, now: () => new Date(times[i++]!) });
  for (let n = 0; n < times.length; n++) logger.info('tick');
  assert.equal(
    lines.map((l) => (JSON.parse(l) as { time: string }).time),
    times.map((t) => new Date(t).toISOString()),
  );
});

test.run();
