// The charts as helm sees them in a test: each copied into a temp directory
// (links followed) with the library chart unpacked in its charts/, so no test
// writes into the repository (helm dependency build would) and two test files
// never share a charts/ directory; what a developer's `helm dependency build`
// left in the source (Chart.lock, charts/) is not copied.

import { cpSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseObjects, type KubeObject } from '../../deploy/support/manifests.ts';
import { cleanupHelm, helm } from '../../support/helm.ts';

export const LIBRARY = resolve('deploy/helm/drainguard');
export const EXAMPLE = resolve('deploy/helm/example-operator');
export const KUSTOMIZE_EXAMPLE = resolve('test/helm/fixtures/kustomize-example');
export const MODES = ['wrap', 'native-sidecar', 'sidecar'] as const;

/** A copy of the chart at SOURCE with the library as its dependency; returns its directory. */
const staged: string[] = [];

export function stageChart(source: string): string {
  const parent = mkdtempSync(join(tmpdir(), 'drainguard-chart-'));
  staged.push(parent);
  const dir = join(parent, source.split('/').pop()!);
  // Without what `helm dependency build` leaves in the source (Chart.lock, charts/*.tgz): helm
  // would load that archive or the library staged here, whichever it met first.
  const root = resolve(source);
  const leftByHelm = (from: string) => resolve(from) === join(root, 'Chart.lock') || resolve(from).startsWith(join(root, 'charts/'));
  cpSync(source, dir, { recursive: true, dereference: true, filter: (from) => !leftByHelm(from) });
  mkdirSync(join(dir, 'charts'), { recursive: true });
  cpSync(LIBRARY, join(dir, 'charts', 'drainguard'), { recursive: true });
  return dir;
}

/** Removes every staged chart and this process's helm home (test.after). */
export function cleanupCharts(): void {
  for (const dir of staged.splice(0)) rmSync(dir, { recursive: true, force: true });
  cleanupHelm();
}

export interface RenderOptions {
  namespace: string;
  /** --set-json PATH=JSON pairs. */
  set?: Record<string, unknown>;
  release?: string;
}

const setArgs = (set: Record<string, unknown> = {}): string[] =>
  Object.entries(set).flatMap(([k, v]) => ['--set-json', `${k}=${JSON.stringify(v)}`]);

/** `helm template --include-crds`, parsed (hooks included, as helm install would create them). */
export function template(chart: string, options: RenderOptions): KubeObject[] {
  return parseObjects(templateText(chart, options));
}

export function templateText(chart: string, { namespace, set, release = 'test' }: RenderOptions): string {
  return helm(['template', release, chart, '--include-crds', '--namespace', namespace, ...setArgs(set)]);
}

/** `helm lint --strict`; throws with helm's output when it fails. */
export function lint(chart: string, { namespace, set }: Omit<RenderOptions, 'release'>): string {
  return helm(['lint', '--strict', chart, '--namespace', namespace, ...setArgs(set)]);
}

/** helm's error text when rendering fails, or undefined when it renders. */
export function templateError(chart: string, options: RenderOptions): string | undefined {
  try {
    templateText(chart, options);
    return undefined;
  } catch (err) {
    return (err as { stderr?: string }).stderr ?? String(err);
  }
}
