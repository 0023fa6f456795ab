// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package install tests the install path: the Helm chart (charts/paygate) with its default
// values and with every ci/*-values.yaml, and the kustomize config/default, are rendered and every
// object is applied with a server-side dry-run to a real kube-apiserver (test/testenv), which
// must accept it without a warning. `helm lint --strict` runs for every value set, and
// values.schema.json must refuse misspelt or mistyped values. With the history archive on (a
// value set's archive.enabled, or config/default with the config/archive component), both
// Deployments must carry its flags, Secret volume and mount; with it off, none of them
// (archive_test.go). No Ingress routes the upstream provider's callback route; pawaPay's and
// Daraja's only when asked (callbacks_test.go).
//
// The helm binary comes from bin/ (`make helm`, a dependency of `make test`), or $HELM. Without
// it the tests are skipped, except in CI (CI=true), where they fail.
package install_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/paygate/paygate/internal/kube"
	"github.com/paygate/paygate/test/testenv"
)

const (
	// namespace is the release namespace of the chart and the namespace of config/default.
	namespace  = "paygate-system"
	release    = "paygate"
	fieldOwner = "paygate-install-test"
)

// TestHelmLint runs `helm lint --strict` with the default values and every ci/*-values.yaml.
func TestHelmLint(t *testing.T) {
	helm := helmBinary(t)
	for _, vs := range valueSets(t) {
		t.Run(vs.name, func(t *testing.T) {
			args := append([]string{"lint", "--strict", chartDir(t), "--namespace", namespace}, vs.args...)
			if out, err := run(helm, args...); err != nil {
				t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
			}
		})
	}
}

// TestValuesSchemaRefusesTypos: a misspelt key, a wrong type or a value outside its enum fails
// `helm template` and `helm lint` because of values.schema.json (without the schema Helm would
// ignore them silently).
func TestValuesSchemaRefusesTypos(t *testing.T) {
	helm := helmBinary(t)
	cases := []struct {
		name   string
		values string   // a values file
		set    []string // or --set flags
		want   string   // in the error
	}{
		{name: "unknown top-level key", values: "replicas: 2\n", want: "replicas"},
		{name: "misspelt nested key", values: "apiserver:\n  replicaCont: 3\n", want: "replicaCont"},
		{name: "misspelt key in a --set", set: []string{"apiserver.ingres.enabled=true"}, want: "ingres"},
		{name: "misspelt checkout key setting", values: "apiserver:\n  checkoutKey:\n    existingSecrets: mine\n", want: "existingSecrets"},
		{name: "wrong type", values: "apiserver:\n  replicaCount: two\n", want: "replicaCount"},
		{name: "outside its enum", values: "image:\n  pullPolicy: Sometimes\n", want: "pullPolicy"},
		{name: "port out of range", values: "metrics:\n  port: 70000\n", want: "port"},
		{name: "not a URL", values: "apiserver:\n  publicURL: pay.example.com\n", want: "publicURL"},
		{name: "daraja callback URL not https", set: []string{"darajaCallbackURL=http://pay.example.com/internal/provider/callbacks/daraja"}, want: "darajaCallbackURL"},
		{name: "provider callbacks not a boolean", values: "apiserver:\n  ingress:\n    providerCallbacks: pawapay\n", want: "providerCallbacks"},
		{name: "misspelt provider callback annotations", values: "apiserver:\n  ingress:\n    providerCallbacksAnnotations: {}\n", want: "providerCallbacksAnnotations"},
		{name: "existing service account without a name", values: "serviceAccount:\n  create: false\n", want: "name"},
		{name: "misspelt archive key", values: "archive:\n  retention:\n    paymnts: 24h\n", want: "paymnts"},
		{name: "misspelt archive key in a --set", set: []string{"archive.existingSecrett.name=db"}, want: "existingSecrett"},
		{name: "archive retention in days", values: "archive:\n  retention:\n    payments: 7d\n", want: "payments"},
		{name: "archive interval not a duration", values: "archive:\n  interval: 5 minutes\n", want: "interval"},
		{name: "archive interval of zero", set: []string{"archive.interval=0s"}, want: "interval"},
		{name: "archive pool of zero", values: "archive:\n  maxConns:\n    manager: 0\n", want: "manager"},
		{name: "archive batch size too large", values: "archive:\n  batchSize: 1001\n", want: "batchSize"},
		{name: "archive secret name not a name", values: "archive:\n  existingSecret:\n    name: My_Secret\n", want: "name"},
		{name: "misspelt network policy key", values: "networkPolicy:\n  enabeld: true\n", want: "enabeld"},
		{name: "network policy peer not a peer", values: "networkPolicy:\n  apiserver:\n    from:\n    - namespace: ingress\n", want: "namespace"},
		{name: "egress except not a CIDR", values: "networkPolicy:\n  manager:\n    egressExcept: [10.0.0.0]\n", want: "egressExcept"},
		{name: "kubernetes API without ports", values: "networkPolicy:\n  kubernetesAPI:\n    ports: []\n", want: "ports"},
		{name: "misspelt service monitor key in a --set", set: []string{"serviceMonitor.intervall=30s"}, want: "intervall"},
		{name: "scrape interval not a duration", values: "serviceMonitor:\n  interval: 30 seconds\n", want: "interval"},
		{name: "misspelt alert threshold", values: "prometheusRule:\n  thresholds:\n    apiErrorRate: 0.1\n", want: "apiErrorRate"},
		{name: "error ratio above 1", values: "prometheusRule:\n  thresholds:\n    apiErrorRatio: 5\n", want: "apiErrorRatio"},
		{name: "runbook base with an anchor", values: "prometheusRule:\n  runbookBaseURL: https://x.example.com/ops.md#top\n", want: "runbookBaseURL"},
		{name: "misspelt dashboard key", values: "grafanaDashboard:\n  label:\n    grafana_dashboard: \"1\"\n", want: "label"},
		{name: "metrics secure not a boolean", values: "metrics:\n  secure: \"no\"\n", want: "secure"},
		{name: "metrics reader without a namespace", values: "metrics:\n  readerServiceAccounts:\n  - name: prometheus\n", want: "namespace"},
		{name: "apiserver metrics on the API port", values: "apiserver:\n  metrics:\n    port: 8443\n", want: "port"},
		{name: "manager budget of zero", values: "podDisruptionBudget:\n  maxUnavailable: 0\n", want: "maxUnavailable"},
		{name: "negative grace period", values: "apiserver:\n  terminationGracePeriodSeconds: -1\n", want: "terminationGracePeriodSeconds"},
	}
	dir := t.TempDir()
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var flags []string
			if tc.values != "" {
				f := filepath.Join(dir, fmt.Sprintf("typo-%d.yaml", i))
				if err := os.WriteFile(f, []byte(tc.values), 0o600); err != nil {
					t.Fatal(err)
				}
				flags = append(flags, "-f", f)
			}
			for _, s := range tc.set {
				flags = append(flags, "--set", s)
			}
			for _, args := range [][]string{
				append([]string{"template", release, chartDir(t), "--namespace", namespace}, flags...),
				append([]string{"lint", "--strict", chartDir(t), "--namespace", namespace}, flags...),
			} {
				out, err := run(helm, args...)
				if err == nil {
					t.Fatalf("helm %s succeeded; values.schema.json should refuse %q", args[0], tc.values+strings.Join(tc.set, " "))
				}
				if !strings.Contains(out, "schema") || !strings.Contains(out, tc.want) {
					t.Fatalf("helm %s failed, but not because the schema refused %q:\n%s", args[0], tc.want, out)
				}
			}
		})
	}
}

// TestInstallDryRun renders the chart (every value set) and config/default and applies every
// object with a server-side dry-run to a real kube-apiserver with the CRDs installed.
func TestInstallDryRun(t *testing.T) {
	if testing.Short() {
		t.Skip("the install dry-run needs etcd and kube-apiserver; skipped in -short mode")
	}
	helm := helmBinary(t)

	env, err := testenv.Start()
	if err != nil {
		t.Fatalf("starting the control plane (make controlplane builds it): %v", err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Error(err)
		}
	})
	warnings := &warningRecorder{}
	cfg := rest.CopyConfig(env.Config)
	cfg.WarningHandlerWithContext = warnings
	c, err := client.New(cfg, client.Options{Scheme: kube.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	// The namespace, for real, enforcing the restricted Pod Security Standard as config/manager
	// does (and the chart's README recommends): a Deployment whose pods it would refuse gets a
	// warning, which fails the test.
	pss := map[string]string{
		"pod-security.kubernetes.io/enforce": "restricted",
		"pod-security.kubernetes.io/audit":   "restricted",
		"pod-security.kubernetes.io/warn":    "restricted",
	}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace, Labels: pss}}); err != nil {
		t.Fatalf("creating namespace %s: %v", namespace, err)
	}
	// The Prometheus Operator's kinds (serviceMonitor.enabled, prometheusRule.enabled,
	// config/prometheus): minimal CRDs, the operator is not installed.
	installMonitoringCRDs(ctx, t, c)

	// The check has teeth: the API server refuses an unknown field or an invalid value, and warns
	// about a pod template the namespace's Pod Security Standard would refuse.
	t.Run("the dry-run has teeth", func(t *testing.T) {
		for _, tc := range []struct {
			name  string
			path  []string
			value any
			want  string // accepted, warning or refused
		}{
			{name: "compliant", path: []string{"spec", "replicas"}, value: int64(2), want: "accepted"},
			{name: "unknown field", path: []string{"spec", "template", "spec", "serviceAcountName"}, value: "x", want: "refused"},
			{name: "invalid value", path: []string{"spec", "replicas"}, value: int64(-1), want: "refused"},
			{name: "host network", path: []string{"spec", "template", "spec", "hostNetwork"}, value: true, want: "warning"},
		} {
			d := deployment("teeth-" + strings.ReplaceAll(tc.name, " ", "-"))
			if err := unstructured.SetNestedField(d.Object, tc.value, tc.path...); err != nil {
				t.Fatal(err)
			}
			warnings.reset()
			err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(d), client.DryRunAll, client.FieldOwner(fieldOwner), client.ForceOwnership)
			got := "accepted"
			if err != nil {
				got = "refused"
			} else if w := warnings.take(); len(w) > 0 {
				got = "warning"
			}
			if got != tc.want {
				t.Errorf("a Deployment with %s: %s (%v), want %s", tc.name, got, err, tc.want)
			}
		}
	})

	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.ControlPlane.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}

	for _, vs := range valueSets(t) {
		t.Run("helm/"+vs.name, func(t *testing.T) {
			args := append([]string{"template", release, chartDir(t), "--namespace", namespace, "--include-crds"}, vs.args...)
			out, stderr, err := runSplit(helm, args...)
			if err != nil {
				t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, stderr)
			}
			objs := parse(t, []byte(out))
			dryRunApply(ctx, t, c, warnings, objs)

			// helm install as a server-side dry-run: the chart's lookup of the checkout key, the
			// validation against the server's OpenAPI, and the install notes.
			args = append([]string{"install", release, chartDir(t), "--namespace", namespace,
				"--dry-run=server", "--kubeconfig", kubeconfig}, vs.args...)
			out, stderr, err = runSplit(helm, args...)
			if err != nil {
				t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, stderr)
			}
			if !strings.Contains(out, "NOTES:\nPaygate ") {
				t.Errorf("helm install --dry-run=server printed no install notes:\n%s", out)
			}

			// The archive: flags, Secret volume and mount in both Deployments when on, none of
			// them when off; the notes say which.
			want := archiveWantFromValues(t, vs)
			checkArchive(t, objs, want)
			checkOperations(t, objs, opsWantFromValues(t, vs))
			if note := map[bool]string{true: "History archive (PostgreSQL)", false: "The history archive is off"}[want.on]; !strings.Contains(out, note) {
				t.Errorf("the install notes do not say %q:\n%s", note, out)
			}

			if vs.name == "default" {
				// A release named paygate gives the object names of config/default (README).
				requireObjects(t, objs, crdCount(t), slices.Concat(sharedObjects, []string{"Secret/paygate-checkout-key"})...)
			}
		})
	}

	t.Run("kustomize/config/default", func(t *testing.T) {
		k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
		m, err := k.Run(filesys.MakeFsOnDisk(), filepath.Join(moduleRoot(t), "config", "default"))
		if err != nil {
			t.Fatalf("kustomize build config/default: %v", err)
		}
		out, err := m.AsYaml()
		if err != nil {
			t.Fatal(err)
		}
		objs := parse(t, out)
		dryRunApply(ctx, t, c, warnings, objs)
		requireObjects(t, objs, crdCount(t), slices.Concat(sharedObjects, []string{
			"Namespace/paygate-system", "ClusterRole/paygate-viewer", "ClusterRole/paygate-config-editor"})...)
		checkArchive(t, objs, archiveWant{})
		checkOperations(t, objs, configDefaultOps)
	})

	// config/default with config/prometheus (ServiceMonitors and the PrometheusRule) on top.
	t.Run("kustomize/config/prometheus", func(t *testing.T) {
		var objs []object
		for _, dir := range []string{"default", "prometheus"} {
			k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
			m, err := k.Run(filesys.MakeFsOnDisk(), filepath.Join(moduleRoot(t), "config", dir))
			if err != nil {
				t.Fatalf("kustomize build config/%s: %v", dir, err)
			}
			out, err := m.AsYaml()
			if err != nil {
				t.Fatal(err)
			}
			objs = append(objs, parse(t, out)...)
		}
		dryRunApply(ctx, t, c, warnings, ofKind(objs, "ServiceMonitor"))
		dryRunApply(ctx, t, c, warnings, ofKind(objs, "PrometheusRule"))
		w := configDefaultOps
		w.serviceMonitor, w.prometheusRule = true, true
		checkOperations(t, objs, w)
	})

	// config/default with the optional config/archive component (docs/deploy.md).
	t.Run("kustomize/config/archive", func(t *testing.T) {
		k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
		m, err := k.Run(filesys.MakeFsOnDisk(), filepath.Join(moduleRoot(t), "test", "install", "testdata", "kustomize-archive"))
		if err != nil {
			t.Fatalf("kustomize build config/default with config/archive: %v", err)
		}
		out, err := m.AsYaml()
		if err != nil {
			t.Fatal(err)
		}
		objs := parse(t, out)
		dryRunApply(ctx, t, c, warnings, objs)
		requireObjects(t, objs, crdCount(t), sharedObjects...)
		checkArchive(t, objs, archiveWant{
			on: true, secret: "paygate-archive", key: "dsn",
			managerArgs: []string{
				"--archive-dsn-file=/etc/paygate/archive/dsn", "--archive-max-conns=8",
				"--archive-payments-after=168h", "--archive-payouts-after=168h",
				"--archive-invoices-after=168h", "--archive-webhook-deliveries-after=168h",
				"--archive-interval=1m", "--archive-batch-size=100",
			},
			apiserverArgs: []string{"--archive-dsn-file=/etc/paygate/archive/dsn", "--archive-max-conns=24"},
		})
	})
}

// sharedObjects are in config/default and in the chart's default render (release paygate):
// docs/deploy.md promises the same object names.
var sharedObjects = []string{
	"ServiceAccount/paygate-manager", "ClusterRole/paygate-manager", "ClusterRoleBinding/paygate-manager",
	"Role/paygate-leader-election", "RoleBinding/paygate-leader-election",
	"Deployment/paygate-manager", "Service/paygate-manager-metrics",
	"ServiceAccount/paygate-apiserver", "ClusterRole/paygate-apiserver", "ClusterRoleBinding/paygate-apiserver",
	"Deployment/paygate-apiserver", "Service/paygate-apiserver", "PodDisruptionBudget/paygate-apiserver",
	"ClusterRole/paygate-payout-resolver",
	"ClusterRole/paygate-metrics-reader", "Service/paygate-apiserver-metrics",
	"Role/paygate-apiserver-replicas", "RoleBinding/paygate-apiserver-replicas",
}

// deployment is a minimal Deployment that complies with the restricted Pod Security Standard.
func deployment(name string) *unstructured.Unstructured {
	labels := map[string]any{"app": name}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1",
		"kind":       "Deployment",
		"metadata":   map[string]any{"name": name, "namespace": namespace},
		"spec": map[string]any{
			"selector": map[string]any{"matchLabels": labels},
			"template": map[string]any{
				"metadata": map[string]any{"labels": labels},
				"spec": map[string]any{
					"securityContext": map[string]any{
						"runAsNonRoot":   true,
						"seccompProfile": map[string]any{"type": "RuntimeDefault"},
					},
					"containers": []any{map[string]any{
						"name":  "c",
						"image": "paygate:dev",
						"securityContext": map[string]any{
							"allowPrivilegeEscalation": false,
							"capabilities":             map[string]any{"drop": []any{"ALL"}},
						},
					}},
				},
			},
		},
	}}
}

// object is one rendered object and where it came from.
type object struct {
	u      *unstructured.Unstructured
	source string // the chart template (helm's "# Source:" comment), if known
}

func (o object) String() string {
	s := o.u.GetKind() + " "
	if ns := o.u.GetNamespace(); ns != "" {
		s += ns + "/"
	}
	s += o.u.GetName()
	if o.source != "" {
		s += " (" + o.source + ")"
	}
	return s
}

var (
	docSeparator = regexp.MustCompile(`(?m)^---[ \t]*$`)
	sourceLine   = regexp.MustCompile(`(?m)^# Source: (.+)$`)
)

// parse splits a multi-document YAML stream into objects; empty documents are skipped.
func parse(t *testing.T, stream []byte) []object {
	t.Helper()
	var objs []object
	for _, doc := range docSeparator.Split(string(stream), -1) {
		src := ""
		if m := sourceLine.FindStringSubmatch(doc); m != nil {
			src = m[1]
		}
		var m map[string]any
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatalf("decoding a rendered document (%s): %v\n%s", src, err, doc)
		}
		if len(m) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: m}
		if u.GetKind() == "" || u.GetAPIVersion() == "" || u.GetName() == "" {
			t.Fatalf("a rendered document (%s) has no apiVersion, kind or name:\n%s", src, doc)
		}
		objs = append(objs, object{u: u, source: src})
	}
	if len(objs) == 0 {
		t.Fatal("nothing was rendered")
	}
	return objs
}

// dryRunApply server-side applies every object with dryRun=All and fails the test, naming the
// object, for every object the API server refuses or answers with a warning.
func dryRunApply(ctx context.Context, t *testing.T, c client.Client, warnings *warningRecorder, objs []object) {
	t.Helper()
	for _, o := range objs {
		namespaced, err := c.IsObjectNamespaced(o.u)
		if err != nil {
			t.Errorf("%s: the API server does not serve this kind: %v", o, err)
			continue
		}
		switch {
		case namespaced && o.u.GetNamespace() == "":
			// helm install and kubectl apply put it in the target namespace.
			o.u.SetNamespace(namespace)
		case !namespaced && o.u.GetNamespace() != "":
			t.Errorf("%s: cluster-scoped, but rendered with a namespace", o)
			continue
		}
		warnings.reset()
		err = c.Apply(ctx, client.ApplyConfigurationFromUnstructured(o.u),
			client.DryRunAll, client.FieldOwner(fieldOwner), client.ForceOwnership)
		if err != nil {
			t.Errorf("%s: refused: %v", o, err)
			continue
		}
		if w := warnings.take(); len(w) > 0 {
			t.Errorf("%s: accepted with warnings:\n  %s", o, strings.Join(w, "\n  "))
		}
	}
}

// requireObjects fails unless the render has crds CustomResourceDefinitions and every kind/name.
func requireObjects(t *testing.T, objs []object, crds int, kindNames ...string) {
	t.Helper()
	have := map[string]bool{}
	n := 0
	for _, o := range objs {
		have[o.u.GetKind()+"/"+o.u.GetName()] = true
		if o.u.GetKind() == "CustomResourceDefinition" {
			n++
		}
	}
	var missing []string
	for _, kn := range kindNames {
		if !have[kn] {
			missing = append(missing, kn)
		}
	}
	if len(missing) > 0 {
		rendered := make([]string, 0, len(have))
		for kn := range have {
			rendered = append(rendered, kn)
		}
		sort.Strings(rendered)
		t.Errorf("missing from the render: %s\nrendered: %s", strings.Join(missing, ", "), strings.Join(rendered, ", "))
	}
	if n != crds {
		t.Errorf("the render has %d CustomResourceDefinitions, config/crd/bases has %d", n, crds)
	}
}

func crdCount(t *testing.T) int {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(moduleRoot(t), "config", "crd", "bases", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs in config/crd/bases: %v", err)
	}
	return len(files)
}

// warningRecorder collects the API server's warnings (Warning headers) of the current request.
type warningRecorder struct {
	mu sync.Mutex
	w  []string
}

func (r *warningRecorder) HandleWarningHeaderWithContext(_ context.Context, _ int, _ string, text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.w = append(r.w, text)
}

func (r *warningRecorder) reset() { _ = r.take() }

func (r *warningRecorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	w := r.w
	r.w = nil
	return w
}

// valueSet is a way to install the chart: its default values, or a ci/*-values.yaml file.
type valueSet struct {
	name string
	args []string
}

func valueSets(t *testing.T) []valueSet {
	t.Helper()
	sets := []valueSet{{name: "default"}}
	files, err := filepath.Glob(filepath.Join(chartDir(t), "ci", "*-values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	for _, f := range files {
		sets = append(sets, valueSet{name: strings.TrimSuffix(filepath.Base(f), ".yaml"), args: []string{"-f", f}})
	}
	if len(sets) < 2 || !hasSet(sets, "all-options-values") {
		t.Fatal("charts/paygate/ci/all-options-values.yaml is missing")
	}
	return sets
}

func hasSet(sets []valueSet, name string) bool {
	for _, s := range sets {
		if s.name == name {
			return true
		}
	}
	return false
}

// helmBinary is $HELM, else helm in bin/ (KUBEBUILDER_ASSETS). Missing: the test fails in CI and
// is skipped elsewhere.
func helmBinary(t *testing.T) string {
	t.Helper()
	helm := os.Getenv("HELM")
	if helm == "" {
		dir, err := testenv.AssetsDir()
		if err != nil {
			t.Fatal(err)
		}
		helm = filepath.Join(dir, "helm")
	}
	if _, err := os.Stat(helm); err != nil {
		msg := fmt.Sprintf("helm is missing (%v): `make helm` installs the pinned version into bin/", err)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return helm
}

func chartDir(t *testing.T) string {
	t.Helper()
	return filepath.Join(moduleRoot(t), "charts", "paygate")
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	root, err := testenv.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// run runs helm and returns its combined output.
func run(helm string, args ...string) (string, error) {
	stdout, stderr, err := runSplit(helm, args...)
	return stdout + stderr, err
}

// runSplit runs helm with a private home, so that the user's repositories, plugins and
// kubeconfig play no part, and returns its standard output and error apart.
func runSplit(name string, args ...string) (string, string, error) {
	cmd := exec.Command(name, args...)
	home, err := os.MkdirTemp("", "paygate-helm-home-")
	if err != nil {
		return "", "", err
	}
	defer os.RemoveAll(home)
	cmd.Env = append(os.Environ(),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"),
		"KUBECONFIG="+filepath.Join(home, "kubeconfig"),
	)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	return stdout.String(), stderr.String(), err
}

// TestCIValuesSetEveryValue: every value of values.yaml is set by at least one
// ci/*-values.yaml, so that a new value is rendered, linted and dry-run by TestInstallDryRun.
func TestCIValuesSetEveryValue(t *testing.T) {
	defaults := readValues(t, filepath.Join(chartDir(t), "values.yaml"))
	set := map[string]bool{}
	for _, vs := range valueSets(t) {
		if len(vs.args) == 2 {
			paths(readValues(t, vs.args[1]), "", func(p string, _ bool) { set[p] = true })
		}
	}
	var unset []string
	paths(defaults, "", func(p string, leaf bool) {
		if leaf && !set[p] {
			unset = append(unset, p)
		}
	})
	if len(unset) > 0 {
		t.Errorf("no charts/paygate/ci/*-values.yaml sets %s: add them to ci/all-options-values.yaml", strings.Join(unset, ", "))
	}
}

func readValues(t *testing.T, file string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := yaml.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return v
}

// paths calls fn with the dotted path of every key of v, and whether its value is a leaf (not a
// non-empty map).
func paths(v map[string]any, prefix string, fn func(path string, leaf bool)) {
	for k, val := range v {
		p := prefix + k
		m, ok := val.(map[string]any)
		fn(p, !ok || len(m) == 0)
		if ok {
			paths(m, p+".", fn)
		}
	}
}
