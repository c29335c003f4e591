// A line's time, as the logger formats it.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createLogger } from '../../src/log/logger.ts';
import { FakeClock } from '../support/fake-clock.ts';

test("a line has its clock's time as Date#toISOString gives it, in UTC, to the millisecond", async () => {
  const times = [
    Date.UTC(2026, 0, 1),
    Date.UTC(2026, 8, 9, 7, 5, 3, 9),
    Date.UTC(2026, 11, 31, 23, 59, 59, 999),
    Date.UTC(2027, 1, 28, 12, 30, 0, 40),
    Date.UTC(2028, 1, 29, 0, 0, 0, 100),
  ];
  const lines: string[] = [];
  const clock = new FakeClock(times[0]);
  const logger = createLogger({ format: 'json', stream: { write: (chunk) => lines.push(chunk) }, clock });
  for (const t of times) {
    await clock.advance(t - clock.now());
    logger.info('tick');
  }
  assert.equal(
    lines.map((l) => (JSON.parse(l) as { time: string }).time),
    times.map((t) => new Date(t).toISOString()),
  );
});

test.run();
