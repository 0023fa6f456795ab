// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controlplane

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/paygate/paygate/internal/kube"
)

// assetsDir is bin/ at the module root; the test is skipped unless it holds bins.
func assetsDir(t *testing.T, bins ...string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("needs the control plane's binaries")
	}
	root, err := filepath.Abs(filepath.Join("..", "..", "bin"))
	if err != nil {
		t.Fatal(err)
	}
	for _, bin := range bins {
		if _, err := os.Stat(filepath.Join(root, bin)); err != nil {
			t.Skipf("no %s in %s (make controlplane builds it)", bin, root)
		}
	}
	return root
}

// eventuallyGone polls until obj is not found, for at most a minute.
func eventuallyGone(t *testing.T, c client.Client, obj client.Object, what string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		err := c.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)
		if apierrors.IsNotFound(err) {
			return
		}
		if err != nil {
			t.Fatalf("reading %s: %v", what, err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s is still there a minute later: %+v", what, obj)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestControllerManagerCascades: with kube-controller-manager, deleting an owner deletes its
// dependents (the garbage collector follows the ownerReference) and a deleted namespace goes
// away (the namespace controller empties it and removes its finalizer); Stop leaves no process.
func TestControllerManagerCascades(t *testing.T) {
	root := assetsDir(t, "etcd", "kube-apiserver", ControllerManagerBinary)
	logPath := filepath.Join(t.TempDir(), "kcm.log")
	cp, err := Start(Options{AssetsDir: root, Scheme: kube.Scheme(), ControllerManager: true, ControllerManagerLog: logPath})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = cp.Stop()
		}
	}()
	pid := cp.kcm.cmd.Process.Pid
	c, err := client.New(cp.Config, client.Options{Scheme: kube.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "cascade"}}
	if err := c.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "owner"}}
	if err := c.Create(ctx, owner); err != nil {
		t.Fatal(err)
	}
	dependent := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "dependent",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}}}}
	bystander := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "bystander"}}
	for _, o := range []client.Object{dependent, bystander} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Delete(ctx, owner); err != nil {
		t.Fatal(err)
	}
	eventuallyGone(t, c, dependent, "the dependent of a deleted owner")
	if err := c.Get(ctx, client.ObjectKeyFromObject(bystander), bystander); err != nil {
		t.Fatalf("a ConfigMap nobody owns went with the owner: %v", err)
	}

	// The namespace still holds the bystander: the namespace controller deletes it first.
	if err := c.Delete(ctx, ns); err != nil {
		t.Fatal(err)
	}
	eventuallyGone(t, c, ns, "the deleted namespace")
	if err := c.Get(ctx, client.ObjectKeyFromObject(bystander), bystander); !apierrors.IsNotFound(err) {
		t.Fatalf("the ConfigMap of a removed namespace: %v, want not found", err)
	}

	if err := cp.Stop(); err != nil {
		t.Fatal(err)
	}
	stopped = true
	if p, err := os.FindProcess(pid); err == nil && p.Signal(syscall.Signal(0)) == nil {
		t.Fatalf("kube-controller-manager (pid %d) outlived Stop", pid)
	}
	log, err := os.ReadFile(logPath)
	if err != nil || len(log) == 0 {
		t.Fatalf("kube-controller-manager logged nothing to the file asked for (%v)", err)
	}
}

// TestControllerManagerMissing: asked for kube-controller-manager when the assets directory has
// none, Start says which binary is missing and how to build it, before starting anything.
func TestControllerManagerMissing(t *testing.T) {
	dir := t.TempDir()
	for _, bin := range []string{"etcd", "kube-apiserver"} {
		if err := os.WriteFile(filepath.Join(dir, bin), []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	_, err := Start(Options{AssetsDir: dir, Scheme: kube.Scheme(), ControllerManager: true})
	if err == nil || !strings.Contains(err.Error(), "kube-controller-manager is missing") || !strings.Contains(err.Error(), "make controlplane") {
		t.Fatalf("Start without kube-controller-manager: %v, want it named as missing", err)
	}
}
