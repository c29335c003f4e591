// One JSON object per line on stderr, or `time LEVEL message key=value` on a terminal.

import { EventEmitter } from 'node:events';
import { type Clock, systemClock } from '../clock.ts';
import { describe } from '../errors.ts';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
export type LogFormat = 'json' | 'text';
export type LogFields = Record<string, unknown>;

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export interface Logger {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
  /** A logger that adds these fields to every line. */
  with(fields: LogFields): Logger;
}

export interface LoggerOptions {
  readonly level?: LogLevel;
  /** Defaults to text when the stream is a terminal, JSON otherwise. */
  readonly format?: LogFormat;
  readonly stream?: { write(chunk: string): unknown; isTTY?: boolean };
  /** What a line's time is read on (a supervising command's one clock); the wall clock by default. */
  readonly clock?: Pick<Clock, 'now'>;
}

export function createLogger({ level = 'info', format, stream = process.stderr, clock = systemClock }: LoggerOptions = {}): Logger {
  const min = RANK[level];
  const fmt = format ?? (stream.isTTY ? 'text' : 'json');
  // Logging is best effort: a stderr nobody reads any more (EPIPE) must not bring the supervisor down.
  if (stream instanceof EventEmitter && stream.listenerCount('error') === 0) stream.on('error', () => {});
  const line = (time: number, lvl: LogLevel, msg: string, all: LogFields): string => {
    const iso = isoTime(new Date(time));
    return fmt === 'json' ? `${JSON.stringify({ time: iso, level: lvl, msg, ...serialisable(all) })}\n` : textLine(iso, lvl, msg, all);
  };
  const make = (bound: LogFields): Logger => {
    const emit = (lvl: LogLevel, msg: string, fields?: LogFields) => {
      if (RANK[lvl] < min) return;
      stream.write(line(clock.now(), lvl, msg, { ...bound, ...fields }));
    };
    return {
      debug: (m, f) => emit('debug', m, f),
      info: (m, f) => emit('info', m, f),
      warn: (m, f) => emit('warn', m, f),
      error: (m, f) => emit('error', m, f),
      with: (fields) => make({ ...bound, ...fields }),
    };
  };
  return make({ component: 'drainguard' });
}

/**
 * Date#toISOString's text, from the UTC fields: toISOString reads the local time zone on its
 * first call, 0.2 ms of CPU in every start (docs/performance.md), for a time it shows in UTC.
 */
function isoTime(t: Date): string {
  const two = (n: number) => String(n).padStart(2, '0');
  const date = `${t.getUTCFullYear()}-${two(t.getUTCMonth() + 1)}-${two(t.getUTCDate())}`;
  const time = `${two(t.getUTCHours())}:${two(t.getUTCMinutes())}:${two(t.getUTCSeconds())}`;
  return `${date}T${time}.${String(t.getUTCMilliseconds()).padStart(3, '0')}Z`;
}

function serialisable(fields: LogFields): LogFields {
  const out: LogFields = {};
  // An error shows as the user sees it elsewhere: its code (errors.ts), then its message.
  for (const [k, v] of Object.entries(fields)) out[k] = v instanceof Error ? describe(v) : v;
  return out;
}

function textLine(time: string, level: LogLevel, msg: string, fields: LogFields): string {
  const rest = Object.entries(serialisable(fields))
    .filter(([k, v]) => k !== 'component' && v !== undefined)
    .map(([k, v]) => `${k}=${typeof v === 'string' && !/\s/.test(v) ? v : JSON.stringify(v)}`)
    .join(' ');
  return `${time} ${level.toUpperCase().padEnd(5)} ${msg}${rest ? ` ${rest}` : ''}\n`;
}

/** A logger that writes nothing, for library callers that pass none. */
export const silentLogger: Logger = { debug() {}, info() {}, warn() {}, error() {}, with: () => silentLogger };
