// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package install_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// The operating objects (docs/operations.md): metrics endpoints and their Services, the
// metrics-reader ClusterRole, PodDisruptionBudgets, NetworkPolicies, ServiceMonitors, the
// PrometheusRule and the Grafana dashboard. checkOperations checks that a render has exactly the
// ones its values ask for, and that they fit the Deployments they are for: every selector selects
// the pods (or Services) it means and no other, every named port exists.

// opsWant is what a render must contain, from its values.
type opsWant struct {
	managerMetrics, managerSecure bool
	managerMetricsPort            int
	apiserver, apiserverMetrics   bool
	apiserverMetricsPort          int
	managerGrace, apiserverGrace  int64
	managerPDB, apiserverPDB      bool
	networkPolicy                 bool
	serviceMonitor                bool
	prometheusRule                bool
	dashboard                     bool
	metricsReaders                int
}

// valuesOf is a value set's values: the chart's defaults overridden by its values file.
func valuesOf(t *testing.T, vs valueSet) map[string]any {
	t.Helper()
	values := readValues(t, filepath.Join(chartDir(t), "values.yaml"))
	if len(vs.args) == 2 && vs.args[0] == "-f" {
		mergeValues(values, readValues(t, vs.args[1]))
	}
	return values
}

// value is the value at a dotted path (nil when absent).
func value(values map[string]any, path string) any {
	var v any = values
	for _, k := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

func opsWantFromValues(t *testing.T, vs valueSet) opsWant {
	t.Helper()
	v := valuesOf(t, vs)
	b := func(p string) bool { x, _ := value(v, p).(bool); return x }
	n := func(p string) int { x, _ := value(v, p).(float64); return int(x) }
	readers, _ := value(v, "metrics.readerServiceAccounts").([]any)
	w := opsWant{
		managerMetrics:       b("metrics.enabled"),
		managerSecure:        b("metrics.secure"),
		managerMetricsPort:   n("metrics.port"),
		apiserver:            b("apiserver.enabled"),
		apiserverMetrics:     b("apiserver.enabled") && b("apiserver.metrics.enabled"),
		apiserverMetricsPort: n("apiserver.metrics.port"),
		managerGrace:         int64(n("terminationGracePeriodSeconds")),
		apiserverGrace:       int64(n("apiserver.terminationGracePeriodSeconds")),
		managerPDB:           b("podDisruptionBudget.enabled") && n("replicaCount") > 1,
		apiserverPDB:         b("apiserver.enabled") && b("apiserver.podDisruptionBudget.enabled") && n("apiserver.replicaCount") > 1,
		networkPolicy:        b("networkPolicy.enabled"),
		serviceMonitor:       b("serviceMonitor.enabled"),
		prometheusRule:       b("prometheusRule.enabled"),
		dashboard:            b("grafanaDashboard.enabled"),
	}
	if w.managerMetrics {
		w.metricsReaders = len(readers)
	}
	return w
}

// configDefaultOps is what config/default (kustomize) holds: the chart's defaults.
var configDefaultOps = opsWant{
	managerMetrics: true, managerSecure: true, managerMetricsPort: 8443,
	apiserver: true, apiserverMetrics: true, apiserverMetricsPort: 9090,
	managerGrace: 30, apiserverGrace: 30, apiserverPDB: true,
}

// workload is a rendered Deployment: its pods' labels and its container.
type workload struct {
	obj       object
	podLabels labels.Set
	container corev1.Container
	spec      corev1.PodSpec
}

func (w *workload) portNamed(name string) bool {
	return w != nil && slices.ContainsFunc(w.container.Ports, func(p corev1.ContainerPort) bool { return p.Name == name })
}

// convert decodes a rendered object into a typed one.
func convert(t *testing.T, o object, into any) {
	t.Helper()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.u.Object, into); err != nil {
		t.Fatalf("%s: %v", o, err)
	}
}

func ofKind(objs []object, kind string) []object {
	var out []object
	for _, o := range objs {
		if o.u.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

// workloads are the manager and apiserver Deployments of a render, by container name.
func workloads(t *testing.T, objs []object) map[string]*workload {
	t.Helper()
	out := map[string]*workload{}
	for _, o := range ofKind(objs, "Deployment") {
		var d appsv1.Deployment
		convert(t, o, &d)
		if len(d.Spec.Template.Spec.Containers) == 0 {
			continue
		}
		c := d.Spec.Template.Spec.Containers[0]
		out[c.Name] = &workload{obj: o, podLabels: d.Spec.Template.Labels, container: c, spec: d.Spec.Template.Spec}
	}
	return out
}

// selected names the workloads whose pods sel selects.
func selected(ws map[string]*workload, sel labels.Selector) []string {
	var names []string
	for name, w := range ws {
		if sel.Matches(w.podLabels) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

func hasArg(c corev1.Container, arg string) bool { return slices.Contains(c.Args, arg) }

func argWithPrefix(c corev1.Container, prefix string) []string {
	var out []string
	for _, a := range c.Args {
		if strings.HasPrefix(a, prefix) {
			out = append(out, a)
		}
	}
	return out
}

// checkOperations checks a render against want (see the top of this file).
func checkOperations(t *testing.T, objs []object, want opsWant) {
	t.Helper()
	ws := workloads(t, objs)
	mgr, api := ws["manager"], ws["apiserver"]
	if mgr == nil {
		t.Fatal("the render has no manager Deployment")
	}
	if (api != nil) != want.apiserver {
		t.Fatalf("apiserver Deployment rendered: %t, want %t", api != nil, want.apiserver)
	}

	// The manager's metrics endpoint: HTTPS unless metrics.secure is false, off when disabled.
	wantBind := "--metrics-bind-address=0"
	if want.managerMetrics {
		wantBind = fmt.Sprintf("--metrics-bind-address=:%d", want.managerMetricsPort)
	}
	if got := argWithPrefix(mgr.container, "--metrics-"); !slices.Equal(got, wantMetricsArgs(wantBind, want.managerMetrics && !want.managerSecure)) {
		t.Errorf("%s: the manager's metrics flags are %q, want %q", mgr.obj, got, wantMetricsArgs(wantBind, want.managerMetrics && !want.managerSecure))
	}
	if mgr.portNamed("metrics") != want.managerMetrics {
		t.Errorf("%s: the manager's container port \"metrics\": %t, want %t", mgr.obj, mgr.portNamed("metrics"), want.managerMetrics)
	}
	if g := mgr.spec.TerminationGracePeriodSeconds; g == nil || *g != want.managerGrace {
		t.Errorf("%s: terminationGracePeriodSeconds %v, want %d", mgr.obj, g, want.managerGrace)
	}
	if api != nil {
		var wantArgs []string
		if want.apiserverMetrics {
			wantArgs = []string{fmt.Sprintf("--metrics-bind-address=:%d", want.apiserverMetricsPort)}
		}
		if got := argWithPrefix(api.container, "--metrics-"); !slices.Equal(got, wantArgs) {
			t.Errorf("%s: the apiserver's metrics flags are %q, want %q", api.obj, got, wantArgs)
		}
		if api.portNamed("metrics") != want.apiserverMetrics {
			t.Errorf("%s: the apiserver's container port \"metrics\": %t, want %t", api.obj, api.portNamed("metrics"), want.apiserverMetrics)
		}
		if g := api.spec.TerminationGracePeriodSeconds; g == nil || *g != want.apiserverGrace {
			t.Errorf("%s: terminationGracePeriodSeconds %v, want %d", api.obj, g, want.apiserverGrace)
		}
		// POD_NAMESPACE from the downward API: the namespace of its Leases.
		if !slices.ContainsFunc(api.container.Env, func(e corev1.EnvVar) bool {
			return e.Name == "POD_NAMESPACE" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace"
		}) {
			t.Errorf("%s: the apiserver has no POD_NAMESPACE from metadata.namespace", api.obj)
		}
	}

	// Services: each selects exactly one Deployment's pods, on a port its container has; the
	// metrics Services are apart from the merchant API's.
	services := map[string]corev1.Service{}
	var metricsServices []string
	for _, o := range ofKind(objs, "Service") {
		var s corev1.Service
		convert(t, o, &s)
		services[s.Name] = s
		sel := labels.SelectorFromSet(s.Spec.Selector)
		got := selected(ws, sel)
		if len(got) != 1 {
			t.Errorf("%s: selects the pods of %q, want exactly one Deployment's", o, got)
			continue
		}
		for _, p := range s.Spec.Ports {
			if p.TargetPort.Type == intstr.String && !ws[got[0]].portNamed(p.TargetPort.StrVal) {
				t.Errorf("%s: targetPort %q is not a port of the %s container", o, p.TargetPort.StrVal, got[0])
			}
			if p.TargetPort.StrVal == "metrics" {
				metricsServices = append(metricsServices, got[0]+"/"+p.Name)
				if len(s.Spec.Ports) != 1 || s.Spec.Type != corev1.ServiceTypeClusterIP && s.Spec.Type != "" {
					t.Errorf("%s: a metrics Service must be ClusterIP with the metrics port only", o)
				}
			}
		}
	}
	var wantMetricsServices []string
	if want.apiserverMetrics {
		wantMetricsServices = append(wantMetricsServices, "apiserver/http-metrics")
	}
	if want.managerMetrics {
		wantMetricsServices = append(wantMetricsServices, "manager/"+map[bool]string{true: "https-metrics", false: "http-metrics"}[want.managerSecure])
	}
	slices.Sort(metricsServices)
	if !slices.Equal(metricsServices, wantMetricsServices) {
		t.Errorf("metrics Services (component/port): %q, want %q", metricsServices, wantMetricsServices)
	}

	checkRBAC(t, objs, want)

	// PodDisruptionBudgets: one per component asked for, selecting that component's pods only.
	var pdbs []string
	for _, o := range ofKind(objs, "PodDisruptionBudget") {
		var p policyv1.PodDisruptionBudget
		convert(t, o, &p)
		sel, err := metaSelector(p.Spec.Selector)
		if err != nil {
			t.Errorf("%s: %v", o, err)
			continue
		}
		got := selected(ws, sel)
		if len(got) != 1 {
			t.Errorf("%s: selects the pods of %q, want exactly one Deployment's", o, got)
			continue
		}
		pdbs = append(pdbs, got[0])
		if got[0] == "manager" && p.Spec.MaxUnavailable == nil {
			t.Errorf("%s: the manager's budget has no maxUnavailable", o)
		}
	}
	var wantPDBs []string
	if want.apiserverPDB {
		wantPDBs = append(wantPDBs, "apiserver")
	}
	if want.managerPDB {
		wantPDBs = append(wantPDBs, "manager")
	}
	slices.Sort(pdbs)
	if !slices.Equal(pdbs, wantPDBs) {
		t.Errorf("PodDisruptionBudgets for %q, want %q", pdbs, wantPDBs)
	}

	checkNetworkPolicies(t, objs, ws, want)
	checkServiceMonitors(t, objs, services, want)
	checkPrometheusRule(t, objs, want)
	checkDashboard(t, objs, want)
}

func wantMetricsArgs(bind string, insecure bool) []string {
	if insecure {
		return []string{bind, "--metrics-secure=false"}
	}
	return []string{bind}
}

// metaSelector is a label selector's labels.Selector (a missing one selects nothing).
func metaSelector(s *metav1.LabelSelector) (labels.Selector, error) {
	if s == nil {
		return labels.Nothing(), nil
	}
	return metav1.LabelSelectorAsSelector(s)
}

// checkRBAC: the manager may review tokens and access (its secure metrics endpoint), the
// metrics-reader ClusterRole allows GET /metrics and is bound to metrics.readerServiceAccounts,
// and the apiserver may manage Leases in its namespace.
func checkRBAC(t *testing.T, objs []object, want opsWant) {
	t.Helper()
	var readerRoles, readerBindings, managerRoles, apiserverRoles int
	for _, o := range ofKind(objs, "ClusterRole") {
		var r rbacv1.ClusterRole
		convert(t, o, &r)
		switch {
		case strings.HasSuffix(r.Name, "-metrics-reader"):
			readerRoles++
			if len(r.Rules) != 1 || !slices.Equal(r.Rules[0].NonResourceURLs, []string{"/metrics"}) || !slices.Equal(r.Rules[0].Verbs, []string{"get"}) {
				t.Errorf("%s: rules %+v, want GET on /metrics only", o, r.Rules)
			}
		case strings.HasSuffix(r.Name, "-manager"):
			managerRoles++
			for _, need := range [][3]string{{"authentication.k8s.io", "tokenreviews", "create"}, {"authorization.k8s.io", "subjectaccessreviews", "create"}} {
				if !slices.ContainsFunc(r.Rules, func(p rbacv1.PolicyRule) bool {
					return slices.Contains(p.APIGroups, need[0]) && slices.Contains(p.Resources, need[1]) && slices.Contains(p.Verbs, need[2])
				}) {
					t.Errorf("%s: the manager cannot %s %s.%s (its secure metrics endpoint needs it)", o, need[2], need[1], need[0])
				}
			}
		}
	}
	for _, o := range ofKind(objs, "ClusterRoleBinding") {
		var b rbacv1.ClusterRoleBinding
		convert(t, o, &b)
		if strings.HasSuffix(b.RoleRef.Name, "-metrics-reader") {
			readerBindings++
			if len(b.Subjects) != want.metricsReaders {
				t.Errorf("%s: %d subjects, want %d (metrics.readerServiceAccounts)", o, len(b.Subjects), want.metricsReaders)
			}
		}
	}
	for _, o := range ofKind(objs, "Role") {
		var r rbacv1.Role
		convert(t, o, &r)
		if slices.ContainsFunc(r.Rules, func(p rbacv1.PolicyRule) bool {
			return slices.Contains(p.Resources, "leases") && slices.Contains(p.Verbs, "create")
		}) && strings.HasSuffix(r.Name, "-apiserver-replicas") {
			apiserverRoles++
		}
	}
	if managerRoles != 1 {
		t.Errorf("%d manager ClusterRoles, want 1", managerRoles)
	}
	if wantRoles := map[bool]int{true: 1, false: 0}[want.managerMetrics]; readerRoles != wantRoles {
		t.Errorf("%d metrics-reader ClusterRoles, want %d", readerRoles, wantRoles)
	}
	if wantBindings := map[bool]int{true: 1, false: 0}[want.metricsReaders > 0]; readerBindings != wantBindings {
		t.Errorf("%d metrics-reader ClusterRoleBindings, want %d", readerBindings, wantBindings)
	}
	if wantRoles := map[bool]int{true: 1, false: 0}[want.apiserver]; apiserverRoles != wantRoles {
		t.Errorf("%d apiserver Lease Roles, want %d", apiserverRoles, wantRoles)
	}
}

// checkNetworkPolicies: one per Deployment, each selecting that Deployment's pods only, isolating
// both directions, allowing only ports the container has: the manager nothing but its metrics, the
// apiserver its API and metrics ports.
func checkNetworkPolicies(t *testing.T, objs []object, ws map[string]*workload, want opsWant) {
	t.Helper()
	var got []string
	for _, o := range ofKind(objs, "NetworkPolicy") {
		var np networkingv1.NetworkPolicy
		convert(t, o, &np)
		sel, err := metaSelector(&np.Spec.PodSelector)
		if err != nil {
			t.Errorf("%s: %v", o, err)
			continue
		}
		sels := selected(ws, sel)
		if len(sels) != 1 {
			t.Errorf("%s: selects the pods of %q, want exactly one Deployment's", o, sels)
			continue
		}
		w := ws[sels[0]]
		got = append(got, sels[0])
		if !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}) {
			t.Errorf("%s: policyTypes %v, want Ingress and Egress", o, np.Spec.PolicyTypes)
		}
		var ports []string
		for _, r := range np.Spec.Ingress {
			if len(r.Ports) == 0 {
				t.Errorf("%s: an ingress rule without ports opens every port", o)
			}
			for _, p := range r.Ports {
				if p.Port == nil || p.Port.Type != intstr.String || !w.portNamed(p.Port.StrVal) {
					t.Errorf("%s: ingress port %v is not a named port of the %s container", o, p.Port, sels[0])
					continue
				}
				ports = append(ports, p.Port.StrVal)
			}
		}
		var wantPorts []string
		switch sels[0] {
		case "manager":
			if want.managerMetrics {
				wantPorts = []string{"metrics"}
			}
		case "apiserver":
			wantPorts = []string{"http"}
			if want.apiserverMetrics {
				wantPorts = append(wantPorts, "metrics")
			}
		}
		if !slices.Equal(ports, wantPorts) {
			t.Errorf("%s: ingress ports %q, want %q", o, ports, wantPorts)
		}
		// DNS is always allowed; without it nothing resolves.
		if !slices.ContainsFunc(np.Spec.Egress, func(r networkingv1.NetworkPolicyEgressRule) bool {
			return slices.ContainsFunc(r.Ports, func(p networkingv1.NetworkPolicyPort) bool {
				return p.Port != nil && p.Port.IntValue() == 53 && p.Protocol != nil && *p.Protocol == corev1.ProtocolUDP
			})
		}) {
			t.Errorf("%s: no egress to DNS (53/UDP)", o)
		}
	}
	var wantNP []string
	if want.networkPolicy {
		if want.apiserver {
			wantNP = append(wantNP, "apiserver")
		}
		wantNP = append(wantNP, "manager")
	}
	slices.Sort(got)
	if !slices.Equal(got, wantNP) {
		t.Errorf("NetworkPolicies for %q, want %q", got, wantNP)
	}
}

// checkServiceMonitors: one per metrics Service, selecting it (and no other Service) in the
// release namespace, on its port, https with a bearer token for the secure manager endpoint.
func checkServiceMonitors(t *testing.T, objs []object, services map[string]corev1.Service, want opsWant) {
	t.Helper()
	var got []string
	for _, o := range ofKind(objs, "ServiceMonitor") {
		var sm struct {
			Spec struct {
				NamespaceSelector struct {
					MatchNames []string `json:"matchNames"`
				} `json:"namespaceSelector"`
				Selector struct {
					MatchLabels map[string]string `json:"matchLabels"`
				} `json:"selector"`
				Endpoints []struct {
					Port            string         `json:"port"`
					Scheme          string         `json:"scheme"`
					BearerTokenFile string         `json:"bearerTokenFile"`
					TLSConfig       map[string]any `json:"tlsConfig"`
				} `json:"endpoints"`
			} `json:"spec"`
		}
		convert(t, o, &sm)
		if !slices.Equal(sm.Spec.NamespaceSelector.MatchNames, []string{namespace}) {
			t.Errorf("%s: namespaceSelector %v, want the release namespace", o, sm.Spec.NamespaceSelector.MatchNames)
		}
		sel := labels.SelectorFromSet(sm.Spec.Selector.MatchLabels)
		var matched []corev1.Service
		for _, s := range services {
			if sel.Matches(labels.Set(s.Labels)) {
				matched = append(matched, s)
			}
		}
		if len(matched) != 1 || len(sm.Spec.Endpoints) != 1 {
			t.Errorf("%s: selects %d Services with %d endpoints, want one metrics Service and one endpoint", o, len(matched), len(sm.Spec.Endpoints))
			continue
		}
		s, ep := matched[0], sm.Spec.Endpoints[0]
		if len(s.Spec.Ports) != 1 || s.Spec.Ports[0].Name != ep.Port || s.Spec.Ports[0].TargetPort.StrVal != "metrics" {
			t.Errorf("%s: endpoint port %q, but Service %s has ports %+v", o, ep.Port, s.Name, s.Spec.Ports)
		}
		component := s.Labels["app.kubernetes.io/component"]
		got = append(got, component+"/"+ep.Scheme)
		if ep.Scheme == "https" && (ep.BearerTokenFile == "" || ep.TLSConfig == nil) {
			t.Errorf("%s: https without a bearer token or TLS settings", o)
		}
	}
	var wantSM []string
	if want.serviceMonitor {
		if want.apiserverMetrics {
			wantSM = append(wantSM, "apiserver/http")
		}
		if want.managerMetrics {
			wantSM = append(wantSM, "manager/"+map[bool]string{true: "https", false: "http"}[want.managerSecure])
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, wantSM) {
		t.Errorf("ServiceMonitors (component/scheme): %q, want %q", got, wantSM)
	}
}

var alertLine = regexp.MustCompile(`(?m)^\s*- alert: (\w+)\s*$`)

// ruleFileAlerts are the alert names in charts/paygate/rules/paygate.rules.yaml.
func ruleFileAlerts(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(chartDir(t), "rules", "paygate.rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range alertLine.FindAllStringSubmatch(string(b), -1) {
		names = append(names, m[1])
	}
	if len(names) < 10 {
		t.Fatalf("rules/paygate.rules.yaml has %d alerts, want at least 10", len(names))
	}
	return names
}

type ruleGroups struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []struct {
			Alert       string            `json:"alert"`
			Expr        string            `json:"expr"`
			For         string            `json:"for"`
			Labels      map[string]string `json:"labels"`
			Annotations map[string]string `json:"annotations"`
		} `json:"rules"`
	} `json:"groups"`
}

// checkPrometheusRule: the PrometheusRule holds every alert of the rules file, each with a
// severity, a summary, a description and a runbook URL ending in its anchor.
func checkPrometheusRule(t *testing.T, objs []object, want opsWant) {
	t.Helper()
	prs := ofKind(objs, "PrometheusRule")
	if len(prs) != map[bool]int{true: 1, false: 0}[want.prometheusRule] {
		t.Errorf("%d PrometheusRules, want prometheusRule.enabled=%t", len(prs), want.prometheusRule)
	}
	for _, o := range prs {
		var pr struct {
			Spec ruleGroups `json:"spec"`
		}
		convert(t, o, &pr)
		checkAlerts(t, o.String(), pr.Spec, ruleFileAlerts(t))
	}
}

func checkAlerts(t *testing.T, where string, rg ruleGroups, wantAlerts []string) {
	t.Helper()
	var alerts []string
	for _, g := range rg.Groups {
		for _, r := range g.Rules {
			alerts = append(alerts, r.Alert)
			if s := r.Labels["severity"]; s != "critical" && s != "warning" {
				t.Errorf("%s: alert %s has severity %q, want critical or warning", where, r.Alert, s)
			}
			for _, a := range []string{"summary", "description", "runbook_url"} {
				if r.Annotations[a] == "" {
					t.Errorf("%s: alert %s has no %s", where, r.Alert, a)
				}
			}
			if !strings.HasSuffix(r.Annotations["runbook_url"], "#"+strings.ToLower(r.Alert)) {
				t.Errorf("%s: alert %s's runbook_url %q does not end in #%s", where, r.Alert, r.Annotations["runbook_url"], strings.ToLower(r.Alert))
			}
			if !strings.Contains(r.Expr, `namespace="`+namespace+`"`) {
				t.Errorf("%s: alert %s is not scoped to the release namespace: %s", where, r.Alert, r.Expr)
			}
		}
	}
	if !slices.Equal(alerts, wantAlerts) {
		t.Errorf("%s: alerts %q, want those of rules/paygate.rules.yaml %q", where, alerts, wantAlerts)
	}
}

// checkDashboard: the ConfigMap carries dashboards/paygate.json verbatim, with the sidecar's label.
func checkDashboard(t *testing.T, objs []object, want opsWant) {
	t.Helper()
	var n int
	for _, o := range ofKind(objs, "ConfigMap") {
		var cm corev1.ConfigMap
		convert(t, o, &cm)
		js, ok := cm.Data["paygate.json"]
		if !ok {
			continue
		}
		n++
		file, err := os.ReadFile(filepath.Join(chartDir(t), "dashboards", "paygate.json"))
		if err != nil {
			t.Fatal(err)
		}
		if strings.TrimSpace(js) != strings.TrimSpace(string(file)) {
			t.Errorf("%s: paygate.json differs from charts/paygate/dashboards/paygate.json", o)
		}
		if cm.Labels["grafana_dashboard"] == "" {
			t.Errorf("%s: no grafana_dashboard label for the sidecar", o)
		}
	}
	if n != map[bool]int{true: 1, false: 0}[want.dashboard] {
		t.Errorf("%d dashboard ConfigMaps, want grafanaDashboard.enabled=%t", n, want.dashboard)
	}
}

// installMonitoringCRDs installs testdata/monitoring-crds.yaml (ServiceMonitor, PrometheusRule)
// and waits until the API server serves them.
func installMonitoringCRDs(ctx context.Context, t *testing.T, c client.Client) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(moduleRoot(t), "test", "install", "testdata", "monitoring-crds.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	crds := parse(t, b)
	for _, o := range crds {
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(o.u), client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
			t.Fatalf("installing %s: %v", o, err)
		}
	}
	deadline := time.Now().Add(time.Minute)
	for _, o := range crds {
		for {
			crd := &unstructured.Unstructured{}
			crd.SetGroupVersionKind(o.u.GroupVersionKind())
			err := c.Get(ctx, client.ObjectKey{Name: o.u.GetName()}, crd)
			if err == nil && crdEstablished(crd) {
				break
			}
			if err != nil && !apierrors.IsNotFound(err) || time.Now().After(deadline) {
				t.Fatalf("%s is not established: %v", o, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

func crdEstablished(crd *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}

// TestOperationsValues renders the chart (no API server) with the operating values and checks
// what they change.
func TestOperationsValues(t *testing.T) {
	helm := helmBinary(t)
	render := func(t *testing.T, set ...string) []object {
		t.Helper()
		args := []string{"template", release, chartDir(t), "--namespace", namespace}
		for _, s := range set {
			args = append(args, "--set", s)
		}
		out, stderr, err := runSplit(helm, args...)
		if err != nil {
			t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, stderr)
		}
		return parse(t, []byte(out))
	}

	t.Run("defaults", func(t *testing.T) {
		checkOperations(t, render(t), opsWantFromValues(t, valueSet{name: "default"}))
	})

	t.Run("plain HTTP manager metrics", func(t *testing.T) {
		w := opsWantFromValues(t, valueSet{name: "default"})
		w.managerSecure, w.serviceMonitor = false, true
		checkOperations(t, render(t, "metrics.secure=false", "serviceMonitor.enabled=true"), w)
	})

	t.Run("manager budget only with standbys", func(t *testing.T) {
		w := opsWantFromValues(t, valueSet{name: "default"})
		w.managerPDB = true
		checkOperations(t, render(t, "replicaCount=2"), w)
		w.managerPDB = false
		checkOperations(t, render(t, "replicaCount=2", "podDisruptionBudget.enabled=false"), w)
	})

	t.Run("egress excepts by address family", func(t *testing.T) {
		objs := render(t, "networkPolicy.enabled=true", "networkPolicy.manager.egressExcept={10.0.0.0/8,fc00::/7,192.168.0.0/16}")
		var np networkingv1.NetworkPolicy
		for _, o := range ofKind(objs, "NetworkPolicy") {
			if strings.HasSuffix(o.u.GetName(), "-manager") {
				convert(t, o, &np)
			}
		}
		var blocks []string
		for _, r := range np.Spec.Egress {
			for _, p := range r.To {
				if p.IPBlock != nil {
					blocks = append(blocks, p.IPBlock.CIDR+" except "+strings.Join(p.IPBlock.Except, ","))
				}
			}
		}
		want := []string{"0.0.0.0/0 except 10.0.0.0/8,192.168.0.0/16", "::/0 except fc00::/7"}
		if !slices.Equal(blocks, want) {
			t.Errorf("the manager's egress ipBlocks are %q, want %q", blocks, want)
		}
	})

	t.Run("alert thresholds, labels and runbooks", func(t *testing.T) {
		objs := render(t, "prometheusRule.enabled=true",
			"prometheusRule.thresholds.apiErrorRatio=0.02", "prometheusRule.thresholds.archiveLagSeconds=600",
			"prometheusRule.thresholds.reconcileErrorRatio=0.25", "prometheusRule.thresholds.apiLatencyP99Seconds=1.5",
			"prometheusRule.thresholds.invoiceChargeFailureRatio=0.3", "prometheusRule.thresholds.invoiceChargeMinimum=25",
			"prometheusRule.thresholds.refundFailureRatio=0.35", "prometheusRule.thresholds.refundMinimum=12",
			"prometheusRule.alertLabels.team=payments", "prometheusRule.alertLabels.severity=page",
			"prometheusRule.runbookBaseURL=https://runbooks.example.com/paygate")
		prs := ofKind(objs, "PrometheusRule")
		if len(prs) != 1 {
			t.Fatalf("%d PrometheusRules rendered", len(prs))
		}
		var pr struct {
			Spec ruleGroups `json:"spec"`
		}
		convert(t, prs[0], &pr)
		exprs := map[string]string{}
		for _, g := range pr.Spec.Groups {
			for _, r := range g.Rules {
				exprs[r.Alert] = r.Expr
				if r.Labels["team"] != "payments" {
					t.Errorf("%s: alertLabels not added: %v", r.Alert, r.Labels)
				}
				if r.Labels["severity"] == "page" {
					t.Errorf("%s: alertLabels replaced the rule's own severity", r.Alert)
				}
				if !strings.HasPrefix(r.Annotations["runbook_url"], "https://runbooks.example.com/paygate#") {
					t.Errorf("%s: runbook_url %q", r.Alert, r.Annotations["runbook_url"])
				}
			}
		}
		for alert, thresholds := range map[string][]string{
			"PaygateAPIErrors": {"> 0.02"}, "PaygateArchiveLagging": {"> 600"},
			"PaygateReconcileErrors": {"> 0.25"}, "PaygateAPILatency": {"> 1.5"},
			"PaygateInvoiceChargesFailing": {"> 0.3", ">= 25"},
			"PaygateRefundsFailing":        {"> 0.35", ">= 12"},
		} {
			for _, threshold := range thresholds {
				if !strings.Contains(exprs[alert], threshold) {
					t.Errorf("%s: the expression does not compare %s:\n%s", alert, threshold, exprs[alert])
				}
			}
		}
	})

	// config/prometheus/rules.yaml (kustomize) is the chart's PrometheusRule with its defaults.
	t.Run("config/prometheus agrees with the chart", func(t *testing.T) {
		chart := ofKind(render(t, "prometheusRule.enabled=true"), "PrometheusRule")
		k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
		m, err := k.Run(filesys.MakeFsOnDisk(), filepath.Join(moduleRoot(t), "config", "prometheus"))
		if err != nil {
			t.Fatalf("kustomize build config/prometheus: %v", err)
		}
		out, err := m.AsYaml()
		if err != nil {
			t.Fatal(err)
		}
		kust := ofKind(parse(t, out), "PrometheusRule")
		if len(chart) != 1 || len(kust) != 1 {
			t.Fatalf("PrometheusRules: %d in the chart, %d in config/prometheus", len(chart), len(kust))
		}
		if !reflect.DeepEqual(chart[0].u.Object["spec"], kust[0].u.Object["spec"]) {
			t.Error("config/prometheus/rules.yaml differs from the chart's PrometheusRule: run `make prometheus-rules`")
		}
	})
}
