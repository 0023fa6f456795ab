{{/* Chart name, truncated to a DNS label. */}}
{{- define "paygate.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Fully qualified release name. A release named "paygate" gives "paygate", so its objects are
named as in config/default (paygate-manager, paygate-manager-metrics, ...).
*/}}
{{- define "paygate.fullname" -}}
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

{{/* Name of the manager's Deployment, ClusterRole and bindings. */}}
{{- define "paygate.managerName" -}}
{{- printf "%s-manager" (include "paygate.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "paygate.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "paygate.managerName" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "paygate.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{- define "paygate.selectorLabels" -}}
app.kubernetes.io/name: {{ include "paygate.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: manager
{{- end }}

{{- define "paygate.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "paygate.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* Name of the apiserver's Deployment, Service, ClusterRole and bindings. */}}
{{- define "paygate.apiserverName" -}}
{{- printf "%s-apiserver" (include "paygate.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "paygate.apiserverServiceAccountName" -}}
{{- if .Values.apiserver.serviceAccount.create }}
{{- default (include "paygate.apiserverName" .) .Values.apiserver.serviceAccount.name }}
{{- else }}
{{- required "apiserver.serviceAccount.name is required when apiserver.serviceAccount.create is false" .Values.apiserver.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* Name of the Secret holding the checkout key, and the key in it. */}}
{{- define "paygate.checkoutKeySecretName" -}}
{{- default (printf "%s-checkout-key" (include "paygate.fullname" .)) .Values.apiserver.checkoutKey.existingSecret }}
{{- end }}

{{/* The apiserver's base URL inside the cluster (its Service). */}}
{{- define "paygate.apiserverInternalURL" -}}
{{- printf "http://%s.%s.svc" (include "paygate.apiserverName" .) .Release.Namespace }}
{{- if ne (int .Values.apiserver.service.port) 80 }}:{{ .Values.apiserver.service.port }}{{ end }}
{{- end }}

{{/* The URL the upstream provider posts results to: set, else the apiserver's internal route. */}}
{{- define "paygate.providerCallbackURL" -}}
{{- if .Values.providerCallbackURL }}
{{- .Values.providerCallbackURL }}
{{- else if .Values.apiserver.enabled }}
{{- printf "%s/internal/provider/callbacks" (include "paygate.apiserverInternalURL" .) }}
{{- end }}
{{- end }}

{{- define "paygate.apiserverSelectorLabels" -}}
app.kubernetes.io/name: {{ include "paygate.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: apiserver
{{- end }}

{{- define "paygate.apiserverLabels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "paygate.apiserverSelectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* The apiserver's public base URL: set, else from the ingress, else the in-cluster URL. */}}
{{- define "paygate.apiserverPublicURL" -}}
{{- $a := .Values.apiserver }}
{{- if $a.publicURL }}
{{- $a.publicURL | trimSuffix "/" }}
{{- else if and $a.ingress.enabled $a.ingress.hosts }}
{{- printf "%s://%s" (ternary "https" "http" (not (empty $a.ingress.tls))) (first $a.ingress.hosts) }}
{{- else }}
{{- include "paygate.apiserverInternalURL" . }}
{{- end }}
{{- end }}
