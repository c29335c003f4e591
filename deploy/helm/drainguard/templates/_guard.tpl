{{/*
The guard: which of the release's objects are held back while an operator pod
lives, found in what the chart's guard.templates and operator.template render.
*/}}

{{/*
What the chart's guard.templates and operator.template render (a chart may
keep the operator's ServiceAccount and RBAC beside its Deployment), as JSON:
  "keys"          KIND/NAME of each cluster-scoped object, KIND/NAMESPACE/NAME
                  of each namespaced one (its metadata.namespace, else the
                  release's), as JSON keys
  "bindings"      each RoleBinding and ClusterRoleBinding: kind, name,
                  namespace, subjects, roleRef
  "clusterRoles"  each ClusterRole's labels and aggregationRule selectors, by name
  "automount"     each ServiceAccount's automountServiceAccountToken, by NAMESPACE/NAME
Each entry is a file under templates/ (Helm's templates cannot list a folder).
The templates are rendered with a marker that makes drainguard's own templates
in them render nothing (no recursion).
*/}}
{{- define "drainguard.releaseObjects" -}}
{{- $found := dict -}}
{{- $bindings := list -}}
{{- $clusterRoles := dict -}}
{{- $automount := dict -}}
{{- if not (hasKey . "drainguardScan") -}}
{{- $scan := merge (dict "drainguardScan" true) . -}}
{{- $texts := (include "drainguard.operatorTemplate" . | fromJson).documents -}}
{{- range .Values.drainguard.guard.templates -}}
{{- if not (or (hasSuffix ".yaml" .) (hasSuffix ".yml" .) (hasSuffix ".tpl" .) (hasSuffix ".json" .)) -}}
{{- fail (printf "drainguard.guard.templates: %q is not a template file: Helm's templates cannot list a folder, so name each file of it (such as rbac/manager-role.yaml, rbac/manager-rolebinding.yaml), as a path under templates/" .) -}}
{{- end -}}
{{- $texts = append $texts (include (printf "%s/%s" $.Template.BasePath .) $scan) -}}
{{- end -}}
{{- range $text := $texts -}}
{{- range splitList "\n---" (printf "\n%s" $text) -}}
{{- $o := fromYaml . -}}
{{- if and $o.kind $o.metadata -}}
{{- $cluster := has $o.kind (list "ClusterRole" "ClusterRoleBinding" "Namespace" "CustomResourceDefinition") -}}
{{- $ns := $o.metadata.namespace | default $.Release.Namespace -}}
{{- $_ := set $found (ternary (printf "%s/%s" $o.kind $o.metadata.name) (printf "%s/%s/%s" $o.kind $ns $o.metadata.name) $cluster) true -}}
{{- if and (has $o.kind (list "RoleBinding" "ClusterRoleBinding")) $o.roleRef -}}
{{- $bindings = append $bindings (dict "kind" $o.kind "name" $o.metadata.name "namespace" (ternary "" $ns $cluster) "subjects" ($o.subjects | default list) "roleRef" $o.roleRef) -}}
{{- end -}}
{{- if eq $o.kind "ClusterRole" -}}
{{- $selectors := list -}}
{{- with $o.aggregationRule }}{{ $selectors = .clusterRoleSelectors | default list }}{{ end -}}
{{- $_ := set $clusterRoles $o.metadata.name (dict "labels" ($o.metadata.labels | default dict) "selectors" $selectors) -}}
{{- end -}}
{{- if and (eq $o.kind "ServiceAccount") (hasKey $o "automountServiceAccountToken") -}}
{{- $_ := set $automount (printf "%s/%s" $ns $o.metadata.name) $o.automountServiceAccountToken -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- dict "keys" $found "bindings" $bindings "clusterRoles" $clusterRoles "automount" $automount | toJson -}}
{{- end -}}

{{/*
"true" when a label selector (matchLabels, matchExpressions In, NotIn, Exists,
DoesNotExist) selects LABELS, as the aggregation controller reads
clusterRoleSelectors. Argument: (dict "selector" S "labels" L).
*/}}
{{- define "drainguard.selects" -}}
{{- $labels := .labels | default dict -}}
{{- $ok := true -}}
{{- range $k, $v := (.selector.matchLabels | default dict) -}}
{{- if not (and (hasKey $labels $k) (eq (toString (get $labels $k)) (toString $v))) }}{{ $ok = false }}{{ end -}}
{{- end -}}
{{- range (.selector.matchExpressions | default list) -}}
{{- $has := hasKey $labels .key -}}
{{- $value := toString (get $labels .key) -}}
{{- $values := list -}}
{{- range (.values | default list) }}{{ $values = append $values (toString .) }}{{ end -}}
{{- if eq .operator "In" }}{{ if not (and $has (has $value $values)) }}{{ $ok = false }}{{ end -}}
{{- else if eq .operator "NotIn" }}{{ if and $has (has $value $values) }}{{ $ok = false }}{{ end -}}
{{- else if eq .operator "Exists" }}{{ if not $has }}{{ $ok = false }}{{ end -}}
{{- else if eq .operator "DoesNotExist" }}{{ if $has }}{{ $ok = false }}{{ end -}}
{{- else }}{{ $ok = false -}}
{{- end -}}
{{- end -}}
{{- if $ok }}true{{ end -}}
{{- end -}}

{{/*
A guarded name of a namespaced object: NAMESPACE/NAME as given, or NAME in
NAMESPACE. Argument: (dict "name" N "namespace" NS).
*/}}
{{- define "drainguard.namespacedName" -}}
{{- if contains "/" .name }}{{ .name }}{{ else }}{{ printf "%s/%s" .namespace .name }}{{ end -}}
{{- end -}}

{{/*
The objects guarded for the operator's ServiceAccount NAMESPACE/SA: those
named in guard.* (templates rendered, roles and role bindings as
NAMESPACE/NAME, a plain NAME in NAMESPACE); none named, every binding of the
ServiceAccount in guard.templates, in any namespace, whatever role it binds,
and the roles it binds that the release holds (never a role of the cluster's
own: the release would not delete it). Then the ClusterRoles of the release
that a guarded one aggregates (clusterRoleSelectors), transitively: deleting
one strips its rules from the guarded role. The ServiceAccount when
guard.serviceAccount and the release holds it ("external" when guard.templates
shows the release does not create it). Argument: (dict "root" $ "namespace" NS
"serviceAccount" SA "explicitServiceAccount" BOOL). Returns JSON.
*/}}
{{- define "drainguard.guardObjects" -}}
{{- $root := .root -}}
{{- $ns := .namespace -}}
{{- $sa := .serviceAccount -}}
{{- $g := $root.Values.drainguard.guard -}}
{{- $lists := dict -}}
{{- range $key := list "clusterRoles" "clusterRoleBindings" "roles" "roleBindings" -}}
{{- $names := list -}}
{{- range (get $g $key | default list) -}}
{{- $name := include "drainguard.tpl" (dict "value" . "context" $root) -}}
{{- if has $key (list "roles" "roleBindings") }}{{ $name = include "drainguard.namespacedName" (dict "name" $name "namespace" $ns) }}{{ end -}}
{{- $names = append $names $name -}}
{{- end -}}
{{- $_ := set $lists $key $names -}}
{{- end -}}
{{- $scan := include "drainguard.releaseObjects" $root | fromJson -}}
{{- if and (not (or $lists.clusterRoles $lists.clusterRoleBindings $lists.roles $lists.roleBindings)) $scan.bindings -}}
{{- range $b := $scan.bindings -}}
{{- $bound := false -}}
{{- range $b.subjects -}}
{{- if and (eq .kind "ServiceAccount") (eq .name $sa) (eq (.namespace | default $b.namespace) $ns) }}{{ $bound = true }}{{ end -}}
{{- if and (eq .kind "User") (eq .name (printf "system:serviceaccount:%s:%s" $ns $sa)) }}{{ $bound = true }}{{ end -}}
{{- end -}}
{{- if $bound -}}
{{- if eq $b.kind "ClusterRoleBinding" -}}
{{- $_ := set $lists "clusterRoleBindings" (append $lists.clusterRoleBindings $b.name) -}}
{{- else -}}
{{- $_ := set $lists "roleBindings" (append $lists.roleBindings (printf "%s/%s" $b.namespace $b.name)) -}}
{{- end -}}
{{- if and (eq $b.roleRef.kind "ClusterRole") (hasKey $scan.keys (printf "ClusterRole/%s" $b.roleRef.name)) -}}
{{- $_ := set $lists "clusterRoles" (append $lists.clusterRoles $b.roleRef.name) -}}
{{- else if and (eq $b.roleRef.kind "Role") (hasKey $scan.keys (printf "Role/%s/%s" $b.namespace $b.roleRef.name)) -}}
{{- $_ := set $lists "roles" (append $lists.roles (printf "%s/%s" $b.namespace $b.roleRef.name)) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- /* Aggregation, to a fixed point: at most one pass per ClusterRole of the release. */ -}}
{{- $clusterRoles := $lists.clusterRoles | uniq -}}
{{- range $scan.clusterRoles -}}
{{- range $name := $clusterRoles -}}
{{- with get $scan.clusterRoles $name -}}
{{- range $selector := .selectors -}}
{{- range $source, $o := $scan.clusterRoles -}}
{{- if and (ne $source $name) (not (has $source $clusterRoles)) (include "drainguard.selects" (dict "selector" $selector "labels" $o.labels)) -}}
{{- $clusterRoles = append $clusterRoles $source -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- $saKey := printf "ServiceAccount/%s/%s" $ns $sa -}}
{{- $external := not (not (and $g.serviceAccount $g.templates (not (hasKey $scan.keys $saKey)) (not .explicitServiceAccount))) -}}
{{- $automount := "" -}}
{{- if hasKey $scan.automount (printf "%s/%s" $ns $sa) }}{{ $automount = toString (get $scan.automount (printf "%s/%s" $ns $sa)) }}{{ end -}}
{{- dict
  "clusterRoles" $clusterRoles "clusterRoleBindings" ($lists.clusterRoleBindings | uniq)
  "roles" ($lists.roles | uniq) "roleBindings" ($lists.roleBindings | uniq)
  "serviceAccount" (not (not (and $g.serviceAccount (not $external)))) "externalServiceAccount" $external
  "serviceAccountAutomount" $automount
  | toJson -}}
{{- end -}}
