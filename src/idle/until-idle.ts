// DRAINGUARD_IDLE_METRICS in a drain: the wait for an operator that speaks no
// protocol, as the supervisors' drain calls it (supervisor/drain.ts).

import { readFileSync } from 'node:fs';
import { type Clock, systemClock } from '../clock.ts';
import type { LogFields, Logger } from '../log/logger.ts';
import { waitForIdle } from './idle-metrics.ts';
import { isLoopbackHost } from './loopback.ts';

/** The drain's wait for an operator that speaks no protocol (no client said hello). */
export interface IdleWait {
  /** Resolves once the operator's metrics say no reconcile runs, or with 'deadline' at `deadline`. */
  wait(deadline: number, signal: AbortSignal): Promise<'idle' | 'deadline' | 'aborted'>;
  /** How the wait went so far, for the `drain ended` line. */
  summary(): LogFields;
}

/** Tens of ms apart: a reconcile that ends is seen within one interval. */
const SCRAPE_INTERVAL_MS = 50;
/** controller-runtime answers within milliseconds: an address that swallows connections must not stay silent until the deadline. */
const SCRAPE_TIMEOUT_MS = 1000;
/** Where the kubelet mounts the pod's ServiceAccount token (controller-runtime's secure metrics want it). */
const POD_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

export interface UntilIdleOptions {
  /** What the drain's deadline is counted on (the stop procedure's clock); the wall clock by default. */
  readonly clock?: Clock;
  readonly tokenFile?: string;
}

/**
 * The wait for `url`. https: the pod's ServiceAccount token as bearer (when
 * mounted), and on loopback controller-runtime's self-signed certificate is
 * accepted (it keeps its CA in memory only). A failed scrape is told at once,
 * once per distinct error; the drain's last line tells how many failed.
 */
export function untilIdle(url: URL, logger: Logger, { clock = systemClock, tokenFile = POD_TOKEN }: UntilIdleOptions = {}): IdleWait {
  // Counted as they fail: the drain may end (its deadline) before the wait returns.
  let failed = 0;
  let lastError: string | undefined;
  const told = new Set<string>();
  return {
    async wait(deadline, signal) {
      const https = url.protocol === 'https:';
      let token: string | undefined;
      if (https) {
        try {
          token = readFileSync(tokenFile, 'utf8').trim();
        } catch {
          // Not in a pod, or no token mounted: try without.
        }
      }
      logger.info('no operator client: waiting until its metrics show no reconcile running', { url: url.href });
      const started = clock.now();
      const onFailure = (error: string, scrape: number): void => {
        failed++;
        lastError = error;
        if (told.has(error)) return;
        told.add(error);
        logger.warn("cannot read the operator's metrics: the drain waits on, for an idle scrape or the deadline", {
          url: url.href,
          error,
          scrape,
          fix:
            "point DRAINGUARD_IDLE_METRICS at the operator's metrics bind address (controller-runtime's --metrics-bind-address), " +
            'reachable from drainguard',
        });
      };
      const r = await waitForIdle({
        url,
        token,
        insecureSkipVerify: https && isLoopbackHost(url.hostname),
        intervalMs: SCRAPE_INTERVAL_MS,
        scrapeTimeoutMs: SCRAPE_TIMEOUT_MS,
        deadline,
        signal,
        onFailure,
        clock,
      });
      const fields = {
        scrapes: r.scrapes,
        failedScrapes: r.failed,
        afterMs: clock.now() - started,
        activeWorkers: r.lastActive,
        error: r.lastError,
      };
      if (r.outcome === 'idle') logger.info('operator idle: no reconcile running', fields);
      else if (r.outcome === 'deadline') logger.warn('operator still busy (or its metrics unreadable) at the drain deadline', fields);
      return r.outcome;
    },
    summary: () => ({ failedScrapes: failed, ...(lastError !== undefined && { lastScrapeError: lastError }) }),
  };
}
