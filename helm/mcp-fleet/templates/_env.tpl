{{/*
The container's environment as the chart sets it (a YAML list of EnvVar). extraEnv is
appended after it in the Deployment; mcp-fleet.validate refuses extraEnv names that appear
here, since duplicate names make server-side apply fail and are ambiguous to read.
*/}}
{{- define "mcp-fleet.env" -}}
{{- /* From a Secret, always: the URL may carry a password (templates/secret-bus.yaml). */}}
- name: MCP_FLEET_BUS
  valueFrom:
    secretKeyRef:
      name: {{ include "mcp-fleet.busSecretName" . }}
      key: {{ include "mcp-fleet.busSecretKey" . }}
- name: MCP_FLEET_BUS_CONNECT_SECS
  value: {{ .Values.bus.connectSecs | int | toString | quote }}
- name: MCP_FLEET_READY_BUS_GRACE_SECS
  value: {{ .Values.bus.readyGraceSecs | int | toString | quote }}
- name: MCP_FLEET_NODE_ID
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
{{- /* The execution identity (README, Identity and audit): the pod's UID and the image. */}}
- name: MCP_FLEET_POD_UID
  valueFrom:
    fieldRef:
      fieldPath: metadata.uid
- name: MCP_FLEET_IMAGE
  value: {{ include "mcp-fleet.image" . | quote }}
{{- if .Values.adminToken.enabled }}
- name: MCP_FLEET_ADMIN_TOKEN_FILE
  value: {{ printf "%s/token" (include "mcp-fleet.adminTokenDir" .) | quote }}
{{- else }}
{{- /* The admin port listens on 0.0.0.0 (the probes need it): no token is an explicit choice. */}}
- name: MCP_FLEET_ADMIN_INSECURE
  value: "true"
{{- end }}
{{- if .Values.catalog.enabled }}
- name: MCP_FLEET_CATALOG
  value: {{ printf "%s/%s" (trimSuffix "/" .Values.catalog.mountPath) .Values.catalog.key | quote }}
{{- with .Values.catalog.filesRoot }}
- name: MCP_FLEET_CATALOG_FILES_ROOT
  value: {{ . | quote }}
{{- end }}
{{- with .Values.catalog.envAllow }}
- name: MCP_FLEET_CATALOG_ENV_ALLOW
  value: {{ join "," . | quote }}
{{- end }}
{{- end }}
- name: MCP_FLEET_LOG_JSON
  value: {{ ternary "true" "false" .Values.logJson | quote }}
- name: MCP_FLEET_ALLOWED_ORIGINS
  value: {{ join "," .Values.allowedOrigins | quote }}
- name: MCP_FLEET_MAX_STREAMS
  value: {{ .Values.maxStreams | int | toString | quote }}
- name: MCP_FLEET_KEEPALIVE_SECS
  value: {{ .Values.keepaliveSecs | int | toString | quote }}
- name: MCP_FLEET_MAX_STREAM_LIFETIME_SECS
  value: {{ .Values.maxStreamLifetimeSecs | int | toString | quote }}
- name: MCP_FLEET_MAX_BODY_BYTES
  value: {{ .Values.maxBodyBytes | int64 | toString | quote }}
- name: MCP_FLEET_SHUTDOWN_SECS
  value: {{ .Values.shutdownSecs | int | toString | quote }}
{{- with .Values.auth }}
{{- if .enabled }}
- name: MCP_FLEET_AUTH_ISSUER
  value: {{ .issuer | quote }}
- name: MCP_FLEET_AUTH_AUDIENCE
  value: {{ .audience | quote }}
{{- with .jwksUrl }}
- name: MCP_FLEET_AUTH_JWKS_URL
  value: {{ . | quote }}
{{- end }}
{{- with .tenantClaim }}
- name: MCP_FLEET_AUTH_TENANT_CLAIM
  value: {{ . | quote }}
{{- end }}
{{- with .scopes }}
- name: MCP_FLEET_AUTH_SCOPES
  value: {{ join "," . | quote }}
{{- end }}
{{- if not (kindIs "invalid" .maxStreamsPerPrincipal) }}
- name: MCP_FLEET_MAX_STREAMS_PER_PRINCIPAL
  value: {{ .maxStreamsPerPrincipal | int | toString | quote }}
{{- end }}
{{- if not (kindIs "invalid" .ratePerPrincipal) }}
- name: MCP_FLEET_RATE_PER_PRINCIPAL
  value: {{ .ratePerPrincipal | toString | quote }}
{{- end }}
{{- if not (kindIs "invalid" .rateBurstPerPrincipal) }}
- name: MCP_FLEET_RATE_BURST_PER_PRINCIPAL
  value: {{ .rateBurstPerPrincipal | int | toString | quote }}
{{- end }}
{{- end }}
{{- end }}
{{- if .Values.requestStateKey.existingSecret }}
- name: MCP_FLEET_REQUEST_STATE_KEY_FILE
  value: {{ printf "%s/key" (include "mcp-fleet.requestStateKeyDir" .) | quote }}
{{- end }}
{{- if .Values.otel.enabled }}
- name: K8S_NAMESPACE_NAME
  valueFrom:
    fieldRef:
      fieldPath: metadata.namespace
- name: K8S_NODE_NAME
  valueFrom:
    fieldRef:
      fieldPath: spec.nodeName
- name: MCP_FLEET_OTLP_ENDPOINT
  value: {{ .Values.otel.endpoint | quote }}
- name: OTEL_SERVICE_NAME
  value: {{ .Values.otel.serviceName | default (include "mcp-fleet.fullname" .) | quote }}
{{- /* $(VAR) expands variables defined earlier in this list (Kubernetes dependent env vars). */}}
{{- $attrs := list "k8s.namespace.name=$(K8S_NAMESPACE_NAME)" "k8s.pod.name=$(MCP_FLEET_NODE_ID)" "k8s.node.name=$(K8S_NODE_NAME)" }}
{{- range $k, $v := .Values.otel.resourceAttributes }}
{{- $attrs = append $attrs (printf "%s=%s" $k (toString $v)) }}
{{- end }}
- name: OTEL_RESOURCE_ATTRIBUTES
  value: {{ join "," $attrs | quote }}
{{- end }}
{{- with .Values.audit.target }}
- name: MCP_FLEET_AUDIT_FILE
  value: {{ if eq . "stdout" }}"-"{{ else }}{{ . | quote }}{{ end }}
{{- end }}
{{- if .Values.audit.arguments }}
- name: MCP_FLEET_AUDIT_ARGUMENTS
  value: "true"
{{- end }}
- name: RUST_LOG
  value: {{ .Values.logLevel | quote }}
{{- end }}
