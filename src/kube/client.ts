// Calls to the Kubernetes API (found and signed as config.ts and
// credentials.ts say, sent by transport.ts): a timeout on every call, retries
// with backoff and jitter, and errors that name the server and the object.

import { type Clock, systemClock } from '../clock.ts';
import { type Logger, silentLogger } from '../log/logger.ts';
import type { ApiAccess } from './config.ts';
import { KubeApiError, KubeUnreachableError, isStatus, isTransient } from './errors.ts';
import { KubeCredentialsError } from './credentials.ts';
import { Transport } from './transport.ts';
import { type KubeList, type KubeObject, type ObjectRef, type ResourceRef, describe, objectPath, pathOf } from './objects.ts';
import { DEFAULT_RETRY, type RetryPolicy, backoff } from './retry.ts';

export type PatchType = 'application/merge-patch+json' | 'application/json-patch+json' | 'application/strategic-merge-patch+json';

/** One attempt, as seen from drainguard: for debug logs and measurements. */
export interface CallRecord {
  readonly method: string;
  readonly path: string;
  /** HTTP status, or 0 when there was no answer. */
  readonly status: number;
  readonly durationMs: number;
  readonly attempt: number;
}

export interface KubeClientOptions {
  readonly access: ApiAccess;
  /** Longest wait for one answer (default 10 s). */
  readonly timeoutMs?: number;
  readonly retry?: RetryPolicy;
  readonly random?: () => number;
  /** What the deadlines are read on and the backoff sleeps on; the wall clock by default. */
  readonly clock?: Clock;
  readonly logger?: Logger;
  readonly onCall?: (call: CallRecord) => void;
}

export interface CallOptions {
  readonly query?: Record<string, string | undefined>;
  readonly body?: unknown;
  readonly contentType?: string;
  /** Epoch ms: no attempt starts after it and none lasts past it. */
  readonly deadline?: number;
  readonly signal?: AbortSignal;
  /** false: one attempt only. */
  readonly retry?: boolean | Partial<RetryPolicy>;
  /** What the call is about, for messages (default: the path). */
  readonly what?: string;
  /** This call's longest wait for its answer, instead of the client's (a watch's whole stream). */
  readonly timeoutMs?: number;
  /** A watch: the answer's body, chunk by chunk as it comes. */
  readonly onData?: (chunk: string) => void;
}

/** One event of a watch. */
export interface WatchEvent<T extends KubeObject = KubeObject> {
  readonly type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
  readonly object: T;
}

export const DEFAULT_TIMEOUT_MS = 10_000;

/**
 * The servers each log was told about: the pod's link and the guard make a
 * client each, and the warning is said once per log. Keyed weakly by the
 * logger: it tells nothing to another log, and goes with it.
 */
const toldInsecure = new WeakMap<Logger, Set<string>>();

/** Plain http and insecure-skip-tls-verify are taken as kubectl takes them, but not silently: the token and every object go over them. */
function warnInsecure(log: Logger, access: ApiAccess): void {
  const insecure =
    new URL(access.server).protocol === 'http:'
      ? 'the Kubernetes API is reached over plain http: the token and every request go unencrypted'
      : access.transport.insecureSkipTlsVerify
        ? "insecure-skip-tls-verify is set: the Kubernetes API server's certificate is not checked"
        : undefined;
  if (insecure === undefined) return;
  const told = toldInsecure.get(log) ?? new Set<string>();
  toldInsecure.set(log, told);
  if (told.has(access.server)) return;
  told.add(access.server);
  log.warn(insecure, { server: access.server, source: access.source });
}

export class KubeClient {
  readonly server: string;
  /** The namespace of the kubeconfig context or of the in-cluster service account. */
  readonly namespace?: string;
  readonly #access: ApiAccess;
  readonly #transport: Transport;
  readonly #timeoutMs: number;
  readonly #retry: RetryPolicy;
  readonly #random: () => number;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #onCall?: (call: CallRecord) => void;

  constructor(options: KubeClientOptions) {
    this.#access = options.access;
    this.#transport = new Transport(options.access.transport);
    this.server = options.access.server;
    this.namespace = options.access.namespace;
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.#retry = options.retry ?? DEFAULT_RETRY;
    this.#random = options.random ?? Math.random;
    this.#clock = options.clock ?? systemClock;
    this.#log = options.logger ?? silentLogger;
    this.#onCall = options.onCall;
    warnInsecure(this.#log, options.access);
  }

  get<T extends KubeObject = KubeObject>(ref: ObjectRef, options: CallOptions = {}): Promise<T> {
    return this.request<T>('GET', objectPath(ref), { what: describe(ref), ...options });
  }

  list<T extends KubeObject = KubeObject>(r: ResourceRef, namespace: string | undefined, options: CallOptions = {}): Promise<KubeList<T>> {
    return this.request<KubeList<T>>('GET', pathOf(r, namespace), {
      what: `${r.resource}${namespace ? ` in namespace ${namespace}` : ''}`,
      ...options,
    });
  }

  create<T extends KubeObject = KubeObject>(
    r: ResourceRef,
    namespace: string | undefined,
    body: KubeObject,
    options: CallOptions = {},
  ): Promise<T> {
    const what = `${r.kind.toLowerCase()}/${namespace ? `${namespace}/` : ''}${body.metadata.name ?? ''}`;
    return this.request<T>('POST', pathOf(r, namespace), { what, body, ...options });
  }

  patch<T extends KubeObject = KubeObject>(ref: ObjectRef, patch: unknown, contentType: PatchType, options: CallOptions = {}): Promise<T> {
    return this.request<T>('PATCH', objectPath(ref), { what: describe(ref), body: patch, contentType, ...options });
  }

  delete(ref: ObjectRef, options: CallOptions = {}): Promise<unknown> {
    return this.request('DELETE', objectPath(ref), { what: describe(ref), ...options });
  }

  /**
   * Watches the collection (narrowed by `query`: fieldSelector, resourceVersion, timeoutSeconds)
   * and hands each event to `onEvent` as it comes; resolves when the server ends the stream
   * (after timeoutSeconds), rejects as request() does. One attempt: the caller resumes.
   */
  async watch<T extends KubeObject = KubeObject>(
    r: ResourceRef,
    namespace: string | undefined,
    query: Record<string, string | undefined>,
    onEvent: (event: WatchEvent<T>) => void,
    options: CallOptions = {},
  ): Promise<void> {
    const what = `watch ${r.resource}${namespace ? ` in namespace ${namespace}` : ''}`;
    const stop = new AbortController();
    let failure: unknown;
    let pending = '';
    const onData = (chunk: string) => {
      pending += chunk;
      for (let nl = pending.indexOf('\n'); nl !== -1 && failure === undefined; nl = pending.indexOf('\n')) {
        const line = pending.slice(0, nl).trim();
        pending = pending.slice(nl + 1);
        if (line === '') continue;
        try {
          const event = JSON.parse(line) as WatchEvent<T>;
          // An error in the stream (410 Expired: the resourceVersion is too old) ends the watch as an error status.
          if (event.type === 'ERROR') {
            const status = event.object as unknown as { code?: number; reason?: string; message?: string };
            throw new KubeApiError(`GET ${what}`, this.server, status.code ?? 500, status.reason, status.message ?? 'watch error');
          }
          onEvent(event);
        } catch (err) {
          failure = err;
          stop.abort();
        }
      }
    };
    const seconds = Number(query.timeoutSeconds ?? 0);
    try {
      await this.request('GET', pathOf(r, namespace), {
        what,
        ...options,
        signal: options.signal ? AbortSignal.any([options.signal, stop.signal]) : stop.signal,
        query: { ...query, watch: 'true' },
        retry: false,
        // The server ends the stream after timeoutSeconds; a connection silent for long after that is dead.
        timeoutMs: seconds > 0 ? seconds * 1000 + this.#timeoutMs : undefined,
        onData,
      });
    } catch (err) {
      if (failure === undefined) throw err;
    }
    if (failure !== undefined) throw failure;
  }

  /** One API call with retries of transient failures (network, timeouts, 429, 5xx). */
  async request<T>(method: string, path: string, options: CallOptions = {}): Promise<T> {
    const policy: RetryPolicy =
      options.retry === false
        ? { ...this.#retry, maxAttempts: 1 }
        : { ...this.#retry, ...(typeof options.retry === 'object' ? options.retry : {}) };
    const call = `${method} ${options.what ?? path}`;
    let refreshed = false;
    for (let attempt = 1; ; attempt++) {
      try {
        return (await this.#attempt(method, path, options, call, attempt)) as T;
      } catch (err) {
        // A 401 may be a token that expired or was rotated since it was read: once more with a fresh one, as client-go does.
        if (isStatus(err, 401) && !refreshed && this.#access.credentials.refresh()) {
          refreshed = true;
          continue;
        }
        if (!isTransient(err) || attempt >= policy.maxAttempts || options.signal?.aborted) throw err;
        const wait = (err as KubeApiError).retryAfterMs ?? backoff(policy, attempt, this.#random);
        if (options.deadline !== undefined && this.#clock.now() + wait >= options.deadline) throw err;
        this.#log.debug('Kubernetes API call failed, retrying', { call, attempt, retryInMs: wait, error: (err as Error).message });
        await this.#clock.sleep(wait, options.signal);
      }
    }
  }

  async #attempt(method: string, path: string, options: CallOptions, call: string, attempt: number): Promise<unknown> {
    const remaining = options.deadline === undefined ? Infinity : options.deadline - this.#clock.now();
    if (remaining <= 0) throw new KubeUnreachableError(call, this.server, 'no time left before the deadline', { timedOut: true });
    const timeoutMs = Math.min(options.timeoutMs ?? this.#timeoutMs, remaining);
    const url = new URL(path, this.server.endsWith('/') ? this.server : `${this.server}/`);
    url.pathname = `${new URL(this.server).pathname.replace(/\/$/, '')}${path}`;
    for (const [k, v] of Object.entries(options.query ?? {})) if (v !== undefined) url.searchParams.set(k, v);

    const headers: Record<string, string> = { accept: 'application/json' };
    const body = options.body === undefined ? undefined : JSON.stringify(options.body);
    if (body !== undefined) headers['content-type'] = options.contentType ?? 'application/json';
    const timeout = AbortSignal.timeout(Math.max(0, Math.floor(timeoutMs)));
    const signal = options.signal ? AbortSignal.any([timeout, options.signal]) : timeout;
    const started = performance.now();
    const record = (status: number) => {
      const call: CallRecord = {
        method,
        path: url.pathname + url.search,
        status,
        durationMs: Math.round((performance.now() - started) * 10) / 10,
        attempt,
      };
      this.#log.debug('Kubernetes API call', { ...call });
      this.#onCall?.(call);
    };
    const credential = await this.#access.credentials.current().catch((err: Error) => {
      throw new KubeCredentialsError(`${call} on ${this.server}: ${err.message}`, { cause: err });
    });
    let status = 0;
    let text: string;
    let resHeaders: Record<string, string | string[] | undefined>;
    try {
      ({
        status,
        headers: resHeaders,
        text,
      } = await this.#transport.send({ method, url, headers, body, signal, credential, onData: options.onData }));
    } catch (err) {
      record(status);
      if (timeout.aborted)
        throw new KubeUnreachableError(call, this.server, `no answer within ${timeoutMs} ms`, { cause: err, timedOut: true });
      if (options.signal?.aborted) throw new KubeUnreachableError(call, this.server, 'cancelled', { cause: err });
      throw new KubeUnreachableError(call, this.server, networkDetail(err), { cause: err });
    }
    record(status);
    let answer: any;
    try {
      answer = text === '' ? undefined : JSON.parse(text);
    } catch {
      answer = text;
    }
    if (status >= 200 && status < 300) return answer;
    const message = typeof answer === 'object' && answer?.message ? String(answer.message) : String(text).slice(0, 500) || '(no message)';
    const retryAfter = Number(resHeaders['retry-after']);
    throw new KubeApiError(
      call,
      this.server,
      status,
      answer?.reason,
      message,
      status === 429 && retryAfter > 0 ? retryAfter * 1000 : undefined,
    );
  }
}

function networkDetail(err: unknown): string {
  let e = err as { code?: string; message?: string; cause?: unknown } | undefined;
  const parts: string[] = [];
  for (let i = 0; e && i < 4; i++, e = e.cause as typeof e) {
    const piece = e.code ?? e.message;
    if (piece && !parts.includes(piece)) parts.push(piece);
  }
  return parts.join(': ') || String(err);
}
