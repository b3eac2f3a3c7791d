{{/*
Checks that fail the render with a message naming the values to fix. values.schema.json
catches misspelt keys and wrong types; these catch combinations a schema cannot express.
Each one has a case in ../ci-invalid/ that scripts/check-deploy.sh expects to fail.
*/}}
{{- define "mcp-fleet.validate" -}}
{{- include "mcp-fleet.validateBus" . }}
{{- include "mcp-fleet.validateFeatures" . }}
{{- include "mcp-fleet.validateScaling" . }}
{{- include "mcp-fleet.validateHTTPRoute" . }}
{{- include "mcp-fleet.validateExtras" . }}
{{- include "mcp-fleet.validateExposure" . }}
{{- include "mcp-fleet.validateFilesRoot" . }}
{{- if not .Values.allowedOrigins }}
{{- fail "allowedOrigins must list at least one hostname (or \"*\")" }}
{{- end }}
{{- if not (has (toString .Values.preStop.type) (list "sleep" "exec" "none")) }}
{{- fail "preStop.type must be sleep, exec or none" }}
{{- end }}
{{- /* Fails by itself when an explicit grace period is too short. */}}
{{- $_ := include "mcp-fleet.terminationGracePeriodSeconds" . }}
{{- end }}

{{- define "mcp-fleet.validateBus" -}}
{{- $bus := .Values.bus }}
{{- if and $bus.redisSentinel.enabled $bus.nats.enabled }}
{{- fail "bus.redisSentinel.enabled and bus.nats.enabled are both true: the fleet uses one bus" }}
{{- end }}
{{- if and $bus.redisCluster.enabled (or $bus.redisSentinel.enabled $bus.nats.enabled) }}
{{- fail "bus.redisCluster.enabled with bus.redisSentinel or bus.nats enabled: the fleet uses one bus" }}
{{- end }}
{{- if and $bus.existingSecret (or $bus.redisSentinel.enabled $bus.redisCluster.enabled $bus.nats.enabled) }}
{{- fail "bus.existingSecret holds the whole bus URL: disable bus.redisSentinel / bus.redisCluster / bus.nats, or drop bus.existingSecret" }}
{{- end }}
{{- if and $bus.redisCluster.enabled (not $bus.redisCluster.nodes) }}
{{- fail "bus.redisCluster.enabled needs bus.redisCluster.nodes (host:port list)" }}
{{- end }}
{{- if and $bus.redisSentinel.enabled (or (not $bus.redisSentinel.sentinels) (not $bus.redisSentinel.masterName)) }}
{{- fail "bus.redisSentinel.enabled needs bus.redisSentinel.sentinels (host:port list) and bus.redisSentinel.masterName" }}
{{- end }}
{{- if and $bus.nats.enabled (not $bus.nats.servers) }}
{{- fail "bus.nats.enabled needs bus.nats.servers (host:port list)" }}
{{- end }}
{{- with .Values.networkPolicy }}
{{- if and .enabled .egress.enabled $bus.existingSecret (not .egress.bus.ports) }}
{{- fail "networkPolicy.egress.enabled with bus.existingSecret needs networkPolicy.egress.bus.ports (the chart cannot read the URL in the Secret), or networkPolicy.egress.enabled=false" }}
{{- end }}
{{- end }}
{{- if not (or $bus.existingSecret $bus.redisSentinel.enabled $bus.redisCluster.enabled $bus.nats.enabled $bus.url) }}
{{- fail "set bus.url, bus.existingSecret, bus.redisSentinel, bus.redisCluster or bus.nats" }}
{{- end }}
{{- $maxReplicas := ternary .Values.autoscaling.maxReplicas .Values.replicaCount .Values.autoscaling.enabled | int }}
{{- if and (hasPrefix "memory://" (include "mcp-fleet.busUrl" .)) (not $bus.existingSecret) (gt $maxReplicas 1) }}
{{- fail "bus.url memory:// does not cross processes: use redis:// or nats:// with more than one replica" }}
{{- end }}
{{- end }}

{{- define "mcp-fleet.validateFeatures" -}}
{{- with .Values.catalog }}
{{- if and .enabled (eq (len (compact (list .content .existingConfigMap))) 0) }}
{{- fail "catalog.enabled needs catalog.content (TOML) or catalog.existingConfigMap" }}
{{- end }}
{{- if and .enabled .content .existingConfigMap }}
{{- fail "catalog.content and catalog.existingConfigMap are both set: choose one" }}
{{- end }}
{{- end }}
{{- if and .Values.auth.enabled (or (not .Values.auth.issuer) (not .Values.auth.audience)) }}
{{- fail "auth.enabled needs auth.issuer and auth.audience" }}
{{- end }}
{{- with .Values.auth }}
{{- if and .enabled (not (kindIs "invalid" .rateBurstPerPrincipal)) (or (kindIs "invalid" .ratePerPrincipal) (eq (toString .ratePerPrincipal) "0")) }}
{{- fail "auth.rateBurstPerPrincipal needs auth.ratePerPrincipal above 0 (the node refuses a burst without a rate)" }}
{{- end }}
{{- end }}
{{- if and .Values.auth.enabled .Values.tests.enabled (not .Values.tests.authTokenSecret) }}
{{- fail "auth.enabled: the helm test needs a bearer token; set tests.authTokenSecret (a Secret holding one) or tests.enabled=false" }}
{{- end }}
{{- if and .Values.otel.enabled (not .Values.otel.endpoint) }}
{{- fail "otel.enabled needs otel.endpoint (the OTLP collector)" }}
{{- end }}
{{- with .Values.podDisruptionBudget }}
{{- if and .enabled (eq (kindIs "invalid" .maxUnavailable) (kindIs "invalid" .minAvailable)) }}
{{- fail "podDisruptionBudget: set exactly one of maxUnavailable and minAvailable (the other null)" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "mcp-fleet.validateScaling" -}}
{{- with .Values.autoscaling }}
{{- if .enabled }}
{{- if gt (int .minReplicas) (int .maxReplicas) }}
{{- fail (printf "autoscaling.minReplicas (%d) exceeds autoscaling.maxReplicas (%d)" (int .minReplicas) (int .maxReplicas)) }}
{{- end }}
{{- $cpu := not (kindIs "invalid" .targetCPUUtilizationPercentage) }}
{{- if not (or $cpu .listenStreams.enabled .extraMetrics) }}
{{- fail "autoscaling.enabled needs a metric: targetCPUUtilizationPercentage, listenStreams.enabled or extraMetrics" }}
{{- end }}
{{- if and $cpu (not (dig "requests" "cpu" "" ($.Values.resources | default dict))) }}
{{- fail "autoscaling.targetCPUUtilizationPercentage is a share of resources.requests.cpu: set resources.requests.cpu" }}
{{- end }}
{{- if and .listenStreams.enabled (ge (int .listenStreams.averageValue) (int $.Values.maxStreams)) }}
{{- fail (printf "autoscaling.listenStreams.averageValue (%d) must be below maxStreams (%d), or replicas refuse streams before the HPA adds pods" (int .listenStreams.averageValue) (int $.Values.maxStreams)) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}

{{/*
A route timeout applies to the whole response, and a listen stream is one response that the
node closes after up to maxStreamLifetimeSecs +10 %: a finite timeout must outlast that.
*/}}
{{- define "mcp-fleet.validateHTTPRoute" -}}
{{- with .Values.httpRoute }}
{{- if .enabled }}
{{- if not .parentRefs }}
{{- fail "httpRoute.enabled needs httpRoute.parentRefs (the Gateway to attach to)" }}
{{- end }}
{{- $lifetimeMs := mul (int $.Values.maxStreamLifetimeSecs) 1100 }}
{{- range $name, $value := .timeouts }}
{{- $ms := include "mcp-fleet.durationMillis" $value | int64 }}
{{- if and $value (gt $ms 0) (eq $lifetimeMs 0) }}
{{- fail (printf "httpRoute.timeouts.%s (%s) cuts every listen stream at that age, while maxStreamLifetimeSecs is 0 (streams never close by themselves): use \"0s\" or set maxStreamLifetimeSecs" $name $value) }}
{{- else if and $value (gt $ms 0) (le $ms $lifetimeMs) }}
{{- fail (printf "httpRoute.timeouts.%s (%s) would cut listen streams before their graceful close at up to maxStreamLifetimeSecs +10 %% (%ds): use \"0s\" or more than that" $name $value (div $lifetimeMs 1000)) }}
{{- end }}
{{- end }}
{{- $request := include "mcp-fleet.durationMillis" (.timeouts.request | default "") | int64 }}
{{- $backend := include "mcp-fleet.durationMillis" (.timeouts.backendRequest | default "") | int64 }}
{{- if and (gt $request 0) (gt $backend $request) }}
{{- fail (printf "httpRoute.timeouts.backendRequest (%s) must not exceed httpRoute.timeouts.request (%s) (Gateway API rule)" .timeouts.backendRequest .timeouts.request) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}

{{/*
Without auth every tool is served to whoever reaches /mcp: publishing it beyond the cluster
must be a decision (auth.allowAnonymous), not a default.
*/}}
{{- define "mcp-fleet.validateExposure" -}}
{{- if not (or .Values.auth.enabled .Values.auth.allowAnonymous) }}
{{- $public := "" }}
{{- if .Values.ingress.enabled }}{{ $public = "ingress.enabled" }}
{{- else if .Values.httpRoute.enabled }}{{ $public = "httpRoute.enabled" }}
{{- else if has .Values.service.type (list "LoadBalancer" "NodePort") }}{{ $public = printf "service.type=%s" .Values.service.type }}
{{- end }}
{{- if $public }}
{{- fail (printf "%s publishes /mcp with auth.enabled=false: anyone who reaches it may call every tool. Turn on auth (auth.enabled, auth.issuer, auth.audience) or set auth.allowAnonymous=true" $public) }}
{{- end }}
{{- end }}
{{- end }}

{{- define "mcp-fleet.validateExtras" -}}
{{- $chartEnv := list }}
{{- range (include "mcp-fleet.env" . | fromYamlArray) }}
{{- $chartEnv = append $chartEnv .name }}
{{- end }}
{{- range .Values.extraEnv }}
{{- if has .name $chartEnv }}
{{- fail (printf "extraEnv sets %s, which the chart already sets from its values: use the value instead" .name) }}
{{- end }}
{{- end }}
{{- $chartVolumes := list "admin-token" "catalog" "nats-creds" "request-state-key" }}
{{- range .Values.extraVolumes }}
{{- if has .name $chartVolumes }}
{{- fail (printf "extraVolumes: the volume name %q is the chart's own (%s): pick another name" .name (join ", " $chartVolumes)) }}
{{- end }}
{{- end }}
{{- end }}

{{/*
The catalog's files root (catalog.filesRoot, else catalog.mountPath) must neither hold nor
lie inside a Secret mount: a `file` resource could then serve the admin token, the
requestState key or a credential to any caller, and whoever edits the catalog ConfigMap
need not be allowed to read the Secrets. The node refuses the same at start for the files
it is given (--admin-token-file, --request-state-key-file); this catches the other mounts.
*/}}
{{- define "mcp-fleet.validateFilesRoot" -}}
{{- if .Values.catalog.enabled }}
{{- $root := clean (default .Values.catalog.mountPath .Values.catalog.filesRoot) }}
{{- $mounts := dict }}
{{- if .Values.adminToken.enabled }}
{{- $_ := set $mounts "the admin token" (include "mcp-fleet.adminTokenDir" .) }}
{{- end }}
{{- if .Values.requestStateKey.existingSecret }}
{{- $_ := set $mounts "the requestState key" (include "mcp-fleet.requestStateKeyDir" .) }}
{{- end }}
{{- if and .Values.bus.nats.enabled .Values.bus.nats.credsSecret }}
{{- $_ := set $mounts "the NATS credentials" (include "mcp-fleet.natsCredsDir" .) }}
{{- end }}
{{- if .Values.serviceAccount.automountServiceAccountToken }}
{{- $_ := set $mounts "the ServiceAccount token" "/var/run/secrets/kubernetes.io/serviceaccount" }}
{{- end }}
{{- $secretVolumes := list }}
{{- range .Values.extraVolumes }}
{{- if or .secret .projected }}{{ $secretVolumes = append $secretVolumes .name }}{{ end }}
{{- end }}
{{- range .Values.extraVolumeMounts }}
{{- if has .name $secretVolumes }}
{{- $_ := set $mounts (printf "extraVolumeMounts %s" .name) .mountPath }}
{{- end }}
{{- end }}
{{- range $what, $path := $mounts }}
{{- $path = clean $path }}
{{- if or (eq $root "/") (eq $root $path) (hasPrefix (printf "%s/" $root) $path) (hasPrefix (printf "%s/" $path) $root) }}
{{- fail (printf "the catalog's files root %s (catalog.filesRoot, else catalog.mountPath) overlaps the Secret mounted at %s (%s): a catalog `file` resource could serve it; use a folder without Secrets" $root $path $what) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
