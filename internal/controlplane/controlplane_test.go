// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controlplane

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/paygate/paygate/internal/kube"
)

// TestEtcdDataDirKeepsState: a control plane started on a kept etcd data directory finds what an
// earlier one stored there (`make run` across restarts), and Stop leaves the directory.
func TestEtcdDataDirKeepsState(t *testing.T) {
	if testing.Short() {
		t.Skip("needs etcd and kube-apiserver")
	}
	root, err := filepath.Abs(filepath.Join("..", "..", "bin"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "etcd")); err != nil {
		t.Skipf("no control plane binaries in %s (make controlplane)", root)
	}
	dir := filepath.Join(t.TempDir(), "etcd")
	start := func() (*ControlPlane, client.Client) {
		t.Helper()
		cp, err := Start(Options{AssetsDir: root, Scheme: kube.Scheme(), EtcdDataDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		c, err := client.New(cp.Config, client.Options{Scheme: kube.Scheme()})
		if err != nil {
			t.Fatal(err)
		}
		return cp, c
	}
	cp, c := start()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kept"}}
	if err := c.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	if err := cp.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("Stop removed the kept directory: %v", err)
	}
	cp, c = start()
	defer cp.Stop()
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(ns), ns); err != nil {
		t.Fatalf("the namespace stored before the restart: %v", err)
	}
}
