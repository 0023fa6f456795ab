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

{{/*
An Ingress to the apiserver Service (apiserver-ingress.yaml): root, name, annotations and paths, a
list of {path, pathType}, for every host of apiserver.ingress (or one rule without a host).
*/}}
{{- define "paygate.apiserverIngress" -}}
{{- $root := .root }}
{{- $ing := $root.Values.apiserver.ingress }}
{{- $svc := include "paygate.apiserverName" $root }}
{{- $port := $root.Values.apiserver.service.port }}
{{- $paths := .paths }}
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: {{ .name }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "paygate.apiserverLabels" $root | nindent 4 }}
  {{- with .annotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
spec:
  {{- with $ing.className }}
  ingressClassName: {{ . }}
  {{- end }}
  {{- with $ing.tls }}
  tls:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  rules:
  {{- range (default (list "") $ing.hosts) }}
  - {{ with . }}host: {{ . | quote }}
    {{ end }}http:
      paths:
      {{- range $paths }}
      - path: {{ .path }}
        pathType: {{ .pathType }}
        backend:
          service:
            name: {{ $svc }}
            port:
              number: {{ $port }}
      {{- end }}
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

{{- /*
The history archive (docs/archive.md). With archive.enabled, the manager and the apiserver read
the database's DSN from the Secret archive.existingSecret, mounted read-only (mode 0440, group
fsGroup) at /etc/paygate/archive/dsn, and an optional CA certificate from archive.caSecret at
/etc/paygate/archive-ca/ca.crt.
*/}}
{{- define "paygate.archiveDSNDir" -}}/etc/paygate/archive{{- end }}
{{- define "paygate.archiveCADir" -}}/etc/paygate/archive-ca{{- end }}

{{/* The Secret holding the DSN: required when the archive is on. */}}
{{- define "paygate.archiveSecretName" -}}
{{- required "archive.enabled is true but archive.existingSecret.name is empty: name the Secret (in the release namespace) that holds the PostgreSQL DSN, e.g. --set archive.existingSecret.name=paygate-archive (docs/deploy.md, History in PostgreSQL)" .Values.archive.existingSecret.name }}
{{- end }}

{{/* The archive flags of both commands (the connection); the manager adds the archiver's. */}}
{{- define "paygate.archiveArgs" -}}
{{- $ar := .root.Values.archive -}}
- {{ printf "--archive-dsn-file=%s/dsn" (include "paygate.archiveDSNDir" .root) | quote }}
- {{ printf "--archive-max-conns=%d" (int (index $ar.maxConns .component)) | quote }}
{{- if eq .component "manager" }}
- {{ printf "--archive-payments-after=%v" $ar.retention.payments | quote }}
- {{ printf "--archive-payouts-after=%v" $ar.retention.payouts | quote }}
- {{ printf "--archive-invoices-after=%v" $ar.retention.invoices | quote }}
- {{ printf "--archive-webhook-deliveries-after=%v" $ar.retention.webhookDeliveries | quote }}
- {{ printf "--archive-refunds-after=%v" $ar.retention.refunds | quote }}
- {{ printf "--archive-interval=%s" $ar.interval | quote }}
- {{ printf "--archive-batch-size=%d" (int $ar.batchSize) | quote }}
{{- end }}
{{- end }}

{{/*
libpq defaults that pgx reads: with a CA Secret, verify the server against it unless the DSN
says otherwise (CloudNativePG's uri carries no sslmode).
*/}}
{{- define "paygate.archiveEnv" -}}
{{- if .Values.archive.caSecret.name -}}
- name: PGSSLMODE
  value: verify-full
- name: PGSSLROOTCERT
  value: {{ printf "%s/ca.crt" (include "paygate.archiveCADir" .) }}
{{- end }}
{{- end }}

{{- define "paygate.archiveVolumeMounts" -}}
- name: archive-dsn
  mountPath: {{ include "paygate.archiveDSNDir" . }}
  readOnly: true
{{- if .Values.archive.caSecret.name }}
- name: archive-ca
  mountPath: {{ include "paygate.archiveCADir" . }}
  readOnly: true
{{- end }}
{{- end }}

{{/* Only the named keys are projected (CloudNativePG's <cluster>-ca also holds the CA's key). */}}
{{- define "paygate.archiveVolumes" -}}
- name: archive-dsn
  secret:
    secretName: {{ include "paygate.archiveSecretName" . }}
    defaultMode: 288 # 0440: read-only for root and the group fsGroup
    items:
    - key: {{ .Values.archive.existingSecret.key }}
      path: dsn
{{- with .Values.archive.caSecret }}
{{- if .name }}
- name: archive-ca
  secret:
    secretName: {{ .name }}
    defaultMode: 288 # 0440: read-only for root and the group fsGroup
    items:
    - key: {{ .key }}
      path: ca.crt
{{- end }}
{{- end }}
{{- end }}

{{- /*
The pod security context of both Deployments. With the archive on, the Secret files are mode 0440
owned by root and the group fsGroup, which the kubelet adds to the container's groups: without an
fsGroup of its own, the pod gets the container's runAsGroup, else 65532 (the image's group).
*/}}
{{- define "paygate.podSecurityContext" -}}
{{- $psc := deepCopy (default dict .Values.podSecurityContext) }}
{{- if and .Values.archive.enabled (not (hasKey $psc "fsGroup")) }}
{{- $group := 65532 }}
{{- if and .Values.securityContext (hasKey .Values.securityContext "runAsGroup") }}
{{- $group = .Values.securityContext.runAsGroup }}
{{- else if hasKey $psc "runAsGroup" }}
{{- $group = $psc.runAsGroup }}
{{- end }}
{{- $_ := set $psc "fsGroup" (int64 $group) }}
{{- end }}
{{- if $psc }}
{{- toYaml $psc }}
{{- end }}
{{- end }}

{{/* The name of the manager metrics Service's port: https with metrics.secure, else http. */}}
{{- define "paygate.managerMetricsPortName" -}}
{{- ternary "https-metrics" "http-metrics" (.Values.metrics.secure | default false) }}
{{- end }}

{{/* Name of the ClusterRole that allows GET /metrics on the manager's secure endpoint. */}}
{{- define "paygate.metricsReaderName" -}}
{{- printf "%s-metrics-reader" (include "paygate.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Egress to the cluster DNS, the Kubernetes API server and, with the archive, its database. */}}
{{- define "paygate.networkPolicyCommonEgress" -}}
{{- $np := .Values.networkPolicy -}}
- ports:
  - protocol: UDP
    port: 53
  - protocol: TCP
    port: 53
  {{- with $np.dns.to }}
  to:
    {{- toYaml . | nindent 2 }}
  {{- end }}
- ports:
  {{- range $np.kubernetesAPI.ports }}
  - protocol: TCP
    port: {{ . }}
  {{- end }}
  {{- with $np.kubernetesAPI.cidrs }}
  to:
  {{- range . }}
  - ipBlock:
      cidr: {{ . }}
  {{- end }}
  {{- end }}
{{- if .Values.archive.enabled }}
- ports:
  - protocol: TCP
    port: {{ $np.archive.port }}
  {{- with $np.archive.to }}
  to:
    {{- toYaml . | nindent 2 }}
  {{- end }}
{{- end }}
{{- end }}
