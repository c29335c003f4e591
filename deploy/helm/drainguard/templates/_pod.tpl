{{/*
What drainguard adds to the operator's pod, one job per template. Each takes
the chart's root context and renders YAML (a list, or one container); the
same settings and objects as the kustomize components in deploy/components/.
*/}}

{{/* The hardened securityContext of every drainguard container. */}}
{{- define "drainguard.securityContext" -}}
{{- $c := include "drainguard.config" . | fromJson -}}
runAsNonRoot: true
runAsUser: {{ int $c.runAsUser }}
runAsGroup: {{ int $c.runAsGroup }}
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
{{- if and (eq $c.mode "wrap") (gt (int $c.hookSeconds) 0) }}
# The operator's own preStop hook ({{ int $c.hookSeconds }} s) runs inside the grace, before drainguard's signal: what it leaves.
- name: DRAINGUARD_GRACE_PERIOD
  value: {{ printf "%ds" (sub (int $c.grace) (int $c.hookSeconds)) | quote }}
{{- else if not (and (kindIs "invalid" $v.drainTimeoutSeconds) (kindIs "invalid" $v.stopTimeoutSeconds)) }}
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
{{- with $v.idleMetrics }}
- name: DRAINGUARD_IDLE_METRICS
  value: {{ include "drainguard.tpl" (dict "value" . "context" $) | quote }}
{{- end }}
{{- end -}}

{{/*
The two emptyDirs: the installed executable, and the drain socket; in the
sidecar modes of a pod that mounts no token (automountServiceAccountToken:
false), the token of drainguard's container, as the kubelet would mount it.
*/}}
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
{{- $c := include "drainguard.config" . | fromJson }}
{{- if and (not $c.token) (ne .Values.drainguard.mode "wrap") }}
# The pod mounts no token (automountServiceAccountToken: false): drainguard's
# container alone gets one, the operator's stays without.
- name: drainguard-token
  projected:
    defaultMode: 0444
    sources:
      - serviceAccountToken:
          path: token
          expirationSeconds: 3607
      - configMap:
          name: kube-root-ca.crt
          items:
            - key: ca.crt
              path: ca.crt
      - downwardAPI:
          items:
            - path: namespace
              fieldRef:
                apiVersion: v1
                fieldPath: metadata.namespace
{{- end }}
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
  {{- toYaml .Values.drainguard.installResources | nindent 2 }}
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
  {{- if not $c.token }}
  - name: drainguard-token
    mountPath: /var/run/secrets/kubernetes.io/serviceaccount
    readOnly: true
  {{- end }}
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
All of the above applied to the operator's workload, a Deployment,
StatefulSet or DaemonSet, as the kustomize components patch a Deployment.
Argument: (dict "root" $ "deployment" YAML), YAML the workload as rendered
(include of your own named template). Renders it back with drainguard added,
or unchanged when drainguard.enabled is false.
*/}}
{{- define "drainguard.deployment" -}}
{{- $root := .root -}}
{{- $d := fromYaml .deployment -}}
{{- if hasKey $d "Error" }}{{ fail (printf "drainguard.deployment: the deployment is not YAML: %s" $d.Error) }}{{ end -}}
{{- $v := $root.Values.drainguard -}}
{{- if and $v.enabled (not (include "drainguard.scanning" $root)) -}}
{{- $kind := toString ($d.kind | default "") -}}
{{- if not (has $kind (include "drainguard.workloadKinds" $root | fromJsonArray)) -}}
{{- fail (printf "drainguard.deployment: %s %s is a kind drainguard does not add itself to (a Deployment, StatefulSet or DaemonSet): add drainguard's pieces to it yourself (docs/helm.md, \"A workload of another kind\")" ($kind | default "an object without kind") (toString (dig "metadata" "name" "" $d))) -}}
{{- end -}}
{{- with $v.hold }}{{ if and .kinds (ne $kind "Deployment") -}}
{{- fail (printf "drainguard.hold: the hold keeps the operator's Deployment from being deleted, and the %s %s is none: remove drainguard.hold.kinds (the guard keeps its RBAC alive all the same), or run the operator as a Deployment" $kind $d.metadata.name) -}}
{{- end }}{{ end -}}
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
{{- $c := include "drainguard.config" $root | fromJson -}}
{{- $container := $c.container -}}
{{- $containers := list -}}
{{- $found := false -}}
{{- $memoryNote := "" -}}
{{- range $pod.containers -}}
{{- if eq .name $container -}}
{{- $found = true -}}
{{- $where := printf "the %s %s's container %q" $kind $d.metadata.name .name -}}
{{- if eq $v.mode "wrap" -}}
{{- $command := .command | default $v.operator.command -}}
{{- if not $command -}}
{{- fail (printf "drainguard: %s sets no command (its image's ENTRYPOINT runs), and in wrap mode drainguard must start the operator itself: set drainguard.operator.command to that entrypoint (such as [/bin/my-operator]), or drainguard.mode: native-sidecar, which needs none" $where) -}}
{{- end -}}
{{- if not $c.token -}}
{{- fail (printf "drainguard: the %s %s's pod mounts no ServiceAccount token (automountServiceAccountToken: false), and in wrap mode drainguard, which needs one for the guard, runs in the operator's container: a token there would be the operator's too. Set drainguard.mode: native-sidecar (drainguard's container alone gets a token), or mount a token yourself and set automountServiceAccountToken in the chart" $kind $d.metadata.name) -}}
{{- end -}}
{{- $_ := set . "command" (include "drainguard.operatorCommand" (dict "root" $root "command" $command) | fromJsonArray) -}}
{{- /* drainguard runs in this container: its memory is added to the container's. */ -}}
{{- $resources := .resources | default dict -}}
{{- $memoryNote = include "drainguard.memoryNote" (dict "root" $root "resources" $resources) -}}
{{- range $key, $change := (include "drainguard.wrapMemory" (dict "root" $root "resources" $resources) | fromJson) -}}
{{- $_ := set (get $resources $key) "memory" $change.to -}}
{{- end -}}
{{- else -}}
{{- if and .lifecycle .lifecycle.preStop (not $v.operator.replacePreStop) -}}
{{- fail (printf "drainguard: %s already has a preStop hook (%s), and a container has one: drainguard's, `drainguard prestop`, drains the operator before the kubelet's SIGTERM. Remove the chart's hook, or set drainguard.operator.replacePreStop: true to replace it with drainguard's (the drain itself waits until the operator finished its work), or use drainguard.mode: wrap, which needs no hook" $where (keys .lifecycle.preStop | sortAlpha | join ", ")) -}}
{{- end -}}
{{- $lifecycle := .lifecycle | default dict -}}
{{- $_ := set $lifecycle "preStop" (include "drainguard.operatorLifecycle" $root | fromYaml).preStop -}}
{{- $_ := set . "lifecycle" $lifecycle -}}
{{- end -}}
{{- $_ := set . "env" (concat (.env | default list) (include "drainguard.operatorEnv" $root | fromYamlArray)) -}}
{{- $_ := set . "volumeMounts" (concat (.volumeMounts | default list) (include "drainguard.operatorVolumeMounts" $root | fromYamlArray)) -}}
{{- end -}}
{{- $containers = append $containers . -}}
{{- end -}}
{{- with $memoryNote -}}
{{- $_ := set $d.metadata "annotations" (merge (dict "drainguard.dev/memory" .) $d.metadata.annotations) -}}
{{- end -}}
{{- if not $found }}{{ fail (printf "drainguard: the %s %s has no container %q: set drainguard.operator.container to the operator's container" $kind $d.metadata.name $container) }}{{ end -}}
{{- $containers = concat $containers (include "drainguard.containers" $root | fromYamlArray) -}}
{{- $_ := set $pod "containers" $containers -}}
{{- $_ := set $pod "initContainers" (concat ($pod.initContainers | default list) (include "drainguard.initContainers" $root | fromYamlArray)) -}}
{{- $_ := set $pod "volumes" (concat ($pod.volumes | default list) (include "drainguard.volumes" $root | fromYamlArray)) -}}
{{- end -}}
{{- toYaml $d -}}
{{- end -}}
