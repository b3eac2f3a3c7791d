{{/* Chart name. */}}
{{- define "mcp-fleet.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Fully qualified app name (release-based, at most 63 characters). */}}
{{- define "mcp-fleet.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* Name of the admin Service. */}}
{{- define "mcp-fleet.adminName" -}}
{{- printf "%s-admin" (include "mcp-fleet.fullname" . | trunc 57 | trimSuffix "-") }}
{{- end }}

{{- define "mcp-fleet.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Selector labels (immutable once deployed). */}}
{{- define "mcp-fleet.selectorLabels" -}}
app.kubernetes.io/name: {{ include "mcp-fleet.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: server
{{- end }}

{{/* Common labels. */}}
{{- define "mcp-fleet.labels" -}}
helm.sh/chart: {{ include "mcp-fleet.chart" . }}
{{ include "mcp-fleet.selectorLabels" . }}
{{- if .Chart.AppVersion }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* preStop sleep seconds actually used (0 without a hook). */}}
{{- define "mcp-fleet.preStopSeconds" -}}
{{- if eq (toString .Values.preStop.type) "none" }}0{{ else }}{{ int .Values.preStop.sleepSeconds }}{{ end }}
{{- end }}

{{/*
terminationGracePeriodSeconds: explicit, or preStop + shutdownSecs + slack. Either way it
must exceed preStop + shutdownSecs, or Kubernetes would SIGKILL the node mid-drain.
*/}}
{{- define "mcp-fleet.terminationGracePeriodSeconds" -}}
{{- $floor := add (include "mcp-fleet.preStopSeconds" . | int) (int .Values.shutdownSecs) }}
{{- if kindIs "invalid" .Values.terminationGracePeriodSeconds }}
{{- add $floor (int .Values.terminationGraceSlackSeconds) }}
{{- else }}
{{- $explicit := int .Values.terminationGracePeriodSeconds }}
{{- if le $explicit $floor }}
{{- fail (printf "terminationGracePeriodSeconds (%d) must exceed preStop.sleepSeconds + shutdownSecs (%d)" $explicit $floor) }}
{{- end }}
{{- $explicit }}
{{- end }}
{{- end }}

{{/*
Container ports. Fixed: the image's ENTRYPOINT passes --listen 0.0.0.0:8080 and
--admin-listen 0.0.0.0:9090. Pod annotations and the NetworkPolicy use these (the probes use
the named ports), never the Service ports.
*/}}
{{- define "mcp-fleet.httpContainerPort" -}}8080{{- end }}
{{- define "mcp-fleet.adminContainerPort" -}}9090{{- end }}

{{/* The image reference: by digest when one is given, else by tag (default appVersion). */}}
{{- define "mcp-fleet.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) }}
{{- end }}
{{- end }}

{{/* ServiceAccount the pods run as. */}}
{{- define "mcp-fleet.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "mcp-fleet.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* Secret holding the admin token (the chart's own unless adminToken.existingSecret). */}}
{{- define "mcp-fleet.adminTokenSecretName" -}}
{{- if .Values.adminToken.existingSecret }}
{{- .Values.adminToken.existingSecret }}
{{- else }}
{{- printf "%s-admin-token" (include "mcp-fleet.fullname" . | trunc 51 | trimSuffix "-") }}
{{- end }}
{{- end }}

{{/* ConfigMap holding the catalog (the chart's own unless catalog.existingConfigMap). */}}
{{- define "mcp-fleet.catalogConfigMapName" -}}
{{- if .Values.catalog.existingConfigMap }}
{{- .Values.catalog.existingConfigMap }}
{{- else }}
{{- printf "%s-catalog" (include "mcp-fleet.fullname" . | trunc 55 | trimSuffix "-") }}
{{- end }}
{{- end }}

{{/* Labels of the helm test pod (also admitted by a restricted NetworkPolicy). */}}
{{- define "mcp-fleet.testLabels" -}}
app.kubernetes.io/name: {{ include "mcp-fleet.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: test
{{- end }}

{{/* Where the chart mounts its own files in the container. */}}
{{- define "mcp-fleet.adminTokenDir" -}}/etc/mcp-fleet/admin-token{{- end }}
{{- define "mcp-fleet.natsCredsDir" -}}/etc/mcp-fleet/nats{{- end }}
{{- define "mcp-fleet.requestStateKeyDir" -}}/etc/mcp-fleet/request-state-key{{- end }}

{{/*
A Gateway API / Prometheus duration ("1h30m", "90s", "500ms") in milliseconds. Only the
units h, m, s and ms exist in those formats.
*/}}
{{- define "mcp-fleet.durationMillis" -}}
{{- $total := 0 }}
{{- range regexFindAll "[0-9]+(ms|h|m|s)" (toString .) -1 }}
{{- $n := regexFind "^[0-9]+" . | int64 }}
{{- $unit := trimPrefix (regexFind "^[0-9]+" .) . }}
{{- $factor := get (dict "h" 3600000 "m" 60000 "s" 1000 "ms" 1) $unit }}
{{- $total = add $total (mul $n $factor) }}
{{- end }}
{{- $total }}
{{- end }}
