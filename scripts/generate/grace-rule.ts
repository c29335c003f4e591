// deploy/helm/drainguard/templates/_grace-rule.tpl: the rule drain + stop +
// margin ≤ grace as the library chart computes it, from graceNeeded and
// defaultDrainTimeout in src/config/grace-rule.ts.
//
// A function cannot be translated into a template, but this one is affine:
// the generator reads its coefficients by calling it (in whole seconds, the
// chart's unit) and checks them at every sample below. A changed margin or
// coefficient changes the template, which the drift test then asks to be
// regenerated; a rule that is no longer affine, or a default drain that is no
// longer what the rule leaves, fails the generation, and so the drift test,
// until the chart is taught the new rule.

import { MIN_DRAIN_MS, defaultDrainTimeout, graceNeeded } from '../../src/config/grace-rule.ts';

export const GRACE_RULE = 'deploy/helm/drainguard/templates/_grace-rule.tpl';

export interface GraceRule {
  readonly graceNeeded: (drainTimeoutMs: number, stopTimeoutMs: number) => number;
  readonly defaultDrainTimeout: (gracePeriodMs: number, stopTimeoutMs: number) => number;
}

/** Seconds the rule is checked at: the edges, the defaults, Kubebuilder's 10 s, the 24 h cap. */
const SAMPLES = [0, 1, 2, 3, 5, 7, 10, 23, 30, 59, 60, 61, 600, 3600, 86_400];

const fail = (why: string): never => {
  throw new Error(`${GRACE_RULE}: ${why}; the chart cannot compute it: teach scripts/generate/grace-rule.ts the new rule`);
};

/** graceNeeded as drain × perDrain + stop × perStop + margin, all in whole seconds. */
function coefficients(rule: GraceRule): { perDrain: number; perStop: number; margin: number } {
  const needed = (drain: number, stop: number): number => rule.graceNeeded(drain * 1000, stop * 1000) / 1000;
  const margin = needed(0, 0);
  const perDrain = needed(1, 0) - margin;
  const perStop = needed(0, 1) - margin;
  if (![margin, perDrain, perStop].every(Number.isInteger))
    fail(`graceNeeded is not a whole number of seconds for whole seconds (margin ${margin}, ×${perDrain} drain, ×${perStop} stop)`);
  for (const stop of SAMPLES) {
    for (const drain of SAMPLES) {
      if (needed(drain, stop) !== drain * perDrain + stop * perStop + margin)
        fail(`graceNeeded(${drain}s, ${stop}s) is not drain × ${perDrain} + stop × ${perStop} + ${margin}s`);
    }
    for (const grace of SAMPLES) {
      const left = Math.max(0, grace - needed(0, stop));
      if (rule.defaultDrainTimeout(grace * 1000, stop * 1000) !== left * 1000)
        fail(`defaultDrainTimeout(${grace}s, ${stop}s) is not grace − graceNeeded(0, stop), at least 0 (${left}s)`);
    }
  }
  return { perDrain, perStop, margin };
}

/** MIN_DRAIN_MS in the chart's whole seconds; a fraction of a second cannot be said there. */
function minDrainSeconds(): number {
  if (MIN_DRAIN_MS % 1000 !== 0) fail(`MIN_DRAIN_MS (${MIN_DRAIN_MS} ms) is not a whole number of seconds`);
  return MIN_DRAIN_MS / 1000;
}

const term = (coefficient: number, value: string): string[] =>
  coefficient === 0 ? [] : [coefficient === 1 ? value : `(mul ${coefficient} ${value})`];

export function graceRuleTemplate(rule: GraceRule = { graceNeeded, defaultDrainTimeout }): string {
  const { perDrain, perStop, margin } = coefficients(rule);
  const sum = ['add', ...term(perDrain, '(int .drain)'), ...term(perStop, '(int .stop)'), String(margin)].join(' ');
  return `{{/*
Generated from src/config/grace-rule.ts by npm run generate; a test fails
when it is out of date. drainguard's rule drain + stop + margin ≤ grace, in
the chart's whole seconds.
*/}}

{{/*
The grace period a drain and a stop timeout need (graceNeeded). Argument:
(dict "drain" SECONDS "stop" SECONDS). Returns the seconds (| int).
*/}}
{{- define "drainguard.graceNeeded" -}}
{{- ${sum} -}}
{{- end -}}

{{/*
The drain a grace period leaves after the stop timeout (defaultDrainTimeout):
grace − graceNeeded(0, stop), at least 0. Argument: (dict "grace" SECONDS
"stop" SECONDS). Returns the seconds (| int).
*/}}
{{- define "drainguard.defaultDrain" -}}
{{- max 0 (sub (int .grace) (include "drainguard.graceNeeded" (dict "drain" 0 "stop" .stop) | int)) -}}
{{- end -}}

{{/* The rule's margin in seconds, as the chart's messages name it. */}}
{{- define "drainguard.graceMargin" -}}
${margin}
{{- end -}}

{{/* The least drain a grace period must leave when the drain is the default (MIN_DRAIN_MS), in seconds. */}}
{{- define "drainguard.minDrain" -}}
${minDrainSeconds()}
{{- end -}}
`;
}
