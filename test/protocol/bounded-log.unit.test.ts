// boundedWarn with a clock the test moves: the first line at once, then one per interval counting the ones left out.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { LogFields, Logger } from '../../src/log/logger.ts';
import { BOUNDED_LOG_INTERVAL_MS, boundedWarn } from '../../src/protocol/bounded-log.ts';
import { FakeClock } from '../support/fake-clock.ts';

function capture(): { logger: Logger; lines: { msg: string; fields?: LogFields }[] } {
  const lines: { msg: string; fields?: LogFields }[] = [];
  const logger: Logger = {
    debug: () => {},
    info: () => {},
    warn: (msg, fields) => lines.push({ msg, fields }),
    error: () => {},
    with: () => logger,
  };
  return { logger, lines };
}

test('one line per interval; the next line counts the ones left out', async () => {
  const clock = new FakeClock();
  const { logger, lines } = capture();
  const warn = boundedWarn(logger, 'refused', { intervalMs: 1000, clock });
  warn({ n: 1 });
  // 499 more within the interval, in bursts 100 ms apart.
  for (let i = 2; i <= 500; i++) {
    if (i % 100 === 0) await clock.advance(100);
    warn({ n: i });
  }
  assert.equal(lines, [{ msg: 'refused', fields: { n: 1 } }]);
  await clock.advance(500);
  warn({ n: 501 });
  assert.equal(lines[1], { msg: 'refused', fields: { n: 501, notLogged: 499 } });
  await clock.advance(4000);
  warn({ n: 502 });
  assert.equal(lines[2], { msg: 'refused', fields: { n: 502 } });
});

test('by default one line per 10 s: a warning 1 ms short of it is left out', async () => {
  const clock = new FakeClock();
  const { logger, lines } = capture();
  const warn = boundedWarn(logger, 'refused', { clock });
  warn({ n: 1 });
  await clock.advance(BOUNDED_LOG_INTERVAL_MS - 1);
  warn({ n: 2 });
  await clock.advance(1);
  warn({ n: 3 });
  assert.equal(lines, [
    { msg: 'refused', fields: { n: 1 } },
    { msg: 'refused', fields: { n: 3, notLogged: 1 } },
  ]);
  assert.is(BOUNDED_LOG_INTERVAL_MS, 10_000);
});

test.run();
