// A Logger that keeps every line it is given, for tests that read what was said.

import type { LogFields, Logger } from '../../src/log/logger.ts';

export interface RecordedLine {
  readonly level: string;
  readonly msg: string;
  readonly fields?: LogFields;
}

/** Every line at every level, in order, in `lines`; `with` hands back the same recorder. */
export function recorder(): Logger & { lines: RecordedLine[] } {
  const lines: RecordedLine[] = [];
  const at = (level: string) => (msg: string, fields?: LogFields) => void lines.push({ level, msg, fields });
  const logger: Logger & { lines: RecordedLine[] } = {
    lines,
    debug: at('debug'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
    with: () => logger,
  };
  return logger;
}
