// drainguard's Prometheus series, in a registry of their own. Imported only
// when the HTTP listener is on: prom-client is not loaded otherwise.

import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { ClientInfo } from '../protocol/server.ts';
import type { DrainOutcome, DrainSource, SupervisorObserver } from '../supervisor/observer.ts';
import type { GuardReport } from '../guard/guard.ts';

const OUTCOMES: readonly DrainOutcome[] = ['drained', 'disconnected', 'deadline', 'no-client', 'idle', 'cut-short', 'child-exited'];
const SOURCES: readonly DrainSource[] = ['signal', 'socket', 'http', 'eviction'];
export type PrestopRefusal = 'missing-token' | 'wrong-token';
const REFUSALS: readonly PrestopRefusal[] = ['missing-token', 'wrong-token'];

export interface MetricsOptions {
  /** The operator clients connected now (read at scrape time). */
  readonly clients: () => readonly ClientInfo[];
  readonly guard?: () => GuardReport;
}

export interface Metrics {
  /** Feeds the drain counters and the duration histogram. */
  readonly observer: SupervisorObserver;
  prestopRefused(reason: PrestopRefusal): void;
  /** The exposition in the Prometheus text format. */
  text(): Promise<string>;
  readonly contentType: string;
}

export function createMetrics({ clients, guard }: MetricsOptions): Metrics {
  const registry = new Registry();
  const registers = [registry];
  const greeted = () => clients().filter((c) => c.greeted);

  const drains = new Counter({
    name: 'drainguard_drains_total',
    help: 'Drains by how they ended: drained, disconnected, deadline, no-client, cut-short, child-exited.',
    labelNames: ['outcome'],
    registers,
  });
  const duration = new Histogram({
    name: 'drainguard_drain_duration_seconds',
    help: 'Time from the start of a drain to its end.',
    buckets: [0.1, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300],
    registers,
  });
  const requests = new Counter({
    name: 'drainguard_drain_requests_total',
    help: 'Requests to drain, by source: signal (SIGTERM/SIGINT), socket (drainguard prestop), http (httpGet preStop).',
    labelNames: ['source'],
    registers,
  });
  const refused = new Counter({
    name: 'drainguard_prestop_refused_total',
    help: 'HTTP preStop requests refused for a missing or wrong token; none of them started a drain.',
    labelNames: ['reason'],
    registers,
  });
  new Gauge({
    name: 'drainguard_clients_connected',
    help: 'Operator clients connected to the drain socket (said hello).',
    registers,
    collect() {
      this.set(greeted().length);
    },
  });
  new Gauge({
    name: 'drainguard_work_inflight',
    help: 'Work in flight as reported by the connected clients (sum of their inflight counts).',
    registers,
    collect() {
      this.set(greeted().reduce((sum, c) => sum + c.inflight, 0));
    },
  });
  new Gauge({
    name: 'drainguard_guard_objects_held',
    help: "Guarded objects that carry this pod's finalizer.",
    registers,
    collect() {
      this.set(guard?.().objectsHeld ?? 0);
    },
  });
  // The guard counts its errors itself; the counter follows that total.
  let errorsSeen = 0;
  new Counter({
    name: 'drainguard_guard_errors_total',
    help: 'Failed Kubernetes API calls of the guard.',
    registers,
    collect() {
      const total = guard?.().errors ?? 0;
      if (total > errorsSeen) this.inc(total - errorsSeen);
      errorsSeen = Math.max(errorsSeen, total);
    },
  });
  // The hold's figures, only when it is on (its report is part of the guard's).
  if (guard?.().hold) {
    new Gauge({
      name: 'drainguard_hold_held',
      help: "1 while this pod's finalizer holds its Deployment (the hold), else 0.",
      registers,
      collect() {
        this.set(guard().hold?.held ? 1 : 0);
      },
    });
    const seen: Record<string, number> = {};
    const released = new Counter({
      name: 'drainguard_hold_released_total',
      help: 'Early releases of the hold, by reason: finalized, timeout, foreground, orphan.',
      labelNames: ['reason'],
      registers,
      collect() {
        for (const [reason, total] of Object.entries(guard().hold?.released ?? {})) {
          if (total > (seen[reason] ?? 0)) this.inc({ reason }, total - (seen[reason] ?? 0));
          seen[reason] = Math.max(seen[reason] ?? 0, total);
        }
      },
    });
    for (const reason of ['finalized', 'timeout', 'foreground', 'orphan']) released.inc({ reason }, 0);
  }
  // Every label value shows from the start, so a rate() sees the first increment.
  for (const outcome of OUTCOMES) drains.inc({ outcome }, 0);
  for (const source of SOURCES) requests.inc({ source }, 0);
  for (const reason of REFUSALS) refused.inc({ reason }, 0);
  collectDefaultMetrics({ register: registry });

  return {
    observer: {
      drainRequested: (source) => requests.inc({ source }),
      drainEnded: (outcome, durationMs) => {
        drains.inc({ outcome });
        duration.observe(durationMs / 1000);
      },
    },
    prestopRefused: (reason) => refused.inc({ reason }),
    text: () => registry.metrics(),
    contentType: registry.contentType,
  };
}
