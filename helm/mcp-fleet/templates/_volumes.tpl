{{/*
The pod's volumes and the container's mounts: the chart's own (admin token, catalog, NATS
credentials, requestState key), then extraVolumes / extraVolumeMounts. Secrets and ConfigMaps are mounted as
directories, never with subPath, so the kubelet keeps them current in running pods.
*/}}
{{- define "mcp-fleet.volumes" -}}
{{- if .Values.adminToken.enabled }}
- name: admin-token
  secret:
    secretName: {{ include "mcp-fleet.adminTokenSecretName" . }}
    items:
      - key: {{ ternary .Values.adminToken.existingSecretKey "token" (not (empty .Values.adminToken.existingSecret)) }}
        path: token
    # Readable by the node's non-root user without an fsGroup.
    defaultMode: 0444
{{- end }}
{{- if .Values.catalog.enabled }}
- name: catalog
  configMap:
    name: {{ include "mcp-fleet.catalogConfigMapName" . }}
    items:
      - key: {{ .Values.catalog.key }}
        path: {{ .Values.catalog.key }}
{{- end }}
{{- if and .Values.bus.nats.enabled .Values.bus.nats.credsSecret }}
- name: nats-creds
  secret:
    secretName: {{ .Values.bus.nats.credsSecret }}
    items:
      - key: {{ .Values.bus.nats.credsSecretKey }}
        path: {{ .Values.bus.nats.credsSecretKey }}
    defaultMode: 0444
{{- end }}
{{- with .Values.requestStateKey }}
{{- if .existingSecret }}
- name: request-state-key
  secret:
    secretName: {{ .existingSecret }}
    items:
      - key: {{ .existingSecretKey }}
        path: key
    defaultMode: 0444
{{- end }}
{{- end }}
{{- with .Values.extraVolumes }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{- define "mcp-fleet.volumeMounts" -}}
{{- if .Values.adminToken.enabled }}
- name: admin-token
  mountPath: {{ include "mcp-fleet.adminTokenDir" . }}
  readOnly: true
{{- end }}
{{- if .Values.catalog.enabled }}
- name: catalog
  mountPath: {{ .Values.catalog.mountPath }}
  readOnly: true
{{- end }}
{{- if and .Values.bus.nats.enabled .Values.bus.nats.credsSecret }}
- name: nats-creds
  mountPath: {{ include "mcp-fleet.natsCredsDir" . }}
  readOnly: true
{{- end }}
{{- if .Values.requestStateKey.existingSecret }}
- name: request-state-key
  mountPath: {{ include "mcp-fleet.requestStateKeyDir" . }}
  readOnly: true
{{- end }}
{{- with .Values.extraVolumeMounts }}
{{ toYaml . }}
{{- end }}
{{- end }}
