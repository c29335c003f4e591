{{/*
A value that may be a template, as chart authors write names
('{{ include "my-operator.fullname" . }}'): rendered with tpl against the
chart. Argument: (dict "value" V "context" $).
*/}}
{{- define "drainguard.tpl" -}}
{{- $value := toString (.value | default "") -}}
{{- if contains "{{" $value }}{{ tpl $value .context }}{{ else }}{{ $value }}{{ end -}}
{{- end -}}

{{/* The kinds an operator runs as, which drainguard adds itself to. */}}
{{- define "drainguard.workloadKinds" -}}
{{- list "Deployment" "StatefulSet" "DaemonSet" | toJson -}}
{{- end -}}

{{/*
What operator.template renders, as JSON: "documents", the text of each of its
documents in order; "workload", the operator's Deployment, StatefulSet or
DaemonSet among them, parsed ({} when there is none: the chart's own switch
turned the operator off), and "index", its place in "documents". Every other
document is the chart's, for drainguard.all to render as it is (a
ServiceAccount, a Service, a Helm hook). A document of another kind that runs
pods (a Pod, a Job, a CronJob, a custom kind with a pod template), or a second
workload, fails the render: drainguard would leave it unguarded, or out.
The template, a path under templates/ (a partial) or a define's name, is
rendered with the root context. Argument: the root context.
*/}}
{{- define "drainguard.operatorTemplate" -}}
{{- $t := .Values.drainguard.operator.template | default "" -}}
{{- $documents := list -}}
{{- $workload := dict -}}
{{- $index := -1 -}}
{{- if $t -}}
{{- $file := or (contains "/" $t) (hasSuffix ".yaml" $t) (hasSuffix ".yml" $t) (hasSuffix ".tpl" $t) -}}
{{- $name := ternary (printf "%s/%s" .Template.BasePath $t) $t $file -}}
{{- if and $file (not (hasPrefix "_" (base $t))) -}}
{{- fail (printf "drainguard.operator.template: %q is not a partial: Helm would render it by itself too, and the release would hold the operator twice. Rename the file to %s (git mv; its content stays as it is) and set that here" $t (clean (printf "%s/_%s" (dir $t) (base $t)))) -}}
{{- end -}}
{{- $kinds := include "drainguard.workloadKinds" . | fromJsonArray -}}
{{- $workloads := list -}}
{{- range splitList "\n---" (printf "\n%s" (include $name (merge (dict "drainguardScan" true) .))) -}}
{{- $o := fromYaml . -}}
{{- if $o -}}
{{- $kind := toString ($o.kind | default "") -}}
{{- $what := printf "%s %s" $kind (toString (dig "metadata" "name" "" $o)) -}}
{{- $hook := dig "metadata" "annotations" "helm.sh/hook" "" $o -}}
{{- $pods := or (eq $kind "Pod") (dig "spec" "template" "spec" "containers" "" $o) (dig "spec" "jobTemplate" "spec" "template" "spec" "containers" "" $o) -}}
{{- if and (has $kind $kinds) (not $hook) -}}
{{- $workload = $o -}}
{{- $index = len $documents -}}
{{- $workloads = append $workloads $what -}}
{{- else if and $pods (not $hook) $.Values.drainguard.enabled -}}
{{- fail (printf "drainguard.operator.template: %s renders the %s, a kind drainguard does not add itself to (a Deployment, StatefulSet or DaemonSet): rendered as it is, it would run without drainguard. If it is not the operator, move it to a template file of its own, which Helm renders as it is; if it is, add drainguard's pieces to it yourself (docs/helm.md, \"A workload of another kind\")" $t $what) -}}
{{- end -}}
{{- $documents = append $documents (trim .) -}}
{{- end -}}
{{- end -}}
{{- if and (gt (len $workloads) 1) .Values.drainguard.enabled -}}
{{- fail (printf "drainguard.operator.template: %s renders %d workloads (%s), and drainguard is added to one per template: move each into a template file of its own and list each in drainguard.operators (docs/helm.md, \"Several operators in one chart\")" $t (len $workloads) (join ", " $workloads)) -}}
{{- end -}}
{{- end -}}
{{- dict "documents" $documents "workload" $workload "index" $index | toJson -}}
{{- end -}}

{{/* The operator's workload of operator.template, as JSON ({} when none). Argument: the root context. */}}
{{- define "drainguard.operatorWorkload" -}}
{{- (include "drainguard.operatorTemplate" . | fromJson).workload | toJson -}}
{{- end -}}

{{/*
drainguard's settings resolved once: names, the guard list, the drain budget,
the user. Names not given are taken from the operator's workload
(operator.template) and the RBAC of guard.templates (_guard.tpl). Every other
template reads this. Argument: the chart's root context (for one operator of
drainguard.operators, the context drainguard.operatorContexts made). Returns
JSON (include "drainguard.config" . | fromJson).
*/}}
{{- define "drainguard.config" -}}
{{- $v := .Values.drainguard -}}
{{- $d := include "drainguard.operatorWorkload" . | fromJson -}}
{{- $pod := dict -}}
{{- with $d.spec }}{{ $pod = .template.spec }}{{ end -}}
{{- $ns := .Release.Namespace -}}
{{- with $d.metadata }}{{ $ns = .namespace | default $ns }}{{ end -}}
{{- $deployment := include "drainguard.tpl" (dict "value" $v.operator.deployment "context" .) -}}
{{- with $d.metadata }}{{ $deployment = $deployment | default .name }}{{ end -}}
{{- $deployment = required "drainguard.operator.template (the template of the operator's Deployment, StatefulSet or DaemonSet, such as manager/_manager.yaml) or drainguard.operator.deployment (its name) is needed: drainguard's RBAC and hooks are named after it" $deployment -}}
{{- $sa := include "drainguard.tpl" (dict "value" $v.operator.serviceAccount "context" .) -}}
{{- $explicitSA := not (not $sa) -}}
{{- if $d }}{{ $sa = $sa | default $pod.serviceAccountName | default "default" }}{{ end -}}
{{- $sa = required "drainguard.operator.serviceAccount: the operator's ServiceAccount is needed (drainguard's RBAC binds to it); or set drainguard.operator.template" $sa -}}
{{- /* The operator's container: operator.container; unset, `manager`, or the pod's only container. */ -}}
{{- $container := $v.operator.container | default "manager" -}}
{{- if and (not $v.operator.container) $pod.containers (eq (len $pod.containers) 1) }}{{ $container = (index $pod.containers 0).name }}{{ end -}}
{{- $operator := dict -}}
{{- range $pod.containers }}{{ if eq .name $container }}{{ $operator = . }}{{ end }}{{ end -}}
{{- $self := printf "drainguard:%s:%s" $ns $deployment -}}
{{- $found := include "drainguard.guardObjects" (dict "root" . "namespace" $ns "serviceAccount" $sa "explicitServiceAccount" $explicitSA) | fromJson -}}
{{- $guard := list -}}
{{- range $found.clusterRoles }}{{ $guard = append $guard (printf "clusterrole/%s" .) }}{{ end -}}
{{- range $found.clusterRoleBindings }}{{ $guard = append $guard (printf "clusterrolebinding/%s" .) }}{{ end -}}
{{- range $found.roles }}{{ $guard = append $guard (printf "role/%s" .) }}{{ end -}}
{{- range $found.roleBindings }}{{ $guard = append $guard (printf "rolebinding/%s" .) }}{{ end -}}
{{- if $found.serviceAccount }}{{ $guard = append $guard (printf "serviceaccount/%s/%s" $ns $sa) }}{{ end -}}
{{- /* The namespaces of the guarded roles and bindings, the operator's first: drainguard's own Role and binding in each. */ -}}
{{- $namespaces := list $ns -}}
{{- range concat $found.roles $found.roleBindings }}{{ $namespaces = append $namespaces (first (splitList "/" .)) }}{{ end -}}
{{- $namespaces = $namespaces | uniq -}}
{{- /* drainguard's own RBAC: a ClusterRole and binding when it guards cluster-scoped objects or holds, a Role and binding in each namespace. */ -}}
{{- $hold := list -}}
{{- with $v.hold }}{{ $hold = .kinds | default list }}{{ end -}}
{{- $g := $v.guard -}}
{{- $ownCluster := or $found.clusterRoles $found.clusterRoleBindings $g.self $hold -}}
{{- $own := list -}}
{{- if $ownCluster }}{{ $own = list (printf "clusterrole/%s" $self) (printf "clusterrolebinding/%s" $self) }}{{ end -}}
{{- range $namespaces }}{{ $own = concat $own (list (printf "role/%s/%s" . $self) (printf "rolebinding/%s/%s" . $self)) }}{{ end -}}
{{- if $g.self }}{{ $guard = concat $guard $own }}{{ end -}}
{{- /* The user: drainguard.runAsUser, else the operator container's, else the pod's, else 65532 (the socket is mode 0600: the same user on both sides). */ -}}
{{- $ids := dict -}}
{{- range $key := list "runAsUser" "runAsGroup" -}}
{{- $id := 65532 -}}
{{- /* 0, root, reaches any socket: drainguard itself stays non-root. */ -}}
{{- with $pod.securityContext }}{{ with get . $key }}{{ $id = int . }}{{ end }}{{ end -}}
{{- with $operator.securityContext }}{{ with get . $key }}{{ $id = int . }}{{ end }}{{ end -}}
{{- with get $v $key }}{{ $id = int . }}{{ end -}}
{{- $_ := set $ids $key $id -}}
{{- end -}}
{{- /* The pod's token: its own automountServiceAccountToken, else its ServiceAccount's (when the release holds it), else mounted. */ -}}
{{- $token := true -}}
{{- if eq $found.serviceAccountAutomount "false" }}{{ $token = false }}{{ end -}}
{{- if not (kindIs "invalid" $pod.automountServiceAccountToken) }}{{ $token = $pod.automountServiceAccountToken }}{{ end -}}
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
{{- /* The operator's own preStop hook, when its length is known (a sleep action, an exec of sleep N): in
wrap mode it runs inside the grace before drainguard's signal, so drainguard's grace period is what it leaves. */ -}}
{{- $hookSeconds := 0 -}}
{{- if not (kindIs "invalid" $v.operator.preStopSeconds) }}{{ $hookSeconds = int $v.operator.preStopSeconds -}}
{{- else }}{{ with (and $operator.lifecycle $operator.lifecycle.preStop) }}
{{- if .sleep }}{{ $hookSeconds = int .sleep.seconds }}
{{- else if and .exec .exec.command (eq (len .exec.command) 2) }}
{{- if eq (base (first .exec.command)) "sleep" }}{{ $hookSeconds = int (index .exec.command 1) }}{{ end }}
{{- end }}
{{- end }}{{ end -}}
{{- dict
  "enabled" $v.enabled "mode" $v.mode "namespace" $ns "kind" ($d.kind | default "Deployment") "deployment" $deployment
  "serviceAccount" $sa "container" $container
  "self" $self "guard" $guard "clusterRoles" $found.clusterRoles "clusterRoleBindings" $found.clusterRoleBindings
  "roles" $found.roles "roleBindings" $found.roleBindings "namespaces" $namespaces
  "guardServiceAccount" $found.serviceAccount "externalServiceAccount" $found.externalServiceAccount
  "guardSelf" $g.self "own" $own "ownCluster" (not (not $ownCluster))
  "runAsUser" $ids.runAsUser "runAsGroup" $ids.runAsGroup "token" $token
  "operatorResources" ($operator.resources | default dict) "operatorCommand" ($operator.command | default list)
  "operatorPreStop" (not (not (and $operator.lifecycle $operator.lifecycle.preStop))) "hookSeconds" $hookSeconds
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
{{- $looked := join ", " (concat (compact (list $v.operator.template)) $v.guard.templates) -}}
{{- $want := list -}}
{{- range $c.clusterRoles }}{{ $want = append $want (printf "ClusterRole/%s" .) }}{{ end -}}
{{- range $c.clusterRoleBindings }}{{ $want = append $want (printf "ClusterRoleBinding/%s" .) }}{{ end -}}
{{- range $c.roles }}{{ $want = append $want (printf "Role/%s" .) }}{{ end -}}
{{- range $c.roleBindings }}{{ $want = append $want (printf "RoleBinding/%s" .) }}{{ end -}}
{{- range $want -}}
{{- if not (hasKey $found .) -}}
{{- fail (printf "drainguard: the guard names %s, which the release does not contain (looked in %s): fix the name in drainguard.guard (NAMESPACE/NAME for a role or binding in another namespace than %s), or add the template that creates it to drainguard.guard.templates" . $looked $c.namespace) -}}
{{- end -}}
{{- end -}}
{{- $sa := printf "ServiceAccount/%s/%s" $c.namespace $c.serviceAccount -}}
{{- if and $c.guardServiceAccount (not (hasKey $found $sa)) -}}
{{- fail (printf "drainguard: the guard names %s, which the release does not contain (looked in %s): fix drainguard.operator.serviceAccount, add the template that creates it to drainguard.guard.templates, or, when the release does not create it, set drainguard.guard.serviceAccount: false" $sa $looked) -}}
{{- end -}}
{{- end -}}
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
