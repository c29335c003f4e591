// Drain protocol, version 1: UTF-8 JSON objects, one per line.

import { DrainguardError, type ProtocolErrorCode } from '../errors.ts';

export const PROTOCOL_VERSION = 1;
/** Longest line accepted, in bytes, newline excluded. */
export const MAX_LINE_BYTES = 64 * 1024;

export type ClientMessage =
  | { type: 'hello'; protocol: number; name?: string; pid?: number }
  | { type: 'inflight'; count: number }
  | { type: 'drained' }
  // Extension: the first and only message of a control connection (drainguard prestop).
  | { type: 'request-drain'; protocol: number; source?: string };

export type ServerMessage =
  { type: 'welcome'; protocol: number } | { type: 'drain'; deadline: string; remainingMs: number } | { type: 'error'; message: string };

export function encode(message: object): string {
  return `${JSON.stringify(message)}\n`;
}

/** A peer broke the protocol; sent as the `error` message, code first, then the connection is closed. */
export class ProtocolError extends DrainguardError {
  override name = 'ProtocolError';
  declare readonly code: ProtocolErrorCode;
  constructor(code: ProtocolErrorCode, message: string) {
    super(code, message);
  }
}

/** Below this, a partial line's buffer is kept for the next line; above, it is let go. */
const KEPT_BUFFER_BYTES = 4096;

/**
 * Splits a byte stream into lines, holding at most one partial line of at
 * most MAX_LINE_BYTES (a longer line is an error) in one buffer: a line that
 * arrives a byte at a time costs its bytes, not an object per byte. Lines are
 * handed over one by one, so the lines before a bad one are handled before the
 * error is thrown, however the stream happened to be cut into chunks. A
 * callback rather than a generator: a `drained` is on the way to the stop
 * signal, and an interpreted generator costs tens of microseconds there.
 */
export class LineSplitter {
  #pending = Buffer.alloc(0);
  #pendingBytes = 0;
  readonly #decoder = new TextDecoder('utf-8', { fatal: true });

  /** Calls `onLine` with each complete line in `chunk`; throws ProtocolError at an overlong line or invalid UTF-8. */
  push(chunk: Buffer, onLine: (line: string) => void): void {
    let start = 0;
    for (let nl = chunk.indexOf(10, start); nl !== -1; nl = chunk.indexOf(10, start)) {
      const piece = chunk.subarray(start, nl);
      start = nl + 1;
      let line: Uint8Array = piece;
      if (this.#pendingBytes > 0) {
        this.#append(piece);
        line = this.#pending.subarray(0, this.#pendingBytes);
      } else {
        this.#check(piece.length);
      }
      this.#pendingBytes = 0;
      if (this.#pending.length > KEPT_BUFFER_BYTES) this.#pending = Buffer.alloc(0);
      onLine(this.#decode(line));
    }
    if (start < chunk.length) this.#append(chunk.subarray(start));
  }

  /** Copies: the caller's chunk may be a slice of a larger pooled buffer. */
  #append(bytes: Buffer): void {
    const needed = this.#pendingBytes + bytes.length;
    this.#check(needed);
    if (needed > this.#pending.length) {
      const grown = Buffer.allocUnsafeSlow(Math.min(MAX_LINE_BYTES, Math.max(needed, 2 * this.#pending.length, 256)));
      this.#pending.copy(grown, 0, 0, this.#pendingBytes);
      this.#pending = grown;
    }
    bytes.copy(this.#pending, this.#pendingBytes);
    this.#pendingBytes = needed;
  }

  #check(bytes: number): void {
    if (bytes > MAX_LINE_BYTES) throw new ProtocolError('DG_PROTOCOL_LINE', `line longer than ${MAX_LINE_BYTES} bytes`);
  }

  #decode(bytes: Uint8Array): string {
    try {
      return this.#decoder.decode(bytes);
    } catch {
      throw new ProtocolError('DG_PROTOCOL_LINE', 'line is not valid UTF-8');
    }
  }
}

/** Parses one line into a message of a known shape, or returns undefined for an unknown type. */
export function parseClientMessage(line: string): ClientMessage | { type: 'unknown' } {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    throw new ProtocolError('DG_PROTOCOL_JSON', 'invalid JSON');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new ProtocolError('DG_PROTOCOL_MESSAGE', 'a message must be a JSON object');
  const m = value as Record<string, unknown>;
  switch (m.type) {
    case 'hello':
      if (!Number.isSafeInteger(m.protocol)) throw new ProtocolError('DG_PROTOCOL_MESSAGE', 'hello needs an integer "protocol"');
      return {
        type: 'hello',
        protocol: m.protocol as number,
        name: typeof m.name === 'string' ? m.name.slice(0, 256) : undefined,
        pid: Number.isSafeInteger(m.pid) ? (m.pid as number) : undefined,
      };
    case 'inflight':
      if (!Number.isSafeInteger(m.count) || (m.count as number) < 0)
        throw new ProtocolError('DG_PROTOCOL_MESSAGE', 'inflight needs a non-negative integer "count"');
      return { type: 'inflight', count: m.count as number };
    case 'drained':
      return { type: 'drained' };
    case 'request-drain':
      if (!Number.isSafeInteger(m.protocol)) throw new ProtocolError('DG_PROTOCOL_MESSAGE', 'request-drain needs an integer "protocol"');
      return {
        type: 'request-drain',
        protocol: m.protocol as number,
        source: typeof m.source === 'string' ? m.source.slice(0, 64) : undefined,
      };
    default:
      if (typeof m.type !== 'string') throw new ProtocolError('DG_PROTOCOL_MESSAGE', 'a message needs a string "type"');
      return { type: 'unknown' };
  }
}

export function parseServerMessage(line: string): ServerMessage | { type: 'unknown' } {
  const m = JSON.parse(line) as Record<string, unknown>;
  if (m?.type === 'welcome' || m?.type === 'error') return m as ServerMessage;
  if (m?.type === 'drain' && typeof m.deadline === 'string') return m as ServerMessage;
  return { type: 'unknown' };
}
