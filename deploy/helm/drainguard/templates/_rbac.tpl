{{/*
What drainguard itself may do, and nothing more: get and patch (for its
finalizers) exactly the objects it guards, by resourceNames; its holder
Leases, Events and its own Pod in the operator's namespace; with the hold,
its Deployment by name, ReplicaSets, and list on the held kinds. Bound to the
operator's ServiceAccount. Kept through the uninstall (helm.sh/resource-policy:
keep), so that no removal of the guard's release can take away the permission
of another; the post-delete hook deletes it once no holder is left.
Argument: the root context.
*/}}
{{- define "drainguard.rbac" -}}
{{- if and .Values.drainguard.enabled (not (include "drainguard.scanning" .)) -}}
{{- include "drainguard.validate" . -}}
{{- $c := include "drainguard.config" . | fromJson -}}
{{- $own := ternary (list $c.self) list $c.guardSelf -}}
{{- $clusterRoles := concat $c.clusterRoles $own -}}
{{- $clusterRoleBindings := concat $c.clusterRoleBindings $own -}}
{{- if $c.ownCluster }}
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: {{ $c.self | quote }}
  labels:
    {{- include "drainguard.labels" . | nindent 4 }}
  annotations:
    {{- include "drainguard.kept" . | nindent 4 }}
rules:
  {{- if $clusterRoles }}
  - apiGroups: [rbac.authorization.k8s.io]
    resources: [clusterroles]
    verbs: [get, patch]
    resourceNames: {{ toJson $clusterRoles }}
  {{- end }}
  {{- if $clusterRoleBindings }}
  - apiGroups: [rbac.authorization.k8s.io]
    resources: [clusterrolebindings]
    verbs: [get, patch]
    resourceNames: {{ toJson $clusterRoleBindings }}
  {{- end }}
  {{- /* The hold: the listed kinds wherever their objects are, to see which are being deleted and their finalizers. */}}
  {{- range $c.hold }}
  {{- $kind := splitn "." 2 . }}
  - apiGroups: [{{ $kind._1 | quote }}]
    resources: [{{ $kind._0 }}]
    verbs: [list]
  {{- end }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: {{ $c.self | quote }}
  labels:
    {{- include "drainguard.labels" . | nindent 4 }}
  annotations:
    {{- include "drainguard.kept" . | nindent 4 }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: {{ $c.self | quote }}
subjects:
  - kind: ServiceAccount
    name: {{ $c.serviceAccount }}
    namespace: {{ $c.namespace }}
---
{{- end }}
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: {{ $c.self | quote }}
  namespace: {{ $c.namespace }}
  labels:
    {{- include "drainguard.labels" . | nindent 4 }}
  annotations:
    {{- include "drainguard.kept" . | nindent 4 }}
rules:
  {{- if $c.guardServiceAccount }}
  - apiGroups: [""]
    resources: [serviceaccounts]
    verbs: [get, patch]
    resourceNames: [{{ $c.serviceAccount }}]
  {{- end }}
  {{- with concat $c.roles $own }}
  - apiGroups: [rbac.authorization.k8s.io]
    resources: [roles]
    verbs: [get, patch]
    resourceNames: {{ toJson . }}
  {{- end }}
  {{- with concat $c.roleBindings $own }}
  - apiGroups: [rbac.authorization.k8s.io]
    resources: [rolebindings]
    verbs: [get, patch]
    resourceNames: {{ toJson . }}
  {{- end }}
  # Holder Leases are named after pod UIDs, unknown in advance: no resourceNames.
  # list: finding the other holders (stale finalizers); patch: renewing its own.
  - apiGroups: [coordination.k8s.io]
    resources: [leases]
    verbs: [create, get, list, update, patch, delete]
  - apiGroups: [""]
    resources: [events]
    verbs: [create]
  - apiGroups: [""]
    resources: [pods]
    verbs: [get]
  {{- if $c.hold }}
  # The hold: from the pod's ReplicaSet (its name changes with each rollout) to
  # the Deployment, whose finalizer it holds; list and watch by name (the hold
  # watches this one Deployment, fieldSelector metadata.name).
  - apiGroups: [apps]
    resources: [replicasets]
    verbs: [get]
  - apiGroups: [apps]
    resources: [deployments]
    verbs: [get, list, watch, patch]
    resourceNames: [{{ $c.deployment }}]
  {{- end }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: {{ $c.self | quote }}
  namespace: {{ $c.namespace }}
  labels:
    {{- include "drainguard.labels" . | nindent 4 }}
  annotations:
    {{- include "drainguard.kept" . | nindent 4 }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: {{ $c.self | quote }}
subjects:
  - kind: ServiceAccount
    name: {{ $c.serviceAccount }}
    namespace: {{ $c.namespace }}
{{- end -}}
{{- end -}}
