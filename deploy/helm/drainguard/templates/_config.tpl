{{/*
drainguard's settings resolved once: names, the guard list, the drain budget.
Every other template reads this. Argument: the chart's root context.
Returns JSON (include "drainguard.config" . | fromJson).
*/}}
{{- define "drainguard.config" -}}
{{- $v := .Values.drainguard -}}
{{- $ns := .Release.Namespace -}}
{{- $deployment := required "drainguard.operator.deployment: the operator's Deployment name is needed (drainguard's RBAC is named after it)" $v.operator.deployment -}}
{{- $sa := required "drainguard.operator.serviceAccount: the operator's ServiceAccount is needed (drainguard's RBAC binds to it)" $v.operator.serviceAccount -}}
{{- $self := printf "drainguard:%s:%s" $ns $deployment -}}
{{- $g := $v.guard -}}
{{- $clusterRoles := $g.clusterRoles | default list -}}
{{- $clusterRoleBindings := $g.clusterRoleBindings | default list -}}
{{- $roles := $g.roles | default list -}}
{{- $roleBindings := $g.roleBindings | default list -}}
{{- $guard := list -}}
{{- range $clusterRoles }}{{ $guard = append $guard (printf "clusterrole/%s" .) }}{{ end -}}
{{- range $clusterRoleBindings }}{{ $guard = append $guard (printf "clusterrolebinding/%s" .) }}{{ end -}}
{{- range $roles }}{{ $guard = append $guard (printf "role/%s/%s" $ns .) }}{{ end -}}
{{- range $roleBindings }}{{ $guard = append $guard (printf "rolebinding/%s/%s" $ns .) }}{{ end -}}
{{- if $g.serviceAccount }}{{ $guard = append $guard (printf "serviceaccount/%s/%s" $ns $sa) }}{{ end -}}
{{- /* drainguard's own RBAC: a ClusterRole and binding when it guards cluster-scoped objects or holds, a Role and binding always. */ -}}
{{- $hold := list -}}
{{- with $v.hold }}{{ $hold = .kinds | default list }}{{ end -}}
{{- $ownCluster := or $clusterRoles $clusterRoleBindings $g.self $hold -}}
{{- $own := list (printf "role/%s/%s" $ns $self) (printf "rolebinding/%s/%s" $ns $self) -}}
{{- if $ownCluster }}{{ $own = concat (list (printf "clusterrole/%s" $self) (printf "clusterrolebinding/%s" $self)) $own }}{{ end -}}
{{- if $g.self }}{{ $guard = concat $guard $own }}{{ end -}}
{{- $d := include "drainguard.defaults" . | fromJson -}}
{{- $grace := int $v.terminationGracePeriodSeconds -}}
{{- $margin := int $d.graceMarginSeconds -}}
{{- $stop := int $d.stopTimeoutSeconds -}}
{{- if not (kindIs "invalid" $v.stopTimeoutSeconds) }}{{ $stop = int $v.stopTimeoutSeconds }}{{ end -}}
{{- /* drainguard's default drain: what the rule drain + stop + margin ≤ grace leaves. */ -}}
{{- $drain := sub (sub $grace $stop) $margin | int -}}
{{- if not (kindIs "invalid" $v.drainTimeoutSeconds) }}{{ $drain = int $v.drainTimeoutSeconds }}{{ end -}}
{{- $image := printf "%s:%s" $v.image.repository $v.image.tag -}}
{{- dict
  "enabled" $v.enabled "mode" $v.mode "namespace" $ns "deployment" $deployment "serviceAccount" $sa
  "self" $self "guard" $guard "clusterRoles" $clusterRoles "clusterRoleBindings" $clusterRoleBindings
  "roles" $roles "roleBindings" $roleBindings "guardServiceAccount" $g.serviceAccount "guardSelf" $g.self "own" $own "ownCluster" (not (not $ownCluster))
  "hold" $hold "grace" $grace "stop" $stop "drain" $drain "margin" $margin "defaultSocket" $d.socket "image" $image
  | toJson -}}
{{- end -}}

{{/*
Template-time checks of what can only go wrong in the chart's settings; each
fails the render with the setting to change. Argument: the root context.
*/}}
{{- define "drainguard.validate" -}}
{{- $c := include "drainguard.config" . | fromJson -}}
{{- $v := .Values.drainguard -}}
{{- $grace := int $c.grace }}{{ $stop := int $c.stop }}{{ $drain := int $c.drain }}{{ $margin := int $c.margin -}}
{{- if lt $drain 1 -}}
{{- fail (printf "drainguard: terminationGracePeriodSeconds %d leaves no time to drain after stopTimeoutSeconds %d and the %d s margin: set terminationGracePeriodSeconds to at least %d" $grace $stop $margin (add $stop $margin 1)) -}}
{{- end -}}
{{- if gt (add $drain $stop $margin) $grace -}}
{{- fail (printf "drainguard: terminationGracePeriodSeconds %d is too short for drainTimeoutSeconds %d + stopTimeoutSeconds %d + %d s margin: set it to at least %d, or shorten the drain" $grace $drain $stop $margin (add $drain $stop $margin)) -}}
{{- end -}}
{{- if not (hasPrefix "/run/drainguard/" $v.socket) -}}
{{- fail (printf "drainguard: socket %q is outside the shared volume mounted at /run/drainguard in both containers: use a path under /run/drainguard/" $v.socket) -}}
{{- end -}}
{{- if and (ne $v.mode "wrap") (contains "/" (trimPrefix "/run/drainguard/" $v.socket)) -}}
{{- fail (printf "drainguard: socket %q must be directly in /run/drainguard/ (the shared volume's root)" $v.socket) -}}
{{- end -}}
{{- if $v.guard.templates -}}
{{- $found := include "drainguard.releaseObjects" . | fromJson -}}
{{- $want := list -}}
{{- range $c.clusterRoles }}{{ $want = append $want (printf "ClusterRole/%s" .) }}{{ end -}}
{{- range $c.clusterRoleBindings }}{{ $want = append $want (printf "ClusterRoleBinding/%s" .) }}{{ end -}}
{{- range $c.roles }}{{ $want = append $want (printf "Role/%s" .) }}{{ end -}}
{{- range $c.roleBindings }}{{ $want = append $want (printf "RoleBinding/%s" .) }}{{ end -}}
{{- if $c.guardServiceAccount }}{{ $want = append $want (printf "ServiceAccount/%s" $c.serviceAccount) }}{{ end -}}
{{- range $want -}}
{{- if not (hasKey $found .) -}}
{{- fail (printf "drainguard: the guard names %s, which the release does not contain (looked in %s): fix the name in drainguard.guard, or add the template that creates it to drainguard.guard.templates" . (join ", " $v.guard.templates)) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
KIND/NAME of every object the chart's guard.templates render, as JSON keys.
The templates are rendered with a marker that makes drainguard's own templates
in them render nothing (no recursion).
*/}}
{{- define "drainguard.releaseObjects" -}}
{{- if not (hasKey . "drainguardScan") -}}
{{- $scan := merge (dict "drainguardScan" true) . -}}
{{- $found := dict -}}
{{- range .Values.drainguard.guard.templates -}}
{{- $text := include (printf "%s/%s" $.Template.BasePath .) $scan -}}
{{- range splitList "\n---" (printf "\n%s" $text) -}}
{{- $o := fromYaml . -}}
{{- if and $o.kind $o.metadata -}}
{{- $_ := set $found (printf "%s/%s" $o.kind $o.metadata.name) true -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- $found | toJson -}}
{{- else -}}
{}
{{- end -}}
{{- end -}}

{{- define "drainguard.scanning" -}}{{ if hasKey . "drainguardScan" }}true{{ end }}{{- end -}}

{{- define "drainguard.labels" -}}
app.kubernetes.io/name: drainguard
{{- end -}}

{{/* drainguard's own RBAC: not deleted by helm uninstall, but by the post-delete hook. */}}
{{- define "drainguard.kept" -}}
helm.sh/resource-policy: keep
{{- end -}}
