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

{{/* Checks that fail the render early. */}}
{{- define "mcp-fleet.validate" -}}
{{- if and (not .Values.bus.existingSecret) (not .Values.bus.url) }}
{{- fail "set bus.url or bus.existingSecret" }}
{{- end }}
{{- if and (not .Values.bus.existingSecret) (hasPrefix "memory://" (toString .Values.bus.url)) (gt (int .Values.replicaCount) 1) }}
{{- fail "bus.url memory:// does not cross processes: use redis:// or nats:// with replicaCount > 1" }}
{{- end }}
{{- if not (has (toString .Values.preStop.type) (list "sleep" "exec" "none")) }}
{{- fail "preStop.type must be sleep, exec or none" }}
{{- end }}
{{- if not .Values.allowedOrigins }}
{{- fail "allowedOrigins must list at least one hostname (or \"*\")" }}
{{- end }}
{{- end }}
