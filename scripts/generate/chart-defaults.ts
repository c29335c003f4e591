// deploy/helm/drainguard/templates/_defaults.tpl: the defaults of drainguard
// that the library chart computes with (the stop timeout, the drain socket),
// from the options table, so that the chart cannot drift from them. The rule
// they are used in is generated beside them (grace-rule.ts).

import { EVERY_OPTION, type OptionValues, defaultValue } from '../../src/config/options.ts';

export const CHART_DEFAULTS = 'deploy/helm/drainguard/templates/_defaults.tpl';

const sidecarDefault = (key: keyof OptionValues): unknown =>
  defaultValue(
    EVERY_OPTION.find((o) => o.key === key)!,
    'sidecar',
  );

/** The chart's settings are whole seconds: a default that is not cannot be written there. */
function seconds(ms: unknown, what: string): number {
  if (typeof ms !== 'number' || ms % 1000 !== 0)
    throw new Error(`${CHART_DEFAULTS}: ${what} (${String(ms)} ms) is not a whole number of seconds`);
  return ms / 1000;
}

export function chartDefaults(): string {
  const defaults = {
    stopTimeoutSeconds: seconds(sidecarDefault('stopTimeoutMs'), 'the default stop timeout'),
    socket: sidecarDefault('socket'),
  };
  return `{{/*
Generated from src/config/options.ts by
npm run generate; a test fails when it is out of date. drainguard's defaults
as the chart computes with them. Returns JSON
(include "drainguard.defaults" . | fromJson).
*/}}
{{- define "drainguard.defaults" -}}
${JSON.stringify(defaults)}
{{- end -}}
`;
}
