// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/paygate/paygate/test/testenv"
)

// TestManagerMetricsAndShutdown runs the manager (one per process: controller names are unique)
// with its default --metrics-secure and leader election against a real API server: /metrics
// answers over HTTPS only to a caller whose token the API server authenticates and who may get
// /metrics (the chart's paygate-metrics-reader role); and on SIGTERM (its context ends) the leader
// gives its Lease up, so a standby takes over at its next retry instead of after the lease
// duration.
func TestManagerMetricsAndShutdown(t *testing.T) {
	if testing.Short() {
		t.Skip("needs etcd and kube-apiserver")
	}
	env, err := testenv.Start()
	if err != nil {
		t.Fatalf("starting the control plane (make controlplane): %v", err)
	}
	defer env.Stop()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()

	opts := managerOptions{metricsAddr: addr, metricsSecure: true, probeAddr: "0", leaderElect: true, leaderNS: "default",
		leaseDuration: 15 * time.Second, renewDeadline: 10 * time.Second, retryPeriod: 2 * time.Second, shutdownTimeout: 10 * time.Second,
		webhookSchedule: "0s", archiveInterval: time.Minute, archiveBatchSize: 100, ledgerRecount: time.Minute}
	mgr, err := newManager(env.Config, opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	stopped := false
	defer func() {
		if !stopped {
			cancel()
			<-done
		}
	}()

	cs := kubernetes.NewForConfigOrDie(env.Config)
	for _, name := range []string{"prometheus", "stranger"} {
		if _, err := cs.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "paygate-metrics-reader"},
		Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "prometheus-reads-paygate"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "paygate-metrics-reader"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "prometheus", Namespace: "default"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	token := func(sa string) string {
		tr, err := cs.CoreV1().ServiceAccounts("default").CreateToken(ctx, sa, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return tr.Status.Token
	}
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	get := func(bearer string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, "https://"+addr+"/metrics", nil)
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := c.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	var code int
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if code, _ = get(""); code != 0 {
			break
		}
	}
	if code != http.StatusUnauthorized {
		t.Fatalf("no token: HTTP %d, want 401", code)
	}
	if code, _ := get(token("stranger")); code != http.StatusForbidden {
		t.Fatalf("a service account without the metrics reader role: HTTP %d, want 403", code)
	}
	code, body := get(token("prometheus"))
	if code != http.StatusOK || !strings.Contains(body, "paygate_payouts_ambiguous") || !strings.Contains(body, "paygate_subscriptions{") {
		t.Fatalf("the metrics reader: HTTP %d, want 200 with the controllers' metrics:\n%.300s", code, body)
	}
	if resp, err := http.Get(fmt.Sprintf("http://%s/metrics", addr)); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Fatal("plain HTTP served the metrics")
		}
	}

	holder := func() string {
		l, err := cs.CoordinationV1().Leases("default").Get(context.Background(), "paygate-manager.paygate.dev", metav1.GetOptions{})
		if err != nil || l.Spec.HolderIdentity == nil {
			return ""
		}
		return *l.Spec.HolderIdentity
	}
	for deadline := time.Now().Add(time.Minute); holder() == ""; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the manager never became leader")
		}
	}
	cancel()
	stopped = true
	if err := <-done; err != nil {
		t.Fatalf("the manager stopped with %v", err)
	}
	if h := holder(); h != "" {
		t.Fatalf("the Lease is still held by %q after shutdown: a standby would wait the lease duration", h)
	}
}
