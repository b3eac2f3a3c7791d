{{/*
The bus URL the chart builds (MCP_FLEET_BUS), when it does not come from bus.existingSecret:
Redis Sentinel, Redis Cluster or NATS cluster when enabled, bus.url otherwise. Every replica must use the
same URL; the node parses the query options.
*/}}
{{- define "mcp-fleet.busUrl" -}}
{{- $bus := .Values.bus }}
{{- if $bus.redisSentinel.enabled }}
{{- $s := $bus.redisSentinel }}
{{- printf "redis+sentinel://%s/%s" (join "," $s.sentinels) $s.masterName }}
{{- with $s.stream }}?stream={{ . | urlquery }}{{ end }}
{{- else if $bus.redisCluster.enabled }}
{{- $c := $bus.redisCluster }}
{{- $query := list }}
{{- with $c.shards }}{{ $query = append $query (printf "shards=%d" (int .)) }}{{ end }}
{{- with $c.stream }}{{ $query = append $query (printf "stream=%s" (urlquery .)) }}{{ end }}
{{- printf "%s://%s" (ternary "rediss+cluster" "redis+cluster" $c.tls) (join "," $c.nodes) }}
{{- with $query }}?{{ join "&" . }}{{ end }}
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

{{/*
A URL with its userinfo (user:password@) replaced by ***: what NOTES and the pod's
checksum annotation may show. A password with an unescaped "/" "?" or "#" would not parse as
one in the node either.
*/}}
{{- define "mcp-fleet.redactUrl" -}}
{{- regexReplaceAll "^([A-Za-z][A-Za-z0-9+.-]*://)[^/?#]*@" . "${1}***@" }}
{{- end }}

{{/*
The Secret holding MCP_FLEET_BUS and its key: bus.existingSecret, or the chart's own
"<fullname>-bus" (templates/secret-bus.yaml) with the URL the chart builds under "url". The
URL never appears in the Deployment: it may carry a password.
*/}}
{{- define "mcp-fleet.busSecretName" -}}
{{- if .Values.bus.existingSecret }}
{{- .Values.bus.existingSecret }}
{{- else }}
{{- printf "%s-bus" (include "mcp-fleet.fullname" . | trunc 59 | trimSuffix "-") }}
{{- end }}
{{- end }}
{{- define "mcp-fleet.busSecretKey" -}}
{{- ternary .Values.bus.existingSecretKey "url" (not (empty .Values.bus.existingSecret)) }}
{{- end }}

{{/* One line describing the bus source, for NOTES: never the password. */}}
{{- define "mcp-fleet.busDescription" -}}
{{- if .Values.bus.existingSecret }}
{{- printf "from Secret %s (key %s)" .Values.bus.existingSecret .Values.bus.existingSecretKey }}
{{- else }}
{{- printf "%s (from Secret %s, key url)" (include "mcp-fleet.redactUrl" (include "mcp-fleet.busUrl" .)) (include "mcp-fleet.busSecretName" .) }}
{{- end }}
{{- end }}
