// The findings of `drainguard check` as text for a person, or JSON for a script,
// with the table of which layer covers which way of uninstalling.

import type { Finding } from './finding.ts';
import { type LayersRow, formatLayers } from './layers.ts';

export function formatJson(findings: readonly Finding[], checked: number, layers?: readonly LayersRow[]): string {
  return `${JSON.stringify({ checked, findings, ...(layers ? { layers } : {}) }, null, 2)}\n`;
}

export function formatText(findings: readonly Finding[], checked: number, layers?: readonly LayersRow[]): string {
  const table = layers ? `${formatLayers(layers)}\n\n` : '';
  if (findings.length === 0) return `${table}checked ${checked} object(s): no findings\n`;
  const blocks = findings.map((f) => `${f.severity} ${f.code}: ${f.object}\n  ${f.message}\n  fix: ${f.fix}\n`);
  const errors = findings.filter((f) => f.severity === 'error').length;
  return `${blocks.join('\n')}\n${table}checked ${checked} object(s): ${errors} error(s), ${findings.length - errors} warning(s)\n`;
}
