{{- /*
The rules are a verbatim copy of config/rbac/role.yaml, which controller-gen generates from the
+kubebuilder:rbac markers. Keep them identical: `make helm-lint` diffs them.
*/ -}}
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: {{ include "paygate.managerName" . }}
  labels:
    {{- include "paygate.labels" . | nindent 4 }}
