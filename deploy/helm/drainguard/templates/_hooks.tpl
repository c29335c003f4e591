{{/*
The Helm hooks of a clean uninstall, as deploy/helm-hooks/ has them with the
names filled in. Each brings its own ServiceAccount and RBAC (created first,
by hook weight), so it never depends on what the release is about to delete.
Argument: the root context.
*/}}

{{- define "drainguard.hookObject" -}}
labels:
  app.kubernetes.io/name: {{ .name }}
  app.kubernetes.io/managed-by: drainguard
annotations:
  helm.sh/hook: {{ .hook }}
  helm.sh/hook-weight: {{ .weight | quote }}
  helm.sh/hook-delete-policy: before-hook-creation,hook-succeeded
{{- end -}}

{{/* The hook's Job, around its container's args. */}}
{{- define "drainguard.hookJob" -}}
{{- $root := .root }}{{ $c := include "drainguard.config" $root | fromJson -}}
apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .name }}
  namespace: {{ $c.namespace }}
  {{- include "drainguard.hookObject" (dict "name" .name "hook" .hook "weight" 0) | nindent 2 }}
spec:
  backoffLimit: 1
  activeDeadlineSeconds: {{ .deadline }}
  template:
    metadata:
      labels:
        app.kubernetes.io/name: {{ .name }}
    spec:
      serviceAccountName: {{ .name }}
      restartPolicy: Never
      securityContext:
        runAsNonRoot: true
        runAsUser: {{ int $c.runAsUser }}
        runAsGroup: {{ int $c.runAsGroup }}
        seccompProfile:
          type: RuntimeDefault
      containers:
        - name: {{ .container }}
          image: {{ $c.image }}
          args: {{ toJson .args }}
          resources:
            {{- toYaml $root.Values.drainguard.hookResources | nindent 12 }}
          securityContext:
            allowPrivilegeEscalation: false
            readOnlyRootFilesystem: true
            capabilities:
              drop: [ALL]
{{- end -}}

{{/* The hook's ServiceAccount, and a binding of ROLE (kind KIND) to it. */}}
{{- define "drainguard.hookServiceAccount" -}}
apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ .name }}
  namespace: {{ .namespace }}
  {{- include "drainguard.hookObject" (dict "name" .name "hook" .hook "weight" -10) | nindent 2 }}
{{- end -}}

{{- define "drainguard.hookBinding" -}}
apiVersion: rbac.authorization.k8s.io/v1
kind: {{ .kind }}Binding
metadata:
  name: {{ .role | quote }}
  {{- if eq .kind "Role" }}
  namespace: {{ .bindingNamespace | default .namespace }}
  {{- end }}
  {{- include "drainguard.hookObject" (dict "name" .name "hook" .hook "weight" -9) | nindent 2 }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: {{ .kind }}
  name: {{ .role | quote }}
subjects:
  - kind: ServiceAccount
    name: {{ .name }}
    namespace: {{ .namespace }}
{{- end -}}

{{/*
pre-delete: a Job runs `drainguard predelete` on the custom resources of
predelete.stages, stage by stage, while the operator still runs with all of
its RBAC; Helm deletes the release only once they are gone.
*/}}
{{- define "drainguard.predeleteHook" -}}
{{- $v := .Values.drainguard -}}
{{- if and $v.enabled $v.predelete.enabled (not (include "drainguard.scanning" .)) -}}
{{- $c := include "drainguard.config" . | fromJson -}}
{{- if not $v.predelete.stages }}{{ fail "drainguard.predelete.stages: the hook is enabled but names no custom resources to delete" }}{{ end -}}
{{- $name := printf "%s-drainguard-predelete" $c.deployment -}}
{{- $role := printf "drainguard-predelete:%s:%s" $c.namespace $c.deployment -}}
{{- $groups := dict -}}
{{- $args := list "predelete" (printf "--namespace=%s" $c.namespace) (printf "--timeout=%s" $v.predelete.timeout) -}}
{{- with $v.predelete.requireReady }}{{ $args = append $args (printf "--require-ready=%s" .) }}{{ end -}}
{{- if $v.predelete.allNamespaces }}{{ $args = append $args "--all-namespaces" }}{{ end -}}
{{- if gt (len $v.predelete.stages) 1 }}{{ $args = append $args "--order" }}{{ end -}}
{{- range $v.predelete.stages -}}
{{- $args = append $args (join "," .) -}}
{{- range . -}}
{{- $type := first (splitList "/" .) -}}
{{- $plural := first (splitList "." $type) -}}
{{- $group := trimPrefix (printf "%s." $plural) $type -}}
{{- $_ := set $groups $group (append (get $groups $group | default list) $plural | uniq) -}}
{{- end -}}
{{- end }}
{{ include "drainguard.hookServiceAccount" (dict "name" $name "namespace" $c.namespace "hook" "pre-delete") }}
---
# Delete and watch the custom resources, and nothing else.
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: {{ $role | quote }}
  {{- include "drainguard.hookObject" (dict "name" $name "hook" "pre-delete" "weight" -10) | nindent 2 }}
rules:
  {{- range $group, $plurals := $groups }}
  - apiGroups: [{{ $group }}]
    resources: {{ toJson $plurals }}
    verbs: [get, list, delete]
  {{- end }}
---
{{ include "drainguard.hookBinding" (dict "kind" "ClusterRole" "role" $role "name" $name "namespace" $c.namespace "hook" "pre-delete") }}
{{- if $v.predelete.requireReady }}
---
# --require-ready: see that the operator runs before deleting anything.
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: {{ $role | quote }}
  namespace: {{ $c.namespace }}
  {{- include "drainguard.hookObject" (dict "name" $name "hook" "pre-delete" "weight" -10) | nindent 2 }}
rules:
  - apiGroups: [""]
    resources: [pods]
    verbs: [list]
---
{{ include "drainguard.hookBinding" (dict "kind" "Role" "role" $role "name" $name "namespace" $c.namespace "hook" "pre-delete") }}
{{- end }}
---
{{ include "drainguard.hookJob" (dict "root" . "name" $name "hook" "pre-delete" "container" "predelete" "args" $args "deadline" 420) }}
{{- end -}}
{{- end -}}

{{/*
post-delete: a Job runs `drainguard release --wait` on the guard list: the
operator pods may still drain (each releases its own finalizers as it stops);
it sweeps those of pods that died without releasing, so nothing stays stuck,
and then deletes drainguard's own RBAC, which the uninstall kept until no
holder was left (--delete).
*/}}
{{- define "drainguard.postdeleteHook" -}}
{{- $v := .Values.drainguard -}}
{{- if and $v.enabled $v.postdelete.enabled (not (include "drainguard.scanning" .)) -}}
{{- $c := include "drainguard.config" . | fromJson -}}
{{- $name := printf "%s-drainguard-release" $c.deployment -}}
{{- $role := printf "drainguard-release:%s:%s" $c.namespace $c.deployment -}}
{{- $names := dict "clusterrole" list "clusterrolebinding" list -}}
{{- /* The namespaced ones by namespace: a Role and binding of the hook's in each. */ -}}
{{- $byNamespace := dict -}}
{{- range $c.namespaces }}{{ $_ := set $byNamespace . (dict "role" list "rolebinding" list "serviceaccount" list) }}{{ end -}}
{{- range $c.guard -}}
{{- $parts := splitList "/" . -}}
{{- $kind := first $parts -}}
{{- if eq (len $parts) 3 -}}
{{- $in := get $byNamespace (index $parts 1) -}}
{{- $_ := set $in $kind (append (get $in $kind) (last $parts)) -}}
{{- else -}}
{{- $_ := set $names $kind (append (get $names $kind) (last $parts)) -}}
{{- end -}}
{{- end -}}
{{- $policy := printf "drainguard.%s.%s" $c.namespace $c.deployment -}}
{{- $delete := $c.own -}}
{{- if $v.admissionPolicy }}{{ $delete = concat $delete (list (printf "validatingadmissionpolicy/%s" $policy) (printf "validatingadmissionpolicybinding/%s" $policy)) }}{{ end -}}
{{- $args := list "release" (printf "--pod-namespace=%s" $c.namespace) (printf "--guard=%s" (join "," $c.guard)) (printf "--wait=%s" $v.postdelete.wait) (printf "--delete=%s" (join "," $delete)) }}
{{ include "drainguard.hookServiceAccount" (dict "name" $name "namespace" $c.namespace "hook" "post-delete") }}
{{- if or $names.clusterrole $names.clusterrolebinding $c.ownCluster $v.admissionPolicy }}
---
# get and patch (finalizers only: no escalate or bind is needed) on exactly the guarded
# objects; delete on drainguard's own ClusterRole and binding and its admission policy,
# which the uninstall keeps.
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: {{ $role | quote }}
  {{- include "drainguard.hookObject" (dict "name" $name "hook" "post-delete" "weight" -10) | nindent 2 }}
rules:
  {{- if $c.ownCluster }}
  - apiGroups: [rbac.authorization.k8s.io]
    resources: [clusterroles, clusterrolebindings]
    resourceNames: [{{ $c.self | quote }}]
    verbs: [delete]
  {{- end }}
  {{- if $v.admissionPolicy }}
  - apiGroups: [admissionregistration.k8s.io]
    resources: [validatingadmissionpolicies, validatingadmissionpolicybindings]
    resourceNames: [{{ $policy | quote }}]
    verbs: [delete]
  {{- end }}
  {{- with $names.clusterrole }}
  - apiGroups: [rbac.authorization.k8s.io]
    resources: [clusterroles]
    resourceNames: {{ toJson . }}
    verbs: [get, patch]
  {{- end }}
  {{- with $names.clusterrolebinding }}
  - apiGroups: [rbac.authorization.k8s.io]
    resources: [clusterrolebindings]
    resourceNames: {{ toJson . }}
    verbs: [get, patch]
  {{- end }}
---
{{ include "drainguard.hookBinding" (dict "kind" "ClusterRole" "role" $role "name" $name "namespace" $c.namespace "hook" "post-delete") }}
{{- end }}
{{- range $ns := $c.namespaces }}
{{- $in := get $byNamespace $ns }}
---
# The holders' Leases live in the operator's namespace; the guarded namespaced objects and
# drainguard's own Role and binding in each of theirs.
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: {{ $role | quote }}
  namespace: {{ $ns }}
  {{- include "drainguard.hookObject" (dict "name" $name "hook" "post-delete" "weight" -10) | nindent 2 }}
rules:
  {{- if eq $ns $c.namespace }}
  - apiGroups: [coordination.k8s.io]
    resources: [leases]
    verbs: [list]
  {{- end }}
  - apiGroups: [rbac.authorization.k8s.io]
    resources: [roles, rolebindings]
    resourceNames: [{{ $c.self | quote }}]
    verbs: [delete]
  {{- with $in.serviceaccount }}
  - apiGroups: [""]
    resources: [serviceaccounts]
    resourceNames: {{ toJson . }}
    verbs: [get, patch]
  {{- end }}
  {{- with $in.role }}
  - apiGroups: [rbac.authorization.k8s.io]
    resources: [roles]
    resourceNames: {{ toJson (uniq .) }}
    verbs: [get, patch]
  {{- end }}
  {{- with $in.rolebinding }}
  - apiGroups: [rbac.authorization.k8s.io]
    resources: [rolebindings]
    resourceNames: {{ toJson (uniq .) }}
    verbs: [get, patch]
  {{- end }}
---
{{ include "drainguard.hookBinding" (dict "kind" "Role" "role" $role "name" $name "namespace" $c.namespace "bindingNamespace" $ns "hook" "post-delete") }}
{{- end }}
---
{{ include "drainguard.hookJob" (dict "root" . "name" $name "hook" "post-delete" "container" "release" "args" $args "deadline" 300) }}
{{- end -}}
{{- end -}}
