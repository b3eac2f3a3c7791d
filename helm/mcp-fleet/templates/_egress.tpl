{{/*
The NetworkPolicy's egress rules (a YAML list of NetworkPolicyEgressRule), when
networkPolicy.egress.enabled: DNS, the bus's ports, the ports of the OAuth issuer / JWKS
URL and the OTLP endpoint when those features are on, then networkPolicy.egress.rules.
Rules derived from URLs carry ports only (any destination on them): NetworkPolicy cannot
name hosts, and ipBlock does not match pod IPs on every CNI. The metadata endpoint
(169.254.169.254:80) stays out unless a rule opens port 80 to everything.
*/}}
{{- define "mcp-fleet.egressRules" -}}
{{- $eg := .Values.networkPolicy.egress -}}
# DNS.
- ports:
    - port: 53
      protocol: UDP
    - port: 53
      protocol: TCP
  {{- with $eg.dns }}
  to:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- $busPorts := include "mcp-fleet.busPorts" . | fromJsonArray }}
{{- if $busPorts }}
# The bus.
- ports:
    {{- range $busPorts }}
    - port: {{ . }}
      protocol: TCP
    {{- end }}
  {{- with $eg.bus.to }}
  to:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end }}
{{- $urls := list }}
{{- if .Values.auth.enabled }}
{{- $urls = append $urls .Values.auth.issuer }}
{{- with .Values.auth.jwksUrl }}{{ $urls = append $urls . }}{{ end }}
{{- end }}
{{- if .Values.otel.enabled }}{{ $urls = append $urls .Values.otel.endpoint }}{{ end }}
{{- $ports := list }}
{{- range $urls }}{{ $ports = append $ports (include "mcp-fleet.urlPort" . | int) }}{{ end }}
{{- if $ports }}
# The OAuth issuer / JWKS and the OTLP collector.
- ports:
    {{- range uniq $ports }}
    - port: {{ . }}
      protocol: TCP
    {{- end }}
{{- end }}
{{- with $eg.rules }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* The port of a URL: explicit, else its scheme's (https 443, http 80). */}}
{{- define "mcp-fleet.urlPort" -}}
{{- $authority := regexReplaceAll "^[A-Za-z][A-Za-z0-9+.-]*://([^/?#]*@)?([^/?#]*).*$" . "${2}" }}
{{- $port := regexFind ":[0-9]+$" $authority | trimPrefix ":" }}
{{- default (ternary "443" "80" (hasPrefix "https:" .)) $port }}
{{- end }}

{{/*
The bus's TCP ports as a JSON list: networkPolicy.egress.bus.ports, else those of the URL
the chart builds (each host's port, or the scheme's default: redis 6379, Sentinel 26379 plus
6379 for the masters it names, Redis Cluster each listed node's port, NATS 4222); none for
memory://. A cluster whose nodes listen on other ports than the listed ones needs
networkPolicy.egress.bus.ports. With bus.existingSecret the
chart cannot read the URL: mcp-fleet.validate requires bus.ports then.
*/}}
{{- define "mcp-fleet.busPorts" -}}
{{- $ports := list }}
{{- if .Values.networkPolicy.egress.bus.ports }}
{{- $ports = .Values.networkPolicy.egress.bus.ports }}
{{- else if not .Values.bus.existingSecret }}
{{- $url := include "mcp-fleet.busUrl" . }}
{{- $scheme := regexReplaceAll "://.*$" $url "" | lower }}
{{- $defaults := dict "redis" 6379 "rediss" 6379 "redis+sentinel" 26379 "rediss+sentinel" 26379 "redis+cluster" 6379 "rediss+cluster" 6379 "nats" 4222 "tls" 4222 }}
{{- if hasKey $defaults $scheme }}
{{- $hosts := regexReplaceAll "^[^:]+://([^/?#]*@)?([^/?#]*).*$" $url "${2}" }}
{{- range splitList "," $hosts }}
{{- $port := regexFind ":[0-9]+$" . | trimPrefix ":" }}
{{- $ports = append $ports (default (get $defaults $scheme) $port | int) }}
{{- end }}
{{- if contains "sentinel" $scheme }}{{ $ports = append $ports 6379 }}{{ end }}
{{- end }}
{{- end }}
{{- toJson (uniq $ports) }}
{{- end }}
