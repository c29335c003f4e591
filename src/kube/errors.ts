// Errors of Kubernetes API calls: each names the API server, the call and the object.

import { DrainguardError } from '../errors.ts';

/** The API server answered with an error status. */
export class KubeApiError extends DrainguardError {
  override name = 'KubeApiError';
  readonly status: number;
  /** The Status reason ("Conflict", "Forbidden", "NotFound", ...), when the server sent one. */
  readonly reason?: string;
  /** The server's own message. */
  readonly serverMessage: string;
  readonly retryAfterMs?: number;
  /** The answer alone, without the call: status, reason, the server's message. */
  readonly answer: string;

  constructor(call: string, server: string, status: number, reason: string | undefined, serverMessage: string, retryAfterMs?: number) {
    const answer = `${status}${reason ? ` ${reason}` : ''}: ${serverMessage}`;
    super('DG_KUBE_API', `${call} on ${server}: ${answer}`);
    this.answer = answer;
    this.status = status;
    this.reason = reason;
    this.serverMessage = serverMessage;
    this.retryAfterMs = retryAfterMs;
  }
}

/** No answer: connection refused or reset, DNS, TLS, or the call's timeout. */
export class KubeUnreachableError extends DrainguardError {
  override name = 'KubeUnreachableError';
  readonly timedOut: boolean;

  constructor(call: string, server: string, detail: string, options: { cause?: unknown; timedOut?: boolean } = {}) {
    super('DG_KUBE_UNREACHABLE', `${call}: cannot reach the Kubernetes API at ${server}: ${detail}`, { cause: options.cause });
    this.timedOut = options.timedOut ?? false;
  }
}

export const isStatus = (err: unknown, ...statuses: number[]): err is KubeApiError =>
  err instanceof KubeApiError && statuses.includes(err.status);
export const isNotFound = (err: unknown): err is KubeApiError => isStatus(err, 404);
export const isConflict = (err: unknown): err is KubeApiError => isStatus(err, 409);

/** Worth another try: the server or the network may do better in a moment. */
export function isTransient(err: unknown): boolean {
  if (err instanceof KubeUnreachableError) return true;
  return isStatus(err, 429, 500, 502, 503, 504);
}
