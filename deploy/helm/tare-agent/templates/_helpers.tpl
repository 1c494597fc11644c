{{/*
The agent's objects have fixed names (tare-agent, and the readers' ClusterRoles tare-agent-metrics-reader
and tare-cluster-reader) as tare agent manifest names them: tare cluster measure and the shipped scrape
configuration find the agents by them, so a cluster runs one release of this chart.
*/}}
{{- define "tare-agent.name" -}}tare-agent{{- end }}

{{/* Labels of the agent's pods; the DaemonSet selects on the first. */}}
{{- define "tare-agent.selectorLabels" -}}
app.kubernetes.io/name: tare-agent
app.kubernetes.io/part-of: tare
{{- end }}

{{/* Labels of every object: the pods' and Helm's own. */}}
{{- define "tare-agent.labels" -}}
{{ include "tare-agent.selectorLabels" . }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end }}

{{- define "tare-agent.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{- define "tare-agent.healthPort" -}}
{{ .Values.healthPort | default (add .Values.port 1) }}
{{- end }}

{{/* GOMEMLIMIT: goMemLimit, else three quarters of the memory limit (Mi or Gi), else none. */}}
{{- define "tare-agent.goMemLimit" -}}
{{- if .Values.goMemLimit -}}
{{ .Values.goMemLimit }}
{{- else if and .Values.resources.limits .Values.resources.limits.memory -}}
{{- $m := toString .Values.resources.limits.memory -}}
{{- if hasSuffix "Gi" $m -}}
{{ div (mul (trimSuffix "Gi" $m | atoi) 3072) 4 }}MiB
{{- else if hasSuffix "Mi" $m -}}
{{ div (mul (trimSuffix "Mi" $m | atoi) 3) 4 }}MiB
{{- else -}}
{{ fail "goMemLimit: give it, or resources.limits.memory in Mi or Gi" }}
{{- end -}}
{{- end -}}
{{- end }}

{{/* The namespace of the PodMonitor (and of Prometheus's token Secret). */}}
{{- define "tare-agent.podMonitorNamespace" -}}
{{ .Values.podMonitor.namespace | default .Release.Namespace }}
{{- end }}
