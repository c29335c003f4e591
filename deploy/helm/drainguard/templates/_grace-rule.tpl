{{/*
Generated from src/config/grace-rule.ts by npm run generate; a test fails
when it is out of date. drainguard's rule drain + stop + margin ≤ grace, in
the chart's whole seconds.
*/}}

{{/*
The grace period a drain and a stop timeout need (graceNeeded). Argument:
(dict "drain" SECONDS "stop" SECONDS). Returns the seconds (| int).
*/}}
{{- define "drainguard.graceNeeded" -}}
{{- add (int .drain) (int .stop) 2 -}}
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
2
{{- end -}}

{{/* The least drain a grace period must leave when the drain is the default (MIN_DRAIN_MS), in seconds. */}}
{{- define "drainguard.minDrain" -}}
1
{{- end -}}
