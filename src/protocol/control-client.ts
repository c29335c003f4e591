// The requester's end of a control connection (drainguard prestop): ask the
// supervisor on the socket to drain and wait for the drain to end. Every wait
// here is bounded: a supervisor that is missing, refuses or stays silent makes
// this return a failure, never hang.

import { type Socket, connect } from 'node:net';
import { type Clock, systemClock } from '../clock.ts';
import type { FailureCode } from '../errors.ts';
import { type RetryPolicy, backoff } from '../kube/retry.ts';
import { parseControlReply } from './control.ts';
import { LineSplitter, PROTOCOL_VERSION, ProtocolError, encode } from './messages.ts';

/** How long a missing or refusing socket is retried: a sidecar may be restarting. */
export const CONNECT_RETRY_MS = 2000;
/** How long the supervisor has to answer the request once connected. */
export const ANSWER_TIMEOUT_MS = 5000;
/** Waited beyond the deadline the supervisor announced, for its answer to arrive. */
const ANNOUNCED_SLACK_MS = 2000;
const RETRYABLE = new Set(['ENOENT', 'ECONNREFUSED', 'EAGAIN']);
/** Between the connection attempts, until CONNECT_RETRY_MS: 50 ms doubling to 400 ms, with retry.ts's jitter. */
const CONNECT_RETRY: RetryPolicy = { baseDelayMs: 50, maxDelayMs: 400, maxAttempts: Infinity };

export interface PrestopRequestOptions {
  readonly socket: string;
  /** Gives up waiting this long after the start; default: the deadline the supervisor announces. */
  readonly timeoutMs?: number;
  /** Free text the supervisor logs (who asked). */
  readonly source?: string;
  /** What the deadlines and the retries go by; the wall clock by default. */
  readonly clock?: Clock;
}

export type PrestopResult =
  /** The drain ended (whatever its outcome), or this side's own deadline passed while it ran. */
  | {
      readonly ok: true;
      readonly outcome: string;
      readonly durationMs?: number;
      readonly clients?: number;
      readonly joined?: boolean;
      readonly gaveUp: boolean;
    }
  /** The supervisor could not be reached, refused, or went away: the message says which and what to check. */
  | { readonly ok: false; readonly code: FailureCode; readonly message: string };

export function askForDrain({
  socket: path,
  timeoutMs,
  source = `prestop pid ${process.pid}`,
  clock = systemClock,
}: PrestopRequestOptions): Promise<PrestopResult> {
  const start = clock.now();
  const hardDeadline = timeoutMs === undefined ? Infinity : start + timeoutMs;
  const connectUntil = Math.min(hardDeadline, start + CONNECT_RETRY_MS);

  return new Promise<PrestopResult>((resolve) => {
    let socket: Socket | undefined;
    let cancelTimer = (): void => {};
    let cancelRetry = (): void => {};
    let started: { clients: number; joined: boolean } | undefined;
    let settled = false;
    let failures = 0;

    const finish = (result: PrestopResult) => {
      if (settled) return;
      settled = true;
      cancelTimer();
      cancelRetry();
      socket?.destroy();
      resolve(result);
    };
    const waitUntil = (at: number, onTimeout: () => PrestopResult) => {
      cancelTimer();
      if (at === Infinity) return;
      cancelTimer = clock.after(at - clock.now(), () => finish(onTimeout()));
    };
    const fail = (code: FailureCode, message: string): PrestopResult => ({ ok: false, code, message });

    const attempt = () => {
      const s = connect(path);
      socket = s;
      let connected = false;
      s.once('connect', () => {
        connected = true;
        s.write(encode({ type: 'request-drain', protocol: PROTOCOL_VERSION, source }));
        waitUntil(Math.min(hardDeadline, clock.now() + ANSWER_TIMEOUT_MS), () =>
          fail(
            'DG_PRESTOP_NO_ANSWER',
            `the drainguard at ${path} accepted the connection but did not answer within ` +
              `${Math.round((Math.min(hardDeadline, clock.now()) - start) / 100) / 10}s`,
          ),
        );
      });
      const splitter = new LineSplitter();
      s.on('data', (chunk: Buffer) => {
        try {
          splitter.push(chunk, (line) => {
            const reply = parseControlReply(line);
            if (reply.type === 'drain-started') {
              started = { clients: reply.clients, joined: reply.joined };
              waitUntil(Math.min(hardDeadline, clock.now() + Math.max(0, reply.remainingMs) + ANNOUNCED_SLACK_MS), () => ({
                ok: true,
                outcome: 'deadline',
                ...started,
                gaveUp: true,
              }));
            } else if (reply.type === 'drain-ended') {
              finish({ ok: true, outcome: reply.outcome, durationMs: reply.durationMs, ...started, gaveUp: false });
            } else if (reply.type === 'error') {
              const old = /first message must be hello/.test(reply.message)
                ? ' (this drainguard predates drain requests: upgrade the sidecar)'
                : '';
              // The supervisor's code (since errors.ts) goes last: this failure's own code leads.
              const [, wireCode, text] = /^(?:(DG_[A-Z_]+): )?(.*)$/s.exec(reply.message)!;
              finish(
                fail(
                  'DG_PRESTOP_REFUSED',
                  `the drainguard at ${path} refused the drain request: ${text}${old}${wireCode ? ` (${wireCode})` : ''}`,
                ),
              );
            }
          });
        } catch (err) {
          if (!(err instanceof ProtocolError)) throw err;
          finish(fail('DG_PRESTOP_PROTOCOL', `the drainguard at ${path} sent something that is not the drain protocol: ${err.message}`));
        }
      });
      s.on('error', (err: NodeJS.ErrnoException) => {
        if (settled) return;
        const delay = backoff(CONNECT_RETRY, ++failures);
        if (!connected && RETRYABLE.has(err.code ?? '') && clock.now() + delay < connectUntil) {
          cancelRetry = clock.after(delay, attempt);
          return;
        }
        finish(
          fail(
            'DG_PRESTOP_UNREACHABLE',
            !connected
              ? unreachable(path, err)
              : `lost the connection to the drainguard at ${path} before the drain ended: ${err.code ?? err.message}`,
          ),
        );
      });
      s.on('close', () => {
        // After an error the retry or the failure is already under way.
        if (settled || s.errored) return;
        finish(fail('DG_PRESTOP_UNREACHABLE', `the drainguard at ${path} closed the connection before the drain ended (did it exit?)`));
      });
    };
    waitUntil(hardDeadline, () =>
      started
        ? { ok: true, outcome: 'deadline', ...started, gaveUp: true }
        : fail('DG_PRESTOP_NO_ANSWER', `no answer from the drainguard at ${path} before the deadline`),
    );
    attempt();
  });
}

function unreachable(path: string, err: NodeJS.ErrnoException): string {
  const why: Record<string, string> = {
    ENOENT:
      `no socket at ${path}: is the drainguard sidecar running, ` +
      `and is its socket volume mounted in this container at ${path.replace(/\/[^/]*$/, '') || '/'}?`,
    ECONNREFUSED: `nothing listens on ${path}: the drainguard sidecar is not running (or left a stale socket)`,
    EACCES: `permission denied on ${path}: the socket is private to the sidecar's user; run this container with the same runAsUser`,
    ENOTSOCK: `${path} is not a socket`,
  };
  return `cannot reach the drainguard sidecar: ${why[err.code ?? ''] ?? `${err.code ?? ''} ${err.message}`.trim()}`;
}
