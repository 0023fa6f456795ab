// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package alerts tests Paygate's alerts and dashboard (docs/operations.md):
//
//   - the chart's PrometheusRule (charts/paygate/rules/paygate.rules.yaml, rendered by helm with
//     the default values in the namespace paygate-system) passes `promtool check rules`, and
//     `promtool test rules` runs paygate_test.yaml (each alert fires on trouble and stays quiet
//     on healthy series) and annotations_test.yaml (a few alerts' rendered annotations);
//   - every alert has a firing and a quiet case in paygate_test.yaml;
//   - every query of the rules and of the Grafana dashboard (charts/paygate/dashboards/
//     paygate.json) names only metrics Paygate, controller-runtime or client-go export
//     (knownMetrics), and every paygate_* one is defined in the Go sources.
//
// helm and promtool come from bin/ (`make helm promtool`) or $HELM and $PROMTOOL. Without them the
// tests that need them are skipped, except in CI (CI=true), where they fail.
package alerts_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

const namespace = "paygate-system"

// ruleFile is the rendered rules in Prometheus's format.
type ruleFile struct {
	Groups []ruleGroup `json:"groups"`
}

type ruleGroup struct {
	Name  string `json:"name"`
	Rules []rule `json:"rules"`
}

type rule struct {
	Alert       string            `json:"alert,omitempty"`
	Record      string            `json:"record,omitempty"`
	Expr        string            `json:"expr"`
	For         string            `json:"for,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// TestAlertRules runs promtool on the chart's rules: `check rules`, then `test rules` with
// paygate_test.yaml and annotations_test.yaml.
func TestAlertRules(t *testing.T) {
	promtool := tool(t, "PROMTOOL", "promtool", "make promtool builds it into bin/ (hack/build-promtool.sh)")
	rules := renderRules(t)

	dir := t.TempDir()
	full := filepath.Join(dir, "paygate.rules.yaml")
	writeYAML(t, full, rules)
	// The same rules without annotations, for the cases that check labels and timing only
	// (promtool compares annotations exactly when a case lists an alert).
	bare := rules
	bare.Groups = nil
	for _, g := range rules.Groups {
		ng := ruleGroup{Name: g.Name}
		for _, r := range g.Rules {
			r.Annotations = nil
			ng.Rules = append(ng.Rules, r)
		}
		bare.Groups = append(bare.Groups, ng)
	}
	writeYAML(t, filepath.Join(dir, "paygate.rules.noannotations.yaml"), bare)

	tests := []string{"paygate_test.yaml", "annotations_test.yaml"}
	for _, f := range tests {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}

	if out, err := runIn(dir, promtool, "check", "rules", "paygate.rules.yaml"); err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
	if out, err := runIn(dir, promtool, append([]string{"test", "rules"}, tests...)...); err != nil {
		t.Fatalf("promtool test rules: %v\n%s", err, out)
	} else {
		t.Logf("promtool test rules:\n%s", out)
	}
}

// TestAlertCoverage: every alert of the chart has, in paygate_test.yaml, a case where it fires
// and one where it stays quiet, and the test file names no alert the chart lacks.
func TestAlertCoverage(t *testing.T) {
	rules := renderRules(t)
	b, err := os.ReadFile("paygate_test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var tf struct {
		Tests []struct {
			Name          string `json:"name"`
			AlertRuleTest []struct {
				Alertname string `json:"alertname"`
				ExpAlerts []any  `json:"exp_alerts"`
			} `json:"alert_rule_test"`
		} `json:"tests"`
	}
	if err := yaml.UnmarshalStrict(b, &tf); err != nil {
		// The file has fields this struct leaves out: decode loosely, but the shape must hold.
		if err := yaml.Unmarshal(b, &tf); err != nil {
			t.Fatalf("paygate_test.yaml: %v", err)
		}
	}
	fires, quiet := map[string]bool{}, map[string]bool{}
	for _, tc := range tf.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			} else {
				quiet[a.Alertname] = true
			}
		}
	}
	alerts := map[string]bool{}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			alerts[r.Alert] = true
			if !fires[r.Alert] {
				t.Errorf("paygate_test.yaml has no case where %s fires", r.Alert)
			}
			if !quiet[r.Alert] {
				t.Errorf("paygate_test.yaml has no case where %s stays quiet", r.Alert)
			}
		}
	}
	for name := range fires {
		if !alerts[name] {
			t.Errorf("paygate_test.yaml tests %s, which the chart's rules do not have", name)
		}
	}
	for _, want := range []string{
		"PaygateReconcileErrors", "PaygatePaymentsStuckPending", "PaygateWebhooksAbandoned",
		"PaygatePayoutsAmbiguous", "PaygateRefundsAmbiguous", "PaygateRefundsFailing", "PaygateInvoiceChargesFailing", "PaygateArchiveLagging", "PaygateArchiveErrors", "PaygateLedgerDrift",
		"PaygateLateSettlement", "PaygateLeaderAbsent", "PaygateAPIErrors", "PaygateAPILatency",
	} {
		if !alerts[want] {
			t.Errorf("the chart's rules have no %s", want)
		}
	}
}

// TestAlertRunbooks: every alert's runbook_url points at a section of docs/operations.md.
func TestAlertRunbooks(t *testing.T) {
	rules := renderRules(t)
	doc, err := os.ReadFile(filepath.Join(moduleRoot(t), "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]bool{}
	for _, line := range strings.Split(string(doc), "\n") {
		if strings.HasPrefix(line, "#") {
			anchors[githubAnchor(strings.TrimLeft(line, "# "))] = true
		}
	}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			url := r.Annotations["runbook_url"]
			base, anchor, ok := strings.Cut(url, "#")
			if !ok || !strings.HasSuffix(base, "docs/operations.md") || !anchors[anchor] {
				t.Errorf("%s: runbook_url %q is not a section of docs/operations.md", r.Alert, url)
			}
		}
	}
}

// githubAnchor is the anchor GitHub gives a Markdown heading.
func githubAnchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}

// renderRules renders the chart's PrometheusRule (default values, release namespace
// paygate-system) and returns its spec as a Prometheus rule file.
func renderRules(t *testing.T) ruleFile {
	t.Helper()
	helm := tool(t, "HELM", "helm", "make helm installs it into bin/")
	out, err := run(helm, "template", "paygate", filepath.Join(moduleRoot(t), "charts", "paygate"),
		"--namespace", namespace, "--set", "prometheusRule.enabled=true",
		"--show-only", "templates/prometheusrule.yaml")
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, out)
	}
	var pr struct {
		Kind string   `json:"kind"`
		Spec ruleFile `json:"spec"`
	}
	if err := yaml.Unmarshal([]byte(out), &pr); err != nil {
		t.Fatalf("decoding the PrometheusRule: %v\n%s", err, out)
	}
	if pr.Kind != "PrometheusRule" || len(pr.Spec.Groups) == 0 {
		t.Fatalf("the render is not a PrometheusRule with groups:\n%s", out)
	}
	return pr.Spec
}

func writeYAML(t *testing.T, file string, v any) {
	t.Helper()
	b, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// tool is $env, else bin/<name> at the module root. Missing: the test fails in CI and is
// skipped elsewhere, with how to get it.
func tool(t *testing.T, env, name, how string) string {
	t.Helper()
	path := os.Getenv(env)
	if path == "" {
		path = filepath.Join(moduleRoot(t), "bin", name)
	}
	if _, err := os.Stat(path); err != nil {
		msg := fmt.Sprintf("%s is missing (%v): %s", name, err, how)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return path
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal(errors.New("no go.mod above the working directory"))
		}
		dir = parent
	}
}

// run runs a tool with a private helm home and returns its combined output.
func run(name string, args ...string) (string, error) { return runIn("", name, args...) }

func runIn(dir, name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	home, err := os.MkdirTemp("", "paygate-alerts-home-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(home)
	cmd.Env = append(os.Environ(),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"),
		"KUBECONFIG="+filepath.Join(home, "kubeconfig"),
	)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	return out.String(), err
}
