// The real helm, run for adopt: `helm template` of a chart with the user's
// values, each document with the template file it came from (helm's
// `# Source:` line), and `helm dependency update` where no library chart is given.

import { spawnSync } from 'node:child_process';
import { DrainguardError, ConfigError } from '../errors.ts';
import type { Manifest } from '../check/finding.ts';
import { parseManifests } from '../check/read.ts';

export interface RenderRequest {
  readonly helm: string;
  readonly chart: string;
  readonly release: string;
  readonly namespace: string;
  readonly values: readonly string[];
  readonly set: readonly string[];
  /** More --set pairs of adopt's own (drainguard.enabled=false for the chart as it was). */
  readonly extraSet?: readonly string[];
}

/** One rendered object and the file of the top chart's templates/ it came from (undefined: a subchart's). */
export interface Rendered {
  readonly object: Manifest;
  readonly file: string | undefined;
  readonly hook: boolean;
}

function runHelm(helm: string, args: readonly string[]): { status: number; stdout: string; stderr: string } {
  const r = spawnSync(helm, args, { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
  if (r.error) {
    const code = (r.error as NodeJS.ErrnoException).code;
    throw new ConfigError(
      'DG_ADOPT_INPUT',
      code === 'ENOENT'
        ? `helm not found (${JSON.stringify(helm)}): adopt renders the chart with the real helm; ` +
            'install Helm 3.8 or later, or give it with --helm PATH'
        : `cannot run helm (${JSON.stringify(helm)}): ${r.error.message}`,
    );
  }
  return { status: r.status ?? 1, stdout: r.stdout, stderr: r.stderr };
}

/** `helm template`, hooks and CRDs included, as helm install creates them. */
export function renderChart(r: RenderRequest, chartName: string): { text: string; objects: Rendered[] } {
  const args = ['template', r.release, r.chart, '--namespace', r.namespace, '--include-crds'];
  for (const file of r.values) args.push('--values', file);
  for (const pair of [...r.set, ...(r.extraSet ?? [])]) args.push('--set', pair);
  const out = runHelm(r.helm, args);
  if (out.status !== 0) throw new DrainguardError('DG_ADOPT_RENDER', `helm ${args.join(' ')} failed:\n${out.stderr.trim()}`);
  return { text: out.stdout, objects: splitSources(out.stdout, chartName) };
}

/** Each document of helm's output with its `# Source: CHART/templates/FILE` line. */
function splitSources(text: string, chartName: string): Rendered[] {
  const out: Rendered[] = [];
  const prefix = `${chartName}/templates/`;
  for (const chunk of text.split(/^---[ \t]*$/m)) {
    const source = /^# Source: (.+)$/m.exec(chunk)?.[1]?.trim();
    const file = source?.startsWith(prefix) ? source.slice(prefix.length) : undefined;
    for (const object of parseManifests(chunk, source ?? '<helm template>')) {
      const annotations = (object.metadata.annotations ?? {}) as Record<string, string>;
      out.push({ object, file, hook: annotations['helm.sh/hook'] !== undefined });
    }
  }
  return out;
}

/** `helm dependency update CHART`: fetches the library chart into charts/. */
export function updateDependencies(helm: string, chart: string): void {
  const out = runHelm(helm, ['dependency', 'update', chart]);
  if (out.status !== 0) {
    throw new DrainguardError(
      'DG_ADOPT_RENDER',
      `helm dependency update could not fetch drainguard's library chart:\n${out.stderr.trim()}\n` +
        '(without access to the repository, give the library chart with --library PATH)',
    );
  }
}
