// docs/helm.md's steps for adding drainguard to a chart, applied to the letter
// to a copy of a chart (dist/chart of the project the kubebuilder CLI scaffolds,
// test/support/kubebuilder.ts, and test/fixtures/helm-create): the
// doc's Chart.yaml dependency, its `git mv`, its one template and its values.

import { appendFileSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { type ScaffoldLayout, scaffold } from '../../support/kubebuilder.ts';
import { stageChart } from './charts.ts';

const doc = readFileSync('docs/helm.md', 'utf8');

interface Steps {
  readonly yaml: string[];
  readonly sh: string[];
}

function section(heading: string): Steps {
  const start = doc.indexOf(`\n## ${heading}\n`);
  if (start === -1) throw new Error(`docs/helm.md has no section "${heading}"`);
  const text = doc.slice(start, doc.indexOf('\n## ', start + 1));
  const blocks = (lang: string) => [...text.matchAll(new RegExp(`\`\`\`${lang}\\n([\\s\\S]*?)\`\`\``, 'g'))].map((m) => m[1]!);
  return { yaml: blocks('yaml'), sh: blocks('sh') };
}

function block(blocks: readonly string[], needle: string): string {
  const found = blocks.find((b) => b.includes(needle));
  if (!found) throw new Error(`docs/helm.md: no block with ${needle}`);
  return found;
}

const KUBEBUILDER = section("Adding drainguard to the chart kubebuilder's helm plugin generates");
const HELM_CREATE = section('Adding drainguard to a chart from `helm create`');

/** The chart FIXTURE staged (the library in charts/) with the doc's edits; PREFIX: the doc's path to the chart. */
function adopt(fixture: string, steps: Steps, prefix: string): string {
  const chart = stageChart(resolve(fixture));
  appendFileSync(join(chart, 'Chart.yaml'), block(KUBEBUILDER.yaml, 'dependencies:'));
  const move = /git mv (\S+) (\S+)/.exec(block(steps.sh, 'git mv'))!;
  renameSync(join(chart, move[1]!.slice(prefix.length)), join(chart, move[2]!.slice(prefix.length)));
  writeFileSync(join(chart, 'templates/drainguard.yaml'), block(KUBEBUILDER.yaml, 'drainguard.all'));
  appendFileSync(join(chart, 'values.yaml'), `\n${block(steps.yaml, 'drainguard:\n')}`);
  return chart;
}

/** kubebuilder's dist/chart (of the project of `domain`, in `layout`) with drainguard added as docs/helm.md says. */
export const adoptKubebuilderChart = (domain?: string, layout?: ScaffoldLayout): string =>
  adopt(join(scaffold(domain, layout).dir, 'dist/chart'), KUBEBUILDER, 'dist/chart/');
/** A helm create chart with drainguard added as docs/helm.md says. */
export const adoptHelmCreateChart = (): string => adopt('test/fixtures/helm-create', HELM_CREATE, '');
