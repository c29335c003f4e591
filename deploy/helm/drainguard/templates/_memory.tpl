{{/*
Wrap mode: drainguard runs in the operator's container, so its memory
(drainguard.resources: its request and its limit, as its own container gets
in the sidecar modes) is added to the container's request and limit, where the
chart sets them. Argument: (dict "root" $ "resources" R), R the container's
resources. Returns JSON: {"requests"|"limits": {"from": Q, "to": Q}}.
*/}}
{{- define "drainguard.wrapMemory" -}}
{{- $v := .root.Values.drainguard -}}
{{- $out := dict -}}
{{- if eq $v.mode "wrap" -}}
{{- range $key := list "requests" "limits" -}}
{{- $own := get ($v.resources | default dict) $key | default dict -}}
{{- $theirs := get $.resources $key | default dict -}}
{{- if and $own.memory $theirs.memory -}}
{{- $sum := add (include "drainguard.bytes" (dict "quantity" $theirs.memory "key" (printf "resources.%s.memory" $key))) (include "drainguard.bytes" (dict "quantity" $own.memory "key" (printf "drainguard.resources.%s.memory" $key))) -}}
{{- $_ := set $out $key (dict "from" (toString $theirs.memory) "to" (include "drainguard.quantity" $sum)) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- $out | toJson -}}
{{- end -}}

{{/* What drainguard.wrapMemory changes, in words ("" when nothing). Argument: as drainguard.wrapMemory. */}}
{{- define "drainguard.memoryNote" -}}
{{- $change := include "drainguard.wrapMemory" . | fromJson -}}
{{- $parts := list -}}
{{- with $change.requests }}{{ $parts = append $parts (printf "request %s to %s" .from .to) }}{{ end -}}
{{- with $change.limits }}{{ $parts = append $parts (printf "limit %s to %s" .from .to) }}{{ end -}}
{{- if $parts }}memory {{ join ", " $parts }}: drainguard runs in this container (drainguard.resources added){{ end -}}
{{- end -}}

{{/* A memory quantity in bytes (Ki, Mi, Gi, Ti, k, M, G, T, or none). Argument: (dict "quantity" Q "key" WHERE). */}}
{{- define "drainguard.bytes" -}}
{{- $q := toString .quantity -}}
{{- $m := regexFindAll "^([0-9]+(\\.[0-9]+)?)(Ki|Mi|Gi|Ti|k|M|G|T)?$" $q 1 -}}
{{- if not $m -}}
{{- fail (printf "drainguard: cannot add drainguard's memory to %s %q: write it as a number with Ki, Mi, Gi, Ti, k, M, G or T (wrap mode adds drainguard.resources to the operator container's)" .key $q) -}}
{{- end -}}
{{- $number := regexReplaceAll "(Ki|Mi|Gi|Ti|k|M|G|T)$" $q "" -}}
{{- $unit := trimPrefix $number $q -}}
{{- $factor := get (dict "" 1 "Ki" 1024 "Mi" 1048576 "Gi" 1073741824 "Ti" 1099511627776 "k" 1000 "M" 1000000 "G" 1000000000 "T" 1000000000000) $unit -}}
{{- if contains "." $number }}{{ mulf (float64 $number) $factor | ceil | int64 }}{{ else }}{{ mul (int64 $number) $factor }}{{ end -}}
{{- end -}}

{{/* Bytes as a quantity: NMi when a whole number of Mi, else bytes. */}}
{{- define "drainguard.quantity" -}}
{{- $b := int64 . -}}
{{- if eq (mod $b 1048576) 0 }}{{ div $b 1048576 }}Mi{{ else }}{{ $b }}{{ end -}}
{{- end -}}
