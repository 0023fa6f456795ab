// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package testenv starts what Paygate's integration tests run against: a real etcd and
// kube-apiserver (built into bin/ by hack/build-controlplane.sh) with the CRDs installed, when
// asked kube-controller-manager's garbage collector and namespace controller, and the real
// manager with every reconciler. Tests assert through an uncached client.
package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/paygate/paygate/controllers"
	"github.com/paygate/paygate/internal/controlplane"
	"github.com/paygate/paygate/internal/index"
	"github.com/paygate/paygate/internal/kube"
)

// Env is a running control plane and, once StartManager is called, a manager.
type Env struct {
	ControlPlane *controlplane.ControlPlane
	// Client reads live from the API server (no cache): what a test sees is what is stored.
	Client client.Client
	Config *rest.Config
	// ManagerConfig, when set, is what StartManager's managers act as (ChartIdentities' Manager:
	// the chart's service account); nil runs them as the cluster administrator Config is.
	ManagerConfig *rest.Config

	mu          sync.Mutex
	stopManager context.CancelFunc
	managerDone chan error
}

// AssetsDir finds the directory with etcd, kube-apiserver and kube-controller-manager: $KUBEBUILDER_ASSETS, else bin/ at
// the module root.
func AssetsDir() (string, error) {
	if d := os.Getenv("KUBEBUILDER_ASSETS"); d != "" {
		return d, nil
	}
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "bin"), nil
}

// ModuleRoot is the directory of go.mod above the working directory (a test's package
// directory): where bin/, charts/ and config/ are.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// Option adjusts the control plane Start starts.
type Option func(*controlplane.Options)

// WithGarbageCollector also runs kube-controller-manager with only the garbage collector and the
// namespace controller (bin/kube-controller-manager): deleting an owner deletes its dependents and
// a deleted namespace is emptied and goes away, as in a real cluster. Start returns once both
// work. Without it nothing follows an ownerReference and deleted namespaces stay Terminating.
func WithGarbageCollector() Option {
	return func(o *controlplane.Options) { o.ControllerManager = true }
}

// Start starts the control plane: etcd and kube-apiserver, and what opts add.
func Start(opts ...Option) (*Env, error) {
	assets, err := AssetsDir()
	if err != nil {
		return nil, err
	}
	o := controlplane.Options{AssetsDir: assets, Scheme: kube.Scheme()}
	for _, opt := range opts {
		opt(&o)
	}
	cp, err := controlplane.Start(o)
	if err != nil {
		return nil, err
	}
	c, err := client.New(cp.Config, client.Options{Scheme: kube.Scheme()})
	if err != nil {
		return nil, errors.Join(err, cp.Stop())
	}
	return &Env{ControlPlane: cp, Client: c, Config: cp.Config}, nil
}

// StartManager starts the real manager (indexes and every reconciler) in the background.
func (e *Env) StartManager(opts controllers.Options) (ctrl.Manager, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopManager != nil {
		return nil, errors.New("a manager is already running")
	}
	cfg := e.Config
	if e.ManagerConfig != nil {
		cfg = e.ManagerConfig
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:  kube.Scheme(),
		Metrics: metricsserver.Options{BindAddress: "0"},
		Cache:   kube.CacheOptions(),
		// Several managers run one after the other in one process (restart tests).
		Controller: ctrlConfigSkipNameValidation(),
	})
	if err != nil {
		return nil, fmt.Errorf("creating the manager: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := index.Setup(ctx, mgr.GetFieldIndexer()); err != nil {
		cancel()
		return nil, fmt.Errorf("setting up field indexes: %w", err)
	}
	if err := controllers.SetupReconcilers(mgr, opts); err != nil {
		cancel()
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	e.stopManager, e.managerDone = cancel, done
	return mgr, nil
}

// StopManager stops the running manager and waits for it, as a crash or a rollout would.
func (e *Env) StopManager() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopManager == nil {
		return nil
	}
	e.stopManager()
	err := <-e.managerDone
	e.stopManager, e.managerDone = nil, nil
	return err
}

// Stop stops the manager and the control plane.
func (e *Env) Stop() error {
	return errors.Join(e.StopManager(), e.ControlPlane.Stop())
}

func ctrlConfigSkipNameValidation() config.Controller {
	skip := true
	return config.Controller{SkipNameValidation: &skip}
}
