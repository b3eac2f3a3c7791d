{{/*
The bus URL the chart builds (MCP_FLEET_BUS), when it does not come from bus.existingSecret:
Redis Sentinel or NATS cluster when enabled, bus.url otherwise. Every replica must use the
same URL; the node parses the query options.
*/}}
{{- define "mcp-fleet.busUrl" -}}
{{- $bus := .Values.bus }}
{{- if $bus.redisSentinel.enabled }}
{{- $s := $bus.redisSentinel }}
{{- printf "redis+sentinel://%s/%s" (join "," $s.sentinels) $s.masterName }}
{{- with $s.stream }}?stream={{ . | urlquery }}{{ end }}
{{- else if $bus.nats.enabled }}
{{- $n := $bus.nats }}
{{- $query := list (printf "replicas=%d" (int $n.replicas)) }}
{{- with $n.stream }}{{ $query = append $query (printf "stream=%s" (urlquery .)) }}{{ end }}
{{- if $n.credsSecret }}
{{- $query = append $query (printf "creds=%s/%s" (include "mcp-fleet.natsCredsDir" .) $n.credsSecretKey) }}
{{- end }}
{{- printf "%s://%s?%s" (ternary "tls" "nats" $n.tls) (join "," $n.servers) (join "&" $query) }}
{{- else }}
{{- $bus.url }}
{{- end }}
{{- end }}

{{/* One line describing the bus source, for NOTES. */}}
{{- define "mcp-fleet.busDescription" -}}
{{- if .Values.bus.existingSecret }}
{{- printf "from Secret %s (key %s)" .Values.bus.existingSecret .Values.bus.existingSecretKey }}
{{- else }}
{{- include "mcp-fleet.busUrl" . }}
{{- end }}
{{- end }}
