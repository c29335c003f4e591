// The findings of `drainguard check` as text for a person, or JSON for a script.

import type { Finding } from './finding.ts';

export function formatJson(findings: readonly Finding[], checked: number): string {
  return `${JSON.stringify({ checked, findings }, null, 2)}\n`;
}

export function formatText(findings: readonly Finding[], checked: number): string {
  if (findings.length === 0) return `checked ${checked} object(s): no findings\n`;
  const blocks = findings.map((f) => `${f.severity} ${f.code}: ${f.object}\n  ${f.message}\n  fix: ${f.fix}\n`);
  const errors = findings.filter((f) => f.severity === 'error').length;
  return `${blocks.join('\n')}\nchecked ${checked} object(s): ${errors} error(s), ${findings.length - errors} warning(s)\n`;
}
