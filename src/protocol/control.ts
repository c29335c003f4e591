// The control connection: `drainguard prestop` (protocol/control-client.ts)
// asks a sidecar's drain server for the drain with `request-drain`, and hears
// `drain-started`, then `drain-ended` (docs/protocol.md). This is drainguard's
// end of it; server.ts turns a connection into one when its first message is
// a request.

import type { Socket } from 'node:net';
import { ProtocolError, encode } from './messages.ts';

/** A `request-drain` received on a control connection (drainguard prestop). */
export interface DrainRequest {
  readonly source?: string;
}

/** The requester's end of a control connection, for answering a drain request. */
export interface ControlChannel {
  /** Sends one message; ignored once the requester has gone. */
  send(message: object): void;
  /** Sends a last message (if any) and closes the connection. */
  end(message?: object): void;
  /** Aborted when the requester hangs up. */
  readonly gone: AbortSignal;
}

/** The requester's end of `socket`, which has become a control connection. */
export function controlChannel(socket: Socket, gone: AbortSignal): ControlChannel {
  return {
    send: (message) => {
      if (!socket.destroyed && socket.writable) socket.write(encode(message));
    },
    end: (message) => {
      if (socket.destroyed || !socket.writable) return;
      if (message) socket.end(encode(message));
      else socket.end();
      socket.setTimeout(1000, () => socket.destroy());
    },
    gone,
  };
}

/** A drain as a control connection reports it. */
export interface ControlledDrain {
  /** Epoch ms. */
  readonly deadline: number;
  readonly clients: number;
  readonly joined: boolean;
  readonly ended: Promise<{ readonly outcome: string; readonly durationMs: number }>;
}

/** Answers a drain request: `drain-started` now, `drain-ended` (and the close) when it ends. */
export function answerDrainRequest(channel: ControlChannel, drain: ControlledDrain, now: number): void {
  channel.send({
    type: 'drain-started',
    deadline: new Date(drain.deadline).toISOString(),
    remainingMs: Math.max(0, Math.round(drain.deadline - now)),
    clients: drain.clients,
    joined: drain.joined,
  });
  void drain.ended.then((r) => channel.end({ type: 'drain-ended', outcome: r.outcome, durationMs: r.durationMs }));
}

/** What drainguard answers on a control connection (see docs/protocol.md). */
export type ControlReply =
  | { type: 'drain-started'; deadline: string; remainingMs: number; clients: number; joined: boolean }
  | { type: 'drain-ended'; outcome: string; durationMs: number }
  | { type: 'error'; message: string };

/** Parses drainguard's answer to a drain request; throws ProtocolError on anything else. */
export function parseControlReply(line: string): ControlReply | { type: 'unknown' } {
  let m: Record<string, unknown>;
  try {
    m = JSON.parse(line) as Record<string, unknown>;
  } catch {
    throw new ProtocolError('DG_PROTOCOL_JSON', 'invalid JSON from drainguard');
  }
  if (typeof m !== 'object' || m === null) throw new ProtocolError('DG_PROTOCOL_MESSAGE', 'a message must be a JSON object');
  switch (m.type) {
    case 'drain-started':
      return {
        type: 'drain-started',
        deadline: String(m.deadline),
        remainingMs: Number.isFinite(m.remainingMs) ? (m.remainingMs as number) : 0,
        clients: Number.isSafeInteger(m.clients) ? (m.clients as number) : 0,
        joined: m.joined === true,
      };
    case 'drain-ended':
      return { type: 'drain-ended', outcome: String(m.outcome), durationMs: Number.isFinite(m.durationMs) ? (m.durationMs as number) : 0 };
    case 'error':
      return { type: 'error', message: String(m.message) };
    default:
      return { type: 'unknown' };
  }
}
