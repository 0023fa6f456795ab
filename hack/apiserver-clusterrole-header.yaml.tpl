{{- /*
The rules are a verbatim copy of config/rbac/apiserver/role.yaml, which controller-gen generates
from the +kubebuilder:rbac markers in apiserver/server.go. `make manifests` writes this file;
`make verify` diffs the rules.
*/ -}}
{{- if .Values.apiserver.enabled }}
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: {{ include "paygate.apiserverName" . }}
  labels:
    {{- include "paygate.apiserverLabels" . | nindent 4 }}
