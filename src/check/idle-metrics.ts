// DRAINGUARD_IDLE_METRICS against what the pod says of the operator's metrics:
// its controller-runtime flags (--metrics-bind-address, kubebuilder's name; the
// older --metrics-addr) or, without them, its container ports named for
// metrics. A URL that misses them has every scrape fail, and the drain waits
// out its whole timeout.

import { type Placement, operatorArgv, goFlagOf, settingOf } from './pod.ts';
import { isLoopbackHost } from '../idle/loopback.ts';

export interface IdleMetricsFinding {
  readonly code: 'idle-metrics-not-metrics-port' | 'idle-metrics-not-this-pod';
  readonly severity: 'error' | 'warning';
  readonly message: string;
  readonly fix: string;
}

/** envOf's stand-in for the downward API's pod IP: the pod itself. */
const POD_IP = '<status.podIP>';

/** What a finding needs of the setting: where it is, its value, the port it scrapes, the URL with another port. */
interface Scrape {
  readonly where: string;
  readonly raw: string;
  readonly port: number;
  readonly suggest: (port: number) => string;
}

const TEXT = {
  'metrics-off': ({ where, raw }: Scrape, flag: string) => ({
    message:
      `DRAINGUARD_IDLE_METRICS is ${raw}, but the operator runs with --${flag}=0: ` +
      'its metrics are off, every scrape fails and the drain waits out its whole timeout',
    fix:
      `serve the operator's metrics (--${flag}=127.0.0.1:8080) and point DRAINGUARD_IDLE_METRICS in ${where} at them, ` +
      'or remove DRAINGUARD_IDLE_METRICS',
  }),
  'flag-port': ({ where, raw, port, suggest }: Scrape, flag: string, bind: string, served: number) => ({
    message:
      `DRAINGUARD_IDLE_METRICS scrapes port ${port} (${raw}), but the operator serves its metrics on port ${served} (--${flag}=${bind}): ` +
      'every scrape fails and the drain waits out its whole timeout',
    fix: `set DRAINGUARD_IDLE_METRICS=${suggest(served)} in ${where}`,
  }),
  'declared-port': (
    { where, raw, port, suggest }: Scrape,
    operator: string,
    ports: readonly { name?: string; containerPort: number }[],
  ) => ({
    message:
      `DRAINGUARD_IDLE_METRICS scrapes port ${port} (${raw}), ` +
      `but container ${operator} declares its metrics on ${ports.map((p) => `${p.name} ${p.containerPort}`).join(', ')}: ` +
      'every scrape fails and the drain waits out its whole timeout',
    fix: `set DRAINGUARD_IDLE_METRICS=${suggest(ports[0]!.containerPort)} in ${where}`,
  }),
  'not-this-pod': ({ where, port, suggest }: Scrape, host: string) => ({
    message:
      `DRAINGUARD_IDLE_METRICS scrapes ${host}, not this pod: ` +
      'a Service or another host answers for some other operator (or none), not the one drainguard stops',
    fix: `set DRAINGUARD_IDLE_METRICS=${suggest(port)} in ${where}: the containers of a pod share its loopback`,
  }),
};

export function checkIdleMetrics(placement: Placement): IdleMetricsFinding[] {
  const raw = settingOf(placement.supervisor, 'idle-metrics');
  if (raw === undefined) return [];
  let url: URL;
  try {
    url = new URL(raw.trim().replace(POD_IP, '127.0.0.1'));
  } catch {
    return []; // drainguard itself refuses it at start, naming the value
  }
  const out: IdleMetricsFinding[] = [];
  const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
  const scrape: Scrape = {
    where: `container ${placement.supervisor.name}`,
    raw,
    port,
    suggest: (p) => `${url.protocol}//127.0.0.1:${p}${url.pathname}`,
  };

  const words = operatorArgv(placement);
  const flag = ['metrics-bind-address', 'metrics-addr'].find((f) => goFlagOf(words, f) !== undefined);
  const bind = flag && goFlagOf(words, flag)!;
  if (flag && bind === '0') {
    out.push({ code: 'idle-metrics-not-metrics-port', severity: 'error', ...TEXT['metrics-off'](scrape, flag) });
  } else if (flag && bind !== undefined) {
    const served = Number(bind.slice(bind.lastIndexOf(':') + 1));
    if (Number.isInteger(served) && served !== port) {
      out.push({ code: 'idle-metrics-not-metrics-port', severity: 'error', ...TEXT['flag-port'](scrape, flag, bind, served) });
    }
  } else {
    const named = (placement.operator?.ports ?? []).filter((p) => /metrics/i.test(p.name ?? ''));
    if (named.length > 0 && !named.some((p) => p.containerPort === port)) {
      out.push({
        code: 'idle-metrics-not-metrics-port',
        severity: 'error',
        ...TEXT['declared-port'](scrape, placement.operator!.name, named),
      });
    }
  }

  if (!isLoopbackHost(url.hostname) && !raw.includes(POD_IP)) {
    out.push({ code: 'idle-metrics-not-this-pod', severity: 'warning', ...TEXT['not-this-pod'](scrape, url.hostname) });
  }
  return out;
}
