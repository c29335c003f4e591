{{/*
A value that may be a template, as chart authors write names
('{{ include "my-operator.fullname" . }}'): rendered with tpl against the
chart. Argument: (dict "value" V "context" $).
*/}}
{{- define "drainguard.tpl" -}}
{{- $value := toString (.value | default "") -}}
{{- if contains "{{" $value }}{{ tpl $value .context }}{{ else }}{{ $value }}{{ end -}}
{{- end -}}

{{/*
The operator's Deployment as the chart renders it, as JSON ({} when
drainguard.operator.template is not set): the template named there is
rendered with the root context (a path under templates/, or a define's name).
*/}}
{{- define "drainguard.operatorDeployment" -}}
{{- $t := .Values.drainguard.operator.template | default "" -}}
{{- $found := dict -}}
{{- if $t -}}
{{- $file := or (contains "/" $t) (hasSuffix ".yaml" $t) (hasSuffix ".yml" $t) (hasSuffix ".tpl" $t) -}}
{{- $name := ternary (printf "%s/%s" .Template.BasePath $t) $t $file -}}
{{- if and $file (not (hasPrefix "_" (base $t))) -}}
{{- fail (printf "drainguard.operator.template: %q is not a partial: Helm would render it by itself too, and the release would hold the Deployment twice. Rename the file to %s (git mv; its content stays as it is) and set that here" $t (clean (printf "%s/_%s" (dir $t) (base $t)))) -}}
{{- end -}}
{{- range splitList "\n---" (printf "\n%s" (include $name (merge (dict "drainguardScan" true) .))) -}}
{{- $o := fromYaml . -}}
{{- if and (eq ($o.kind | default "") "Deployment") (not $found) }}{{ $found = $o }}{{ end -}}
{{- end -}}
{{- if not $found }}{{ fail (printf "drainguard.operator.template: %s renders no Deployment" $t) }}{{ end -}}
{{- end -}}
{{- $found | toJson -}}
{{- end -}}

{{/*
drainguard's settings resolved once: names, the guard list, the drain budget.
Names not given are taken from the operator's Deployment (operator.template)
and the RBAC of guard.templates. Every other template reads this. Argument:
the chart's root context. Returns JSON (include "drainguard.config" . | fromJson).
*/}}
{{- define "drainguard.config" -}}
{{- $v := .Values.drainguard -}}
{{- $d := include "drainguard.operatorDeployment" . | fromJson -}}
{{- $pod := dict -}}
{{- with $d.spec }}{{ $pod = .template.spec }}{{ end -}}
{{- $ns := .Release.Namespace -}}
{{- with $d.metadata }}{{ $ns = .namespace | default $ns }}{{ end -}}
{{- $deployment := include "drainguard.tpl" (dict "value" $v.operator.deployment "context" .) -}}
{{- with $d.metadata }}{{ $deployment = $deployment | default .name }}{{ end -}}
{{- $deployment = required "drainguard.operator.template (the operator's Deployment template, such as manager/_manager.yaml) or drainguard.operator.deployment (its name) is needed: drainguard's RBAC and hooks are named after it" $deployment -}}
{{- $sa := include "drainguard.tpl" (dict "value" $v.operator.serviceAccount "context" .) -}}
{{- if $d }}{{ $sa = $sa | default $pod.serviceAccountName | default "default" }}{{ end -}}
{{- $sa = required "drainguard.operator.serviceAccount: the operator's ServiceAccount is needed (drainguard's RBAC binds to it); or set drainguard.operator.template" $sa -}}
{{- /* The operator's container: operator.container; unset, `manager`, or the pod's only container. */ -}}
{{- $container := $v.operator.container | default "manager" -}}
{{- if and (not $v.operator.container) $pod.containers (eq (len $pod.containers) 1) }}{{ $container = (index $pod.containers 0).name }}{{ end -}}
{{- $self := printf "drainguard:%s:%s" $ns $deployment -}}
{{- $g := $v.guard -}}
{{- $lists := dict -}}
{{- range $key := list "clusterRoles" "clusterRoleBindings" "roles" "roleBindings" -}}
{{- $names := list -}}
{{- range (get $g $key | default list) }}{{ $names = append $names (include "drainguard.tpl" (dict "value" . "context" $)) }}{{ end -}}
{{- $_ := set $lists $key $names -}}
{{- end -}}
{{- $scan := include "drainguard.releaseObjects" . | fromJson -}}
{{- /* None named: the roles bound to the operator's ServiceAccount by the bindings of guard.templates, and those bindings. */ -}}
{{- if and (not (or $lists.clusterRoles $lists.clusterRoleBindings $lists.roles $lists.roleBindings)) $scan.bindings -}}
{{- range $b := $scan.bindings -}}
{{- $bound := false -}}
{{- range $b.subjects }}{{ if and (eq .kind "ServiceAccount") (eq .name $sa) (eq (.namespace | default $ns) $ns) }}{{ $bound = true }}{{ end }}{{ end -}}
{{- $role := printf "%s/%s" $b.roleRef.kind $b.roleRef.name -}}
{{- if and $bound (or (eq $b.kind "ClusterRoleBinding") (eq ($b.namespace | default $ns) $ns)) (hasKey $scan.keys $role) -}}
{{- $_ := set $lists (ternary "clusterRoleBindings" "roleBindings" (eq $b.kind "ClusterRoleBinding")) (append (get $lists (ternary "clusterRoleBindings" "roleBindings" (eq $b.kind "ClusterRoleBinding"))) $b.name) -}}
{{- $_ := set $lists (ternary "clusterRoles" "roles" (eq $b.roleRef.kind "ClusterRole")) (append (get $lists (ternary "clusterRoles" "roles" (eq $b.roleRef.kind "ClusterRole"))) $b.roleRef.name) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- $clusterRoles := $lists.clusterRoles | uniq -}}
{{- $clusterRoleBindings := $lists.clusterRoleBindings | uniq -}}
{{- $roles := $lists.roles | uniq -}}
{{- $roleBindings := $lists.roleBindings | uniq -}}
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
{{- $defaults := include "drainguard.defaults" . | fromJson -}}
{{- /* The grace period: at least terminationGracePeriodSeconds; a longer one of the chart's own stays. */ -}}
{{- $chartGrace := 0 -}}
{{- if not (kindIs "invalid" $pod.terminationGracePeriodSeconds) }}{{ $chartGrace = int $pod.terminationGracePeriodSeconds }}{{ end -}}
{{- $grace := max (int $v.terminationGracePeriodSeconds) $chartGrace | int -}}
{{- $margin := include "drainguard.graceMargin" . | int -}}
{{- $stop := int $defaults.stopTimeoutSeconds -}}
{{- if not (kindIs "invalid" $v.stopTimeoutSeconds) }}{{ $stop = int $v.stopTimeoutSeconds }}{{ end -}}
{{- /* drainguard's default drain: what the rule drain + stop + margin ≤ grace leaves (_grace-rule.tpl). */ -}}
{{- $drain := include "drainguard.defaultDrain" (dict "grace" $grace "stop" $stop) | int -}}
{{- if not (kindIs "invalid" $v.drainTimeoutSeconds) }}{{ $drain = int $v.drainTimeoutSeconds }}{{ end -}}
{{- $image := printf "%s:%s" $v.image.repository $v.image.tag -}}
{{- dict
  "enabled" $v.enabled "mode" $v.mode "namespace" $ns "deployment" $deployment "serviceAccount" $sa "container" $container
  "self" $self "guard" $guard "clusterRoles" $clusterRoles "clusterRoleBindings" $clusterRoleBindings
  "roles" $roles "roleBindings" $roleBindings "guardServiceAccount" $g.serviceAccount "guardSelf" $g.self "own" $own "ownCluster" (not (not $ownCluster))
  "hold" $hold "grace" $grace "chartGrace" $chartGrace "stop" $stop "drain" $drain "margin" $margin "defaultSocket" $defaults.socket "image" $image
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
{{- $minDrain := include "drainguard.minDrain" . | int -}}
{{- if lt $drain $minDrain -}}
{{- fail (printf "drainguard: terminationGracePeriodSeconds %d leaves no time to drain after stopTimeoutSeconds %d and the %d s margin: set terminationGracePeriodSeconds to at least %d" $grace $stop $margin (include "drainguard.graceNeeded" (dict "drain" $minDrain "stop" $stop) | int)) -}}
{{- end -}}
{{- $needed := include "drainguard.graceNeeded" (dict "drain" $drain "stop" $stop) | int -}}
{{- if gt $needed $grace -}}
{{- fail (printf "drainguard: terminationGracePeriodSeconds %d is too short for drainTimeoutSeconds %d + stopTimeoutSeconds %d + %d s margin: set it to at least %d, or shorten the drain" $grace $drain $stop $margin $needed) -}}
{{- end -}}
{{- if not (hasPrefix "/run/drainguard/" $v.socket) -}}
{{- fail (printf "drainguard: socket %q is outside the shared volume mounted at /run/drainguard in both containers: use a path under /run/drainguard/" $v.socket) -}}
{{- end -}}
{{- if and (ne $v.mode "wrap") (contains "/" (trimPrefix "/run/drainguard/" $v.socket)) -}}
{{- fail (printf "drainguard: socket %q must be directly in /run/drainguard/ (the shared volume's root)" $v.socket) -}}
{{- end -}}
{{- if $v.guard.templates -}}
{{- $found := (include "drainguard.releaseObjects" . | fromJson).keys -}}
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
What the chart's guard.templates render: "keys", KIND/NAME of every object
(as JSON keys), and "bindings", each RoleBinding and ClusterRoleBinding with
its subjects and roleRef. Each entry is a file under templates/ (Helm's
templates cannot list a folder). The templates are rendered with a marker that
makes drainguard's own templates in them render nothing (no recursion).
*/}}
{{- define "drainguard.releaseObjects" -}}
{{- $found := dict -}}
{{- $bindings := list -}}
{{- if not (hasKey . "drainguardScan") -}}
{{- $scan := merge (dict "drainguardScan" true) . -}}
{{- range .Values.drainguard.guard.templates -}}
{{- if not (or (hasSuffix ".yaml" .) (hasSuffix ".yml" .) (hasSuffix ".tpl" .) (hasSuffix ".json" .)) -}}
{{- fail (printf "drainguard.guard.templates: %q is not a template file: Helm's templates cannot list a folder, so name each file of it (such as rbac/role.yaml, rbac/role_binding.yaml), as a path under templates/" .) -}}
{{- end -}}
{{- $text := include (printf "%s/%s" $.Template.BasePath .) $scan -}}
{{- range splitList "\n---" (printf "\n%s" $text) -}}
{{- $o := fromYaml . -}}
{{- if and $o.kind $o.metadata -}}
{{- $_ := set $found (printf "%s/%s" $o.kind $o.metadata.name) true -}}
{{- if and (hasSuffix "Binding" $o.kind) $o.roleRef -}}
{{- $bindings = append $bindings (dict "kind" $o.kind "name" $o.metadata.name "namespace" ($o.metadata.namespace | default "") "subjects" ($o.subjects | default list) "roleRef" $o.roleRef) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- dict "keys" $found "bindings" $bindings | toJson -}}
{{- end -}}

{{- define "drainguard.scanning" -}}{{ if hasKey . "drainguardScan" }}true{{ end }}{{- end -}}

{{- define "drainguard.labels" -}}
app.kubernetes.io/name: drainguard
drainguard.dev/uninstall: last
{{- end -}}

{{/* drainguard's own RBAC: not deleted by helm uninstall, but by the post-delete hook. */}}
{{- define "drainguard.kept" -}}
helm.sh/resource-policy: keep
{{- end -}}
