// Regenerates every generated file in the repository:
//   src/install/launcher-image.ts   from src/install/launcher.S and launcher-arm64.S (GNU as, objcopy)
//   README.md                       the table of variables, from the options of every command,
//                                   and the layers of an uninstall, from src/check/layers.ts
//   docs/errors.md                  the table of error codes, from src/errors.ts
//   deploy/rendered/*.yaml          kubectl kustomize deploy/examples/*
//   deploy/helm/drainguard/templates/_defaults.tpl  the chart's defaults, from the options
//   deploy/helm/drainguard/templates/_grace-rule.tpl  the grace rule, from src/config/grace-rule.ts
//   deploy/helm/drainguard/templates/_admission-rules.tpl  the admission policy's rules, from the component's
//   docs/helm.md                    the table of the library chart's settings, from its values.yaml
// `npm run generate` writes them; `npm run generate -- --check` only reports
// the ones that differ (exit 1), as the drift test does.

import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { LAUNCHER_MODULE, assembleLauncher, launcherModule } from './generate/launcher.ts';
import { CHART_DEFAULTS, chartDefaults } from './generate/chart-defaults.ts';
import { ADMISSION_RULES, admissionRules } from './generate/admission-rules.ts';
import { GRACE_RULE, graceRuleTemplate } from './generate/grace-rule.ts';
import { ERRORS_DOC, errorsDoc } from './generate/errors.ts';
import { RENDERED_EXAMPLES, renderedExample, renderedPath } from './generate/rendered.ts';
import { VARIABLES_DOC, withVariablesTable } from './generate/variables.ts';
import { withLayersTable } from './generate/layers.ts';
import { SETTINGS_DOC, withSettingsTable } from './generate/chart-settings.ts';

export const ROOT = resolve(fileURLToPath(import.meta.url), '../..');

export interface Generated {
  /** Relative to the repository root. */
  readonly path: string;
  readonly content: string;
}

const current = (path: string): string | undefined => (existsSync(join(ROOT, path)) ? readFileSync(join(ROOT, path), 'utf8') : undefined);

export function generateAll(root = ROOT): Generated[] {
  return [
    { path: LAUNCHER_MODULE, content: launcherModule({ x64: assembleLauncher(root, 'x64'), arm64: assembleLauncher(root, 'arm64') }) },
    { path: VARIABLES_DOC, content: withLayersTable(withVariablesTable(current(VARIABLES_DOC))) },
    { path: ERRORS_DOC, content: errorsDoc() },
    { path: CHART_DEFAULTS, content: chartDefaults() },
    { path: GRACE_RULE, content: graceRuleTemplate() },
    { path: ADMISSION_RULES, content: admissionRules(root) },
    { path: SETTINGS_DOC, content: withSettingsTable(current(SETTINGS_DOC), root) },
    ...RENDERED_EXAMPLES.map((mode) => ({ path: renderedPath(mode), content: renderedExample(root, mode) })),
  ];
}

/** The generated files whose content in the repository differs from a fresh generation. */
export function drifted(root = ROOT): string[] {
  return generateAll(root)
    .filter((g) => current(g.path) !== g.content)
    .map((g) => g.path);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  if (process.argv.includes('--check')) {
    const stale = drifted();
    for (const path of stale) process.stderr.write(`out of date: ${path} (run npm run generate)\n`);
    process.exitCode = stale.length > 0 ? 1 : 0;
  } else {
    for (const { path, content } of generateAll()) {
      mkdirSync(dirname(join(ROOT, path)), { recursive: true });
      if (current(path) !== content) {
        writeFileSync(join(ROOT, path), content);
        process.stdout.write(`wrote ${path}\n`);
      }
    }
  }
}
