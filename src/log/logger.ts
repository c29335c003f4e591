// One JSON object per line on stderr, or `time LEVEL message key=value` on a terminal.

import { EventEmitter } from 'node:events';
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
  /**
   * Runs `act` and writes the lines logged meanwhile (by this logger and every
   * one made from it with `with`) only once it returns, in order, each with the
   * time it was logged at: what `act` must do at once (a write to a client, a
   * signal) waits for no formatting and no write to stderr.
   */
  hold<T>(act: () => T): T;
}

export interface LoggerOptions {
  readonly level?: LogLevel;
  /** Defaults to text when the stream is a terminal, JSON otherwise. */
  readonly format?: LogFormat;
  readonly stream?: { write(chunk: string): unknown; isTTY?: boolean };
  readonly now?: () => Date;
}

export function createLogger({ level = 'info', format, stream = process.stderr, now = () => new Date() }: LoggerOptions = {}): Logger {
  const min = RANK[level];
  const fmt = format ?? (stream.isTTY ? 'text' : 'json');
  // Logging is best effort: a stderr nobody reads any more (EPIPE) must not bring the supervisor down.
  if (stream instanceof EventEmitter && stream.listenerCount('error') === 0) stream.on('error', () => {});
  const line = (time: Date, lvl: LogLevel, msg: string, all: LogFields): string => {
    const iso = isoTime(time);
    return fmt === 'json' ? `${JSON.stringify({ time: iso, level: lvl, msg, ...serialisable(all) })}\n` : textLine(iso, lvl, msg, all);
  };
  // The lines logged inside hold(), formatted only when it ends and written in one piece: one
  // write wakes whoever reads stderr once, not once per line, while the operator is acting.
  let held: [time: Date, lvl: LogLevel, msg: string, bound: LogFields, fields: LogFields | undefined][] = [];
  let holding = 0;
  const hold = <T>(act: () => T): T => {
    holding++;
    try {
      return act();
    } finally {
      if (--holding === 0 && held.length > 0) {
        const lines = held;
        held = [];
        let text = '';
        for (const [time, lvl, msg, bound, fields] of lines) text += line(time, lvl, msg, { ...bound, ...fields });
        stream.write(text);
      }
    }
  };
  const make = (bound: LogFields): Logger => {
    const emit = (lvl: LogLevel, msg: string, fields?: LogFields) => {
      if (RANK[lvl] < min) return;
      if (holding > 0) held.push([now(), lvl, msg, bound, fields]);
      else stream.write(line(now(), lvl, msg, { ...bound, ...fields }));
    };
    return {
      debug: (m, f) => emit('debug', m, f),
      info: (m, f) => emit('info', m, f),
      warn: (m, f) => emit('warn', m, f),
      error: (m, f) => emit('error', m, f),
      with: (fields) => make({ ...bound, ...fields }),
      hold,
    };
  };
  return make({ component: 'drainguard' });
}

/**
 * Date#toISOString, built from the UTC fields: V8's own loads the time zone
 * (about 0.2 ms) on its first call, and the first call is the first line.
 */
function isoTime(time: Date): string {
  const ms = time.getUTCMilliseconds();
  return `${time.getUTCFullYear()}-${pad2(time.getUTCMonth() + 1)}-${pad2(time.getUTCDate())}T${pad2(time.getUTCHours())}:${pad2(time.getUTCMinutes())}:${pad2(time.getUTCSeconds())}.${ms < 100 ? (ms < 10 ? '00' : '0') : ''}${ms}Z`;
}

const pad2 = (n: number): string => (n < 10 ? `0${n}` : `${n}`);

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
export const silentLogger: Logger = { debug() {}, info() {}, warn() {}, error() {}, with: () => silentLogger, hold: (act) => act() };
