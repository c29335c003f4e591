// boundedWarn with a clock the test moves: the first line at once, then one per interval counting the ones left out.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { LogFields, Logger } from '../../src/log/logger.ts';
import { boundedWarn } from '../../src/protocol/bounded-log.ts';

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

test('one line per interval; the next line counts the ones left out', () => {
  let now = 0;
  const { logger, lines } = capture();
  const warn = boundedWarn(logger, 'refused', { intervalMs: 1000, now: () => now });
  warn({ n: 1 });
  for (let i = 2; i <= 500; i++) {
    now += 1;
    warn({ n: i });
  }
  assert.equal(lines, [{ msg: 'refused', fields: { n: 1 } }]);
  now = 1000;
  warn({ n: 501 });
  assert.equal(lines[1], { msg: 'refused', fields: { n: 501, notLogged: 499 } });
  now = 5000;
  warn({ n: 502 });
  assert.equal(lines[2], { msg: 'refused', fields: { n: 502 } });
});

test.run();
