{{/*
What drainguard adds to the operator's pod, one job per template. Each takes
the chart's root context and renders YAML (a list, or one container); the
same settings and objects as the kustomize components in deploy/components/.
*/}}

{{/* The hardened securityContext of every drainguard container. */}}
{{- define "drainguard.securityContext" -}}
runAsNonRoot: true
runAsUser: {{ .Values.drainguard.runAsUser }}
runAsGroup: {{ .Values.drainguard.runAsGroup }}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: [ALL]
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/* The downward-API variables and the guard list: what the holder of the guard needs. */}}
{{- define "drainguard.env" -}}
{{- $c := include "drainguard.config" . | fromJson -}}
{{- $v := .Values.drainguard -}}
- name: DRAINGUARD_POD_NAME
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
- name: DRAINGUARD_POD_NAMESPACE
  valueFrom:
    fieldRef:
      fieldPath: metadata.namespace
- name: DRAINGUARD_POD_UID
  valueFrom:
    fieldRef:
      fieldPath: metadata.uid
- name: DRAINGUARD_GUARD
  value: {{ join "," $c.guard | quote }}
- name: DRAINGUARD_HOLD
  value: {{ join "," $c.hold | quote }}
{{- with $v.hold }}
{{- with .timeout }}
- name: DRAINGUARD_HOLD_TIMEOUT
  value: {{ . | quote }}
{{- end }}
{{- with .settle }}
- name: DRAINGUARD_HOLD_SETTLE
  value: {{ . | quote }}
{{- end }}
{{- end }}
{{- if not (and (kindIs "invalid" $v.drainTimeoutSeconds) (kindIs "invalid" $v.stopTimeoutSeconds)) }}
# drainguard holds its timeouts to its own grace period before it reads the Pod's.
- name: DRAINGUARD_GRACE_PERIOD
  value: {{ printf "%ds" (int $c.grace) | quote }}
{{- end }}
{{- if not (kindIs "invalid" $v.drainTimeoutSeconds) }}
- name: DRAINGUARD_DRAIN_TIMEOUT
  value: {{ printf "%ds" (int $v.drainTimeoutSeconds) | quote }}
{{- end }}
{{- if not (kindIs "invalid" $v.stopTimeoutSeconds) }}
- name: DRAINGUARD_STOP_TIMEOUT
  value: {{ printf "%ds" (int $v.stopTimeoutSeconds) | quote }}
{{- end }}
{{- with $v.logLevel }}
- name: DRAINGUARD_LOG_LEVEL
  value: {{ . | quote }}
{{- end }}
{{- with $v.logFormat }}
- name: DRAINGUARD_LOG_FORMAT
  value: {{ . | quote }}
{{- end }}
{{- end -}}

{{/* The two emptyDirs: the installed executable, and the drain socket. */}}
{{- define "drainguard.volumes" -}}
{{- if .Values.drainguard.enabled -}}
- name: drainguard-socket
  emptyDir:
    medium: Memory
    sizeLimit: 1Mi
# What install writes (its size: docs/deploy.md), with room to spare.
- name: drainguard
  emptyDir:
    sizeLimit: 256Mi
{{- end -}}
{{- end -}}

{{/* The init container that copies drainguard into the pod (the operator image stays as it is). */}}
{{- define "drainguard.installContainer" -}}
{{- $c := include "drainguard.config" . | fromJson -}}
name: drainguard-install
image: {{ $c.image }}
{{- if ne .Values.drainguard.image.pullPolicy "IfNotPresent" }}
imagePullPolicy: {{ .Values.drainguard.image.pullPolicy }}
{{- end }}
command: [/drainguard/drainguard, install, /shared]
volumeMounts:
  - name: drainguard
    mountPath: /shared
securityContext:
  {{- include "drainguard.securityContext" . | nindent 2 }}
resources:
  {{- toYaml .Values.drainguard.resources | nindent 2 }}
{{- end -}}

{{/* The drainguard sidecar container: native (an init container, restartPolicy Always) or plain. */}}
{{- define "drainguard.sidecarContainer" -}}
{{- $c := include "drainguard.config" . | fromJson -}}
{{- $v := .Values.drainguard -}}
name: drainguard
image: {{ $c.image }}
{{- if ne $v.image.pullPolicy "IfNotPresent" }}
imagePullPolicy: {{ $v.image.pullPolicy }}
{{- end }}
{{- if eq $v.mode "native-sidecar" }}
restartPolicy: Always
{{- end }}
command: [/drainguard/drainguard, sidecar]
env:
  {{- include "drainguard.env" . | nindent 2 }}
  {{- if ne $v.socket $c.defaultSocket }}
  - name: DRAINGUARD_SOCKET
    value: {{ $v.socket | quote }}
  {{- end }}
  {{- if eq $v.mode "sidecar" }}
  # Before releasing the guard, also wait until the API reports the operator
  # container terminated: both containers get SIGTERM at once.
  - name: DRAINGUARD_OPERATOR_CONTAINER
    value: {{ $c.container }}
  {{- end }}
  # Reachable by the kubelet's probes and by Prometheus; /prestop stays off.
  - name: DRAINGUARD_HTTP_ADDR
    value: {{ printf ":%d" (int $v.httpPort) | quote }}
ports:
  - name: drainguard
    containerPort: {{ $v.httpPort }}
startupProbe:
  httpGet:
    path: /healthz
    port: drainguard
  periodSeconds: 1
  failureThreshold: 30
livenessProbe:
  httpGet:
    path: /healthz
    port: drainguard
  periodSeconds: 10
readinessProbe:
  httpGet:
    path: /readyz
    port: drainguard
  periodSeconds: 5
volumeMounts:
  - name: drainguard-socket
    mountPath: /run/drainguard
securityContext:
  {{- include "drainguard.securityContext" . | nindent 2 }}
resources:
  {{- toYaml $v.resources | nindent 2 }}
{{- end -}}

{{/* For initContainers: the native sidecar (first, as the kustomize component puts it), and install. */}}
{{- define "drainguard.initContainers" -}}
{{- if .Values.drainguard.enabled -}}
{{- if eq .Values.drainguard.mode "native-sidecar" -}}
- {{- include "drainguard.sidecarContainer" . | nindent 2 }}
{{ end -}}
- {{- include "drainguard.installContainer" . | nindent 2 }}
{{- end -}}
{{- end -}}

{{/* For containers: the plain sidecar (nothing in the other modes). */}}
{{- define "drainguard.containers" -}}
{{- if and .Values.drainguard.enabled (eq .Values.drainguard.mode "sidecar") -}}
- {{- include "drainguard.sidecarContainer" . | nindent 2 }}
{{- end -}}
{{- end -}}

{{/* For the operator container's env: the socket, and in wrap mode the guard's variables. */}}
{{- define "drainguard.operatorEnv" -}}
{{- if .Values.drainguard.enabled -}}
{{- if eq .Values.drainguard.mode "wrap" -}}
{{ include "drainguard.env" . }}
# On a volume: the root filesystem is read-only and may have no /tmp.
{{ end -}}
- name: DRAINGUARD_SOCKET
  value: {{ .Values.drainguard.socket | quote }}
{{- end -}}
{{- end -}}

{{/* For the operator container's volumeMounts. */}}
{{- define "drainguard.operatorVolumeMounts" -}}
{{- if .Values.drainguard.enabled -}}
- name: drainguard
  mountPath: /drainguard
  readOnly: true
- name: drainguard-socket
  mountPath: /run/drainguard
{{- end -}}
{{- end -}}

{{/*
The operator container's entrypoint in wrap mode: drainguard run -- COMMAND.
Argument: (dict "root" $ "command" LIST), LIST the operator's own command.
*/}}
{{- define "drainguard.operatorCommand" -}}
{{- concat (list "/drainguard/drainguard" "run" "--") .command | toJson -}}
{{- end -}}

{{/* The operator container's preStop hook in the sidecar modes. */}}
{{- define "drainguard.operatorLifecycle" -}}
preStop:
  exec:
    command: [/drainguard/drainguard, prestop]
{{- end -}}

{{/*
All of the above applied to a Deployment, as the kustomize components patch
one. Argument: (dict "root" $ "deployment" YAML), YAML the operator's
Deployment as rendered (include of your own named template). Renders it back
with drainguard added, or unchanged when drainguard.enabled is false.
*/}}
{{- define "drainguard.deployment" -}}
{{- $root := .root -}}
{{- $d := fromYaml .deployment -}}
{{- if hasKey $d "Error" }}{{ fail (printf "drainguard.deployment: the deployment is not YAML: %s" $d.Error) }}{{ end -}}
{{- $v := $root.Values.drainguard -}}
{{- if and $v.enabled (not (include "drainguard.scanning" $root)) -}}
{{- include "drainguard.validate" $root -}}
{{- /* Which container runs drainguard, as the kustomize components mark it. */ -}}
{{- $_ := set $d.metadata "annotations" (merge (dict "drainguard.dev/mode" $v.mode) ($d.metadata.annotations | default dict)) -}}
{{- $pod := $d.spec.template.spec -}}
{{- /* The grace period: raised to drainguard's, said in an annotation (and by drainguard.notes); a longer one stays. */ -}}
{{- $own := $pod.terminationGracePeriodSeconds | default 30 | int -}}
{{- if lt $own (int $v.terminationGracePeriodSeconds) -}}
{{- $_ := set $d.metadata "annotations" (merge (dict "drainguard.dev/grace-period" (printf "raised from %ds to %ds: drainguard's drain, stop and release fit in it" $own (int $v.terminationGracePeriodSeconds))) ($d.metadata.annotations | default dict)) -}}
{{- $_ := set $pod "terminationGracePeriodSeconds" (int $v.terminationGracePeriodSeconds) -}}
{{- end -}}
{{- $container := (include "drainguard.config" $root | fromJson).container -}}
{{- $containers := list -}}
{{- $found := false -}}
{{- range $pod.containers -}}
{{- if eq .name $container -}}
{{- $found = true -}}
{{- if eq $v.mode "wrap" -}}
{{- $_ := set . "command" (include "drainguard.operatorCommand" (dict "root" $root "command" (.command | default $v.operator.command)) | fromJsonArray) -}}
{{- else -}}
{{- $_ := set . "lifecycle" (merge (include "drainguard.operatorLifecycle" $root | fromYaml) (.lifecycle | default dict)) -}}
{{- end -}}
{{- $_ := set . "env" (concat (.env | default list) (include "drainguard.operatorEnv" $root | fromYamlArray)) -}}
{{- $_ := set . "volumeMounts" (concat (.volumeMounts | default list) (include "drainguard.operatorVolumeMounts" $root | fromYamlArray)) -}}
{{- end -}}
{{- $containers = append $containers . -}}
{{- end -}}
{{- if not $found }}{{ fail (printf "drainguard: the Deployment %s has no container %q: set drainguard.operator.container to the operator's container" $d.metadata.name $container) }}{{ end -}}
{{- $containers = concat $containers (include "drainguard.containers" $root | fromYamlArray) -}}
{{- $_ := set $pod "containers" $containers -}}
{{- $_ := set $pod "initContainers" (concat ($pod.initContainers | default list) (include "drainguard.initContainers" $root | fromYamlArray)) -}}
{{- $_ := set $pod "volumes" (concat ($pod.volumes | default list) (include "drainguard.volumes" $root | fromYamlArray)) -}}
{{- end -}}
{{- toYaml $d -}}
{{- end -}}


{{/*
Everything drainguard adds to a chart, for the chart's one drainguard
template (templates/drainguard.yaml: {{ include "drainguard.all" . }}): the
operator's Deployment of operator.template with drainguard added, drainguard's
RBAC and the hooks. Argument: the root context.
*/}}
{{- define "drainguard.all" -}}
{{- if not .Values.drainguard.operator.template -}}
{{- fail "drainguard.operator.template: name the template of the operator's Deployment (a partial under templates/, such as manager/_manager.yaml), so that drainguard renders it with drainguard added" -}}
{{- end -}}
{{- $d := include "drainguard.operatorDeployment" . | fromJson -}}
{{ include "drainguard.deployment" (dict "root" . "deployment" (toYaml $d)) }}
---
{{ include "drainguard.rbac" . }}
---
{{ include "drainguard.predeleteHook" . }}
---
{{ include "drainguard.postdeleteHook" . }}
{{- end -}}

{{/*
For the chart's NOTES.txt ({{ include "drainguard.notes" . }}): what
drainguard changed that the chart's own values do not show.
*/}}
{{- define "drainguard.notes" -}}
{{- if .Values.drainguard.enabled -}}
{{- $c := include "drainguard.config" . | fromJson -}}
drainguard ({{ .Values.drainguard.mode }} mode) guards {{ len $c.guard }} object(s) while the operator's pods live: {{ join ", " $c.guard }}.
{{- if and $c.chartGrace (lt (int $c.chartGrace) (int .Values.drainguard.terminationGracePeriodSeconds)) }}
The Deployment's terminationGracePeriodSeconds was raised from {{ $c.chartGrace }} to {{ .Values.drainguard.terminationGracePeriodSeconds }}: drainguard's drain, stop and release fit in it.
{{- end }}
{{- end -}}
{{- end -}}
