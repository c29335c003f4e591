{{/*
One operator or several: drainguard.operator, or each entry of
drainguard.operators (its template, deployment, serviceAccount, container,
command and replacePreStop; any other of drainguard's settings, such as mode
or guard, over the chart-wide ones; predelete only its own). Each operator
gets its own context: the root context with .Values.drainguard resolved for
it, which every other template reads as it would the chart-wide settings.
*/}}

{{/* Each operator's settings, as a JSON list. Argument: the root context. */}}
{{- define "drainguard.operatorValues" -}}
{{- $top := .Values.drainguard -}}
{{- $out := list -}}
{{- if $top.operators -}}
{{- $own := list "template" "deployment" "serviceAccount" "container" "command" "replacePreStop" -}}
{{- range $entry := $top.operators -}}
{{- $values := omit (deepCopy $top) "operators" -}}
{{- $operator := dict "template" "" "deployment" "" "serviceAccount" "" "container" "" "command" list "replacePreStop" false -}}
{{- $predelete := deepCopy $top.predelete -}}
{{- $_ := set $predelete "enabled" false -}}
{{- $_ := set $values "predelete" $predelete -}}
{{- range $key, $value := $entry -}}
{{- if has $key $own -}}
{{- $_ := set $operator $key $value -}}
{{- else if and (kindIs "map" $value) (kindIs "map" (get $values $key)) -}}
{{- $merged := deepCopy (get $values $key) -}}
{{- range $k, $v := $value }}{{ $_ := set $merged $k $v }}{{ end -}}
{{- $_ := set $values $key $merged -}}
{{- else -}}
{{- $_ := set $values $key $value -}}
{{- end -}}
{{- end -}}
{{- $_ := set $values "operator" $operator -}}
{{- $out = append $out $values -}}
{{- end -}}
{{- end -}}
{{- $out | toJson -}}
{{- end -}}

{{/*
The contexts, one per operator, for the templates below: the root context
itself for drainguard.operator; for each entry of drainguard.operators, a copy
whose .Values.drainguard is that entry's settings. Templates return text, so
this one returns through its argument: (dict "root" $) gets "contexts", the
list.
*/}}
{{- define "drainguard.operatorContexts" -}}
{{- $root := .root -}}
{{- $contexts := list $root -}}
{{- with include "drainguard.operatorValues" $root | fromJsonArray -}}
{{- $contexts = list -}}
{{- range $settings := . -}}
{{- $values := dict -}}
{{- range $k, $v := $root.Values }}{{ $_ := set $values $k $v }}{{ end -}}
{{- $_ := set $values "drainguard" $settings -}}
{{- $context := dict -}}
{{- range $k, $v := $root }}{{ $_ := set $context $k $v }}{{ end -}}
{{- $_ := set $context "Values" $values -}}
{{- $contexts = append $contexts $context -}}
{{- end -}}
{{- end -}}
{{- $_ := set . "contexts" $contexts -}}
{{- end -}}

{{/*
Everything drainguard adds to a chart, for the chart's one drainguard
template (templates/drainguard.yaml: {{ include "drainguard.all" . }}): for
each operator, what its operator.template renders, every document as it is
but the operator's Deployment, StatefulSet or DaemonSet, rendered with
drainguard added; then drainguard's RBAC and hooks. An operator whose template
renders no workload (the chart's own switch turned it off) gets nothing of
drainguard. With drainguard.enabled false, the template as it renders alone.
Argument: the root context.
*/}}
{{- define "drainguard.all" -}}
{{- $operators := dict "root" . -}}
{{- include "drainguard.operatorContexts" $operators -}}
{{- range $context := $operators.contexts -}}
{{- if not .Values.drainguard.operator.template -}}
{{- fail "drainguard.operator.template: name the template of the operator's Deployment, StatefulSet or DaemonSet (a partial under templates/, such as manager/_manager.yaml), so that drainguard renders it with drainguard added; with drainguard.operators, each entry's template" -}}
{{- end -}}
{{- /* Rendered once: a template that generates (a certificate, a random name) gives one set of objects. */ -}}
{{- $t := include "drainguard.operatorTemplate" . | fromJson -}}
{{- range $i, $document := $t.documents }}
---
{{- if and (eq $i (int $t.index)) $context.Values.drainguard.enabled }}
{{ include "drainguard.deployment" (dict "root" $context "deployment" (toYaml $t.workload)) }}
{{- else }}
{{ $document }}
{{- end }}
{{- end }}
{{- if $t.workload }}
---
{{ include "drainguard.rbac" . }}
---
{{ include "drainguard.predeleteHook" . }}
---
{{ include "drainguard.postdeleteHook" . }}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
For the chart's NOTES.txt ({{ include "drainguard.notes" . }}): what
drainguard changed that the chart's own values do not show, per operator.
*/}}
{{- define "drainguard.notes" -}}
{{- if .Values.drainguard.enabled -}}
{{- $operators := dict "root" . -}}
{{- include "drainguard.operatorContexts" $operators -}}
{{- range $operators.contexts -}}
{{- if or (not .Values.drainguard.operator.template) (include "drainguard.operatorWorkload" . | fromJson) -}}
{{- $c := include "drainguard.config" . | fromJson }}
drainguard ({{ .Values.drainguard.mode }} mode, {{ $c.kind }} {{ $c.deployment }}) guards {{ len $c.guard }} object(s) while the operator's pods live: {{ join ", " $c.guard }}.
{{- if and $c.chartGrace (lt (int $c.chartGrace) (int .Values.drainguard.terminationGracePeriodSeconds)) }}
The Deployment's terminationGracePeriodSeconds was raised from {{ $c.chartGrace }} to {{ .Values.drainguard.terminationGracePeriodSeconds }}: drainguard's drain, stop and release fit in it.
{{- end }}
{{- with include "drainguard.memoryNote" (dict "root" . "resources" $c.operatorResources) }}
The operator container's {{ . }}.
{{- end }}
{{- if $c.externalServiceAccount }}
The ServiceAccount {{ $c.namespace }}/{{ $c.serviceAccount }} is not the release's (not in drainguard.guard.templates): it is left out of the guard; whoever created it must keep it until the operator pod is gone.
{{- end }}
{{- if and (not $c.token) (ne .Values.drainguard.mode "wrap") }}
The pod mounts no ServiceAccount token: drainguard's container alone gets one (volume drainguard-token), the operator's stays without.
{{- end }}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
