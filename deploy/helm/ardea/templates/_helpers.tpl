{{/* The chart's name. */}}
{{- define "ardea.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The full name: the release's name, followed by the chart's unless the
release's name holds it already (release "ardea" gives "ardea", release
"prod" gives "prod-ardea"). Pods are <fullname>-0, -1, ...
*/}}
{{- define "ardea.fullname" -}}
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

{{/* The headless Service (the pods' stable DNS names). */}}
{{- define "ardea.headless" -}}
{{- printf "%s-headless" (include "ardea.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "ardea.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "ardea.labels" -}}
helm.sh/chart: {{ include "ardea.chart" . }}
{{ include "ardea.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: ardea
{{- end }}

{{- define "ardea.selectorLabels" -}}
app.kubernetes.io/name: {{ include "ardea.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: server
{{- end }}

{{/* The Secret holding the cluster secret. */}}
{{- define "ardea.secretName" -}}
{{- if .Values.clusterSecret.existingSecret }}
{{- .Values.clusterSecret.existingSecret }}
{{- else }}
{{- printf "%s-cluster-secret" (include "ardea.fullname" .) }}
{{- end }}
{{- end }}

{{- define "ardea.serviceAccountName" -}}
{{- if .Values.serviceAccount.name }}
{{- .Values.serviceAccount.name }}
{{- else if .Values.rbac.create }}
{{- include "ardea.fullname" . }}
{{- else }}
{{- "default" }}
{{- end }}
{{- end }}

{{- define "ardea.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{- define "ardea.secretInitImage" -}}
{{- if .Values.secretInit.image.repository }}
{{- printf "%s:%s" .Values.secretInit.image.repository (default "latest" .Values.secretInit.image.tag) }}
{{- else }}
{{- include "ardea.image" . }}
{{- end }}
{{- end }}

{{/*
Every node's route URL, comma separated: nats://<pod>.<headless>.<ns>.svc.cluster.local:<cluster port>
for pods 0 .. replicas-1 (each node lists its own too).
*/}}
{{- define "ardea.routes" -}}
{{- $full := include "ardea.fullname" . }}
{{- $headless := include "ardea.headless" . }}
{{- $routes := list }}
{{- range $i := until (int .Values.replicas) }}
{{- $routes = append $routes (printf "nats://%s-%d.%s.%s.svc.cluster.local:%d" $full $i $headless $.Release.Namespace (int $.Values.service.ports.cluster)) }}
{{- end }}
{{- join "," $routes }}
{{- end }}

{{/* Checks of the values that would make a cluster that cannot work. */}}
{{- define "ardea.validate" -}}
{{- if lt (int .Values.replicas) 1 }}
{{- fail "replicas must be at least 1" }}
{{- end }}
{{- $js := int .Values.jetstreamReplicas }}
{{- if or (lt $js 1) (gt $js 5) }}
{{- fail "jetstreamReplicas must be 1 to 5 (ardea server --replicas)" }}
{{- end }}
{{- if gt $js (int .Values.replicas) }}
{{- fail "jetstreamReplicas cannot exceed replicas: JetStream needs a node for every copy" }}
{{- end }}
{{- if and (not .Values.clusterSecret.existingSecret) (not .Values.clusterSecret.generate) }}
{{- fail "clusterSecret: set existingSecret or generate" }}
{{- end }}
{{- if and .Values.tls.enabled (not .Values.tls.secretName) }}
{{- fail "tls.enabled needs tls.secretName (a kubernetes.io/tls Secret)" }}
{{- end }}
{{- if not (has .Values.scheduler (list "processes" "kubernetes")) }}
{{- fail "scheduler must be processes or kubernetes" }}
{{- end }}
{{- if and (eq .Values.scheduler "kubernetes") (not .Values.rbac.create) (not .Values.serviceAccount.name) }}
{{- fail "scheduler kubernetes needs rbac.create, or serviceAccount.name bound to a Role like templates/role.yaml's" }}
{{- end }}
{{- end }}

{{/*
The deployment file the nodes read (--config): the config value, then,
with scheduler kubernetes, its scheduler: and kubernetes: sections (the
topologies' containers as pods in the release's namespace, reaching NATS
through the client Service). Empty: no --config.
*/}}
{{- define "ardea.deploymentFile" -}}
{{- with .Values.config }}
{{ . | trim }}
{{- end }}
{{- if eq .Values.scheduler "kubernetes" }}
scheduler: kubernetes
kubernetes:
  namespace: {{ .Release.Namespace }}
  image: {{ default (include "ardea.image" .) .Values.kubernetes.image | quote }}
  image_pull_policy: {{ .Values.image.pullPolicy }}
  nats_url: {{ printf "nats://%s.%s.svc.cluster.local:%d" (include "ardea.fullname" .) .Release.Namespace (int .Values.service.ports.nats) | quote }}
  {{- with .Values.kubernetes.resources }}
  resources:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.kubernetes.nodeSelector }}
  node_selector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.kubernetes.compileCache }}
  compile_cache: {{ . | quote }}
  {{- end }}
{{- end }}
{{- end }}
