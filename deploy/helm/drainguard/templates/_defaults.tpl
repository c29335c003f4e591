{{/*
Generated from src/config/options.ts by
npm run generate; a test fails when it is out of date. drainguard's defaults
as the chart computes with them. Returns JSON
(include "drainguard.defaults" . | fromJson).
*/}}
{{- define "drainguard.defaults" -}}
{"stopTimeoutSeconds":5,"socket":"/run/drainguard/drain.sock"}
{{- end -}}
