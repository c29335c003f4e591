// The drain for operators that change nothing: scrape a controller-runtime
// operator's Prometheus endpoint until `controller_runtime_active_workers`
// sums to 0, so the stop signal does not land mid-reconcile. Best effort:
// intake is not stopped, so a reconcile may start right after an idle scrape.

import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { type Clock, abortAfter, systemClock } from '../clock.ts';
import { DrainguardError } from '../errors.ts';

/** The gauge controller-runtime keeps per controller: workers inside a reconcile. */
export const ACTIVE_WORKERS = 'controller_runtime_active_workers';

export interface ScrapeResponse {
  readonly status: number;
  readonly body: string;
}

/** How one scrape is made; the default is node:http/https. */
export type Fetch = (
  url: URL,
  options: { headers: Record<string, string>; ca?: string | Buffer; insecureSkipVerify?: boolean; signal: AbortSignal },
) => Promise<ScrapeResponse>;

export interface IdleOptions {
  /** The metrics URL: http on loopback, or https (controller-runtime's secure metrics). */
  readonly url: string | URL;
  /** Bearer token for secure metrics (the pod's ServiceAccount token). */
  readonly token?: string;
  /** CA of the metrics server's certificate. */
  readonly ca?: string | Buffer;
  /** Skip certificate verification (controller-runtime's self-signed default certificate, on loopback only). */
  readonly insecureSkipVerify?: boolean;
  /** Pause between the end of one scrape and the next. */
  readonly intervalMs: number;
  /** A scrape with no answer by then fails and the next one is made (default: none, up to the deadline). */
  readonly scrapeTimeoutMs?: number;
  /** When to give up (epoch ms). */
  readonly deadline: number;
  readonly signal?: AbortSignal;
  /** Called at each failed scrape (not at one the deadline or the signal cut short), numbered from 1. */
  readonly onFailure?: (error: string, scrape: number) => void;
  readonly fetch?: Fetch;
  /** What the deadline, the scrape timeout and the pause go by (the stop's clock); the wall clock by default. */
  readonly clock?: Clock;
}

export interface IdleResult {
  readonly outcome: 'idle' | 'deadline' | 'aborted';
  /** Scrapes made, successful or not. */
  readonly scrapes: number;
  /** Scrapes that failed (one the deadline cut short is not counted: the wait ran out, not the endpoint). */
  readonly failed: number;
  /** Active workers at the last successful scrape (undefined: none succeeded). */
  readonly lastActive?: number;
  /** Why the last failed scrape failed; else, when the deadline cut a scrape short, that it did. */
  readonly lastError?: string;
}

/** Resolves at the first scrape where the active workers sum to 0, at the deadline, or when aborted. */
export async function waitForIdle(options: IdleOptions): Promise<IdleResult> {
  const { intervalMs, scrapeTimeoutMs, deadline, signal, onFailure, fetch = defaultFetch, clock = systemClock } = options;
  const url = new URL(options.url);
  const headers: Record<string, string> = { accept: 'text/plain' };
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  let scrapes = 0;
  let failed = 0;
  let lastActive: number | undefined;
  let lastError: string | undefined;
  const result = (outcome: IdleResult['outcome']): IdleResult => ({ outcome, scrapes, failed, lastActive, lastError });

  for (;;) {
    if (signal?.aborted) return result('aborted');
    const left = deadline - clock.now();
    if (left <= 0) return result('deadline');
    const cutAtDeadline = abortAfter(clock, left);
    const giveUp = scrapeTimeoutMs !== undefined && scrapeTimeoutMs < left ? abortAfter(clock, scrapeTimeoutMs) : undefined;
    const attempt = AbortSignal.any([cutAtDeadline.signal, ...(giveUp ? [giveUp.signal] : []), ...(signal ? [signal] : [])]);
    scrapes++;
    try {
      const res = await fetch(url, { headers, ca: options.ca, insecureSkipVerify: options.insecureSkipVerify, signal: attempt });
      if (res.status !== 200) throw new DrainguardError('DG_IDLE_METRICS', `HTTP ${res.status}`);
      lastActive = activeWorkers(res.body);
      if (lastActive === 0) return result('idle');
    } catch (err) {
      if (signal?.aborted) return result('aborted');
      if (cutAtDeadline.signal.aborted) {
        // A scrape cut short by the deadline says less than the one before it.
        lastError ??= 'no answer before the deadline';
      } else {
        failed++;
        lastError = giveUp?.signal.aborted ? `no answer within ${scrapeTimeoutMs} ms` : err instanceof Error ? err.message : String(err);
        onFailure?.(lastError, scrapes);
      }
    } finally {
      cutAtDeadline.cancel();
      giveUp?.cancel();
    }
    await clock.sleep(Math.min(intervalMs, Math.max(0, deadline - clock.now())), signal);
  }
}

/**
 * The sum of `controller_runtime_active_workers` over its series in a
 * Prometheus text exposition; 0 when there is none (no controller runs, so
 * no reconcile does).
 */
export function activeWorkers(text: string): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(ACTIVE_WORKERS)) continue;
    const rest = line.slice(ACTIVE_WORKERS.length);
    if (rest[0] !== '{' && rest[0] !== ' ' && rest[0] !== '\t') continue; // a longer name
    const value = Number(afterLabels(rest).trim().split(/\s+/)[0]);
    if (!Number.isFinite(value)) throw new DrainguardError('DG_IDLE_METRICS', `unreadable sample: ${line}`);
    sum += value;
  }
  return sum;
}

/** What follows the label set `{...}` (label values may hold `}` and escapes). */
function afterLabels(rest: string): string {
  if (rest[0] !== '{') return rest;
  let quoted = false;
  for (let i = 1; i < rest.length; i++) {
    const c = rest[i];
    if (quoted && c === '\\') i++;
    else if (c === '"') quoted = !quoted;
    else if (c === '}' && !quoted) return rest.slice(i + 1);
  }
  throw new DrainguardError('DG_IDLE_METRICS', `unterminated labels: ${rest}`);
}

const defaultFetch: Fetch = (url, { headers, ca, insecureSkipVerify, signal }) =>
  new Promise((resolve, reject) => {
    const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const tls = url.protocol === 'https:' ? { ca, rejectUnauthorized: !insecureSkipVerify } : {};
    const req = request(url, { headers, signal, agent: false, ...tls }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
