{{/*
What drainguard itself may do, and nothing more: get and patch (for its
finalizers) exactly the objects it guards, by resourceNames; its holder
Leases, Events and its own Pod in the operator's namespace (a Role and binding
there, and one in each other namespace holding a guarded role or binding); with the hold,
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
{{- with include "drainguard.admissionPolicy" . }}
{{ . }}
---
{{- end }}
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
  {{- /* A namespace's deletion (1.30–1.32: everything at once) deletes drainguard's own Role and
  RoleBinding and the ServiceAccount while the pod drains, and each is what allows releasing the
  others: this ClusterRole stays, and releases them in a safe order (docs/guard.md). */}}
  {{- if $c.guardSelf }}
  - apiGroups: [rbac.authorization.k8s.io]
    resources: [roles, rolebindings]
    verbs: [get, patch]
    resourceNames: [{{ $c.self | quote }}]
  {{- end }}
  {{- if $c.guardServiceAccount }}
  - apiGroups: [""]
    resources: [serviceaccounts]
    verbs: [get, patch]
    resourceNames: [{{ $c.serviceAccount }}]
  {{- end }}
  {{- /* The same, deleted: a release that finds them all being deleted with the rest (`kubectl delete -f`
  of everything) pins them to its anchor with a DELETE in the foreground, so that its last removal keeps
  its permission (docs/guard.md, "Nothing stuck, whatever deletes it"). */}}
  {{- include "drainguard.rbac.pin" (dict "c" $c "kinds" "clusterroles, clusterrolebindings, roles, rolebindings") }}
  {{- /* The hold: the listed kinds wherever their objects are, to see which are being deleted and their finalizers. */}}
  {{- range $c.hold }}
  {{- $kind := splitn "." 2 . }}
  - apiGroups: [{{ $kind._1 | quote }}]
    resources: [{{ $kind._0 }}]
    verbs: [list]
  {{- end }}
  {{- if $c.hold }}
  # Its own Namespace, by name: whether it is being deleted when the pod is told to stop.
  - apiGroups: [""]
    resources: [namespaces]
    verbs: [get]
    resourceNames: [{{ $c.namespace }}]
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
{{- range $ns := $c.namespaces }}
{{- $roles := list }}{{ $roleBindings := list }}
{{- range $c.roles }}{{ if hasPrefix (printf "%s/" $ns) . }}{{ $roles = append $roles (trimPrefix (printf "%s/" $ns) .) }}{{ end }}{{ end }}
{{- range $c.roleBindings }}{{ if hasPrefix (printf "%s/" $ns) . }}{{ $roleBindings = append $roleBindings (trimPrefix (printf "%s/" $ns) .) }}{{ end }}{{ end }}
{{- $home := eq $ns $c.namespace }}
{{- if not $home }}
---
# The guarded roles and bindings of {{ $ns }}: get and patch on them by name, nothing else.
{{- end }}
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: {{ $c.self | quote }}
  namespace: {{ $ns }}
  labels:
    {{- include "drainguard.labels" $ | nindent 4 }}
  annotations:
    {{- include "drainguard.kept" $ | nindent 4 }}
rules:
  {{- if and $home $c.guardServiceAccount }}
  - apiGroups: [""]
    resources: [serviceaccounts]
    verbs: [get, patch]
    resourceNames: [{{ $c.serviceAccount }}]
  {{- end }}
  {{- with concat $roles $own }}
  - apiGroups: [rbac.authorization.k8s.io]
    resources: [roles]
    verbs: [get, patch]
    resourceNames: {{ toJson . }}
  {{- end }}
  {{- with concat $roleBindings $own }}
  - apiGroups: [rbac.authorization.k8s.io]
    resources: [rolebindings]
    verbs: [get, patch]
    resourceNames: {{ toJson . }}
  {{- end }}
  {{- if $home }}
  # Holder Leases are named after pod UIDs, unknown in advance: no resourceNames.
  # create, patch (renewing), delete: its own; list: the other holders of this
  # namespace (stale finalizers). Never get, update or watch.
  - apiGroups: [coordination.k8s.io]
    resources: [leases]
    verbs: [create, list, patch, delete]
  - apiGroups: [""]
    resources: [events]
    verbs: [create]
  - apiGroups: [""]
    resources: [pods]
    verbs: [get]
  {{- include "drainguard.rbac.pin" (dict "c" $c "kinds" "roles, rolebindings") }}
  # The EvictionRequest responder (KEP-4563), used only where the API is served and
  # the Pod names drainguard.dev/drain: Evictions are named by the controller. patch
  # of the status may change only the Active responder's entry (the API server's
  # validation): at worst, a compromised operator completes or prolongs the turn of
  # a responder of another pod of this namespace (deploy/components/rbac/rbac.yaml).
  - apiGroups: [lifecycle.k8s.io]
    resources: [evictions]
    verbs: [list, watch]
  - apiGroups: [lifecycle.k8s.io]
    resources: [evictions/status]
    verbs: [patch]
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
  {{- end }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: {{ $c.self | quote }}
  namespace: {{ $ns }}
  labels:
    {{- include "drainguard.labels" $ | nindent 4 }}
  annotations:
    {{- include "drainguard.kept" $ | nindent 4 }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: {{ $c.self | quote }}
subjects:
  - kind: ServiceAccount
    name: {{ $c.serviceAccount }}
    namespace: {{ $c.namespace }}
{{- end }}
{{- end -}}
{{- end -}}


{{/*
What RBAC cannot say: `patch` on a role or binding is patch of all of it, and
the operator's ServiceAccount, which drainguard's RBAC is bound to, could add
any subject to a binding of a role it holds. For requests by that
ServiceAccount on the objects drainguard guards (and the held Deployment), an
update may change nothing but the drainguard.dev/holder- finalizers
(admissionregistration.k8s.io/v1: Kubernetes 1.30 or later). Kept through the
uninstall and deleted with drainguard's own RBAC by the post-delete hook, as
deploy/components/rbac/admission-policy.yaml. Argument: the root context.
*/}}
{{- define "drainguard.admissionPolicy" -}}
{{- if .Values.drainguard.admissionPolicy -}}
{{- /* GA and on in every cluster from 1.30 (helm template: the client's version, or --kube-version). */ -}}
{{- if not (semverCompare ">=1.30-0" .Capabilities.KubeVersion.Version) -}}
{{- fail (printf "drainguard.admissionPolicy: Kubernetes %s has no admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy (1.30 or later). Without it the operator's ServiceAccount may change the guarded roles and bindings beyond their finalizers (add a subject, say); set drainguard.admissionPolicy: false to install all the same" .Capabilities.KubeVersion.Version) -}}
{{- end -}}
{{- $c := include "drainguard.config" . | fromJson -}}
{{- $name := printf "drainguard.%s.%s" $c.namespace $c.deployment -}}
{{- /* Roles and bindings by name in every namespace (a same-named one elsewhere is held to the same rule, for this ServiceAccount only). */ -}}
{{- $namespaced := list $c.self -}}
{{- range concat $c.roles $c.roleBindings }}{{ $namespaced = append $namespaced (last (splitList "/" .)) }}{{ end -}}
{{- $namespaced = $namespaced | uniq -}}
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: {{ $name }}
  labels:
    {{- include "drainguard.labels" . | nindent 4 }}
  annotations:
    {{- include "drainguard.kept" . | nindent 4 }}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
      - apiGroups: [rbac.authorization.k8s.io]
        apiVersions: ["*"]
        operations: [UPDATE]
        resources: [clusterroles]
        resourceNames: {{ toJson (concat $c.clusterRoles (list $c.self)) }}
      - apiGroups: [rbac.authorization.k8s.io]
        apiVersions: ["*"]
        operations: [UPDATE]
        resources: [clusterrolebindings]
        resourceNames: {{ toJson (concat $c.clusterRoleBindings (list $c.self)) }}
      - apiGroups: [rbac.authorization.k8s.io]
        apiVersions: ["*"]
        operations: [UPDATE]
        resources: [roles, rolebindings]
        resourceNames: {{ toJson $namespaced }}
      {{- if $c.guardServiceAccount }}
      - apiGroups: [""]
        apiVersions: ["*"]
        operations: [UPDATE]
        resources: [serviceaccounts]
        resourceNames: [{{ $c.serviceAccount }}]
      {{- end }}
      {{- if $c.hold }}
      - apiGroups: [apps]
        apiVersions: ["*"]
        operations: [UPDATE]
        resources: [deployments]
        resourceNames: [{{ $c.deployment }}]
      {{- end }}
  matchConditions:
    - name: operator-serviceaccount
      expression: {{ printf "request.userInfo.username == 'system:serviceaccount:' + '%s' + ':' + '%s'" $c.namespace $c.serviceAccount | quote }}
  validations:
    {{- include "drainguard.admissionValidations" . | nindent 4 }}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: {{ $name }}
  labels:
    {{- include "drainguard.labels" . | nindent 4 }}
  annotations:
    {{- include "drainguard.kept" . | nindent 4 }}
spec:
  policyName: {{ $name }}
  validationActions: [Deny]
{{- end -}}
{{- end -}}


{{/*
The pin's rules (docs/guard.md): delete on drainguard's own RBAC of KINDS and on the
ServiceAccount, by name, where they are guarded. Arguments: c (drainguard.config), kinds.
*/}}
{{- define "drainguard.rbac.pin" -}}
{{- if .c.guardSelf }}
  - apiGroups: [rbac.authorization.k8s.io]
    resources: [{{ .kinds }}]
    verbs: [delete]
    resourceNames: [{{ .c.self | quote }}]
{{- end }}
{{- if .c.guardServiceAccount }}
  - apiGroups: [""]
    resources: [serviceaccounts]
    verbs: [delete]
    resourceNames: [{{ .c.serviceAccount }}]
{{- end }}
{{- end -}}
