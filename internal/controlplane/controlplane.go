// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package controlplane runs a local Kubernetes control plane (etcd, kube-apiserver and, when
// asked, kube-controller-manager, built into bin/ by hack/build-controlplane.sh) with Paygate's
// CRDs installed. `paygate dev` and the integration tests use it.
package controlplane

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/paygate/paygate/config"
)

// Options configure a local control plane.
type Options struct {
	// AssetsDir holds the etcd and kube-apiserver binaries.
	AssetsDir string
	// Scheme knows Paygate's types.
	Scheme *runtime.Scheme
	// EtcdDataDir, when set, keeps etcd's data there across starts (`paygate dev`); empty uses a
	// temporary directory removed by Stop.
	EtcdDataDir string
	// ControllerManager also runs kube-controller-manager (from AssetsDir) with only the garbage
	// collector and the namespace controller, so that deleting an owner deletes its dependents
	// and a deleted namespace is emptied and removed, as in a real cluster.
	ControllerManager bool
	// ControllerManagerLog, when set, is the file kube-controller-manager logs to (truncated at
	// Start). Empty keeps its log in a temporary file that Stop removes; the end of it is quoted
	// when it fails to start.
	ControllerManagerLog string
}

// ControlPlane is a running local control plane.
type ControlPlane struct {
	env *envtest.Environment
	kcm *controllerManager
	// Config reaches the API server as a cluster administrator.
	Config *rest.Config
}

// Start starts etcd and kube-apiserver, installs the CRDs and, with Options.ControllerManager,
// starts kube-controller-manager and waits until it has cascaded a deletion. Call Stop to end
// every process.
func Start(opts Options) (*ControlPlane, error) {
	bins := []string{"etcd", "kube-apiserver"}
	if opts.ControllerManager {
		bins = append(bins, ControllerManagerBinary)
	}
	for _, bin := range bins {
		if _, err := os.Stat(filepath.Join(opts.AssetsDir, bin)); err != nil {
			return nil, fmt.Errorf("%s is missing from %s: run hack/build-controlplane.sh (make controlplane): %w", bin, opts.AssetsDir, err)
		}
	}
	crds, err := CRDs()
	if err != nil {
		return nil, err
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: opts.AssetsDir,
		CRDs:                  crds,
		ErrorIfCRDPathMissing: true,
		Scheme:                opts.Scheme,
	}
	if opts.EtcdDataDir != "" {
		if err := os.MkdirAll(opts.EtcdDataDir, 0o700); err != nil {
			return nil, fmt.Errorf("creating etcd's data directory: %w", err)
		}
		env.ControlPlane.Etcd = &envtest.Etcd{DataDir: opts.EtcdDataDir}
	}
	cfg, err := env.Start()
	if err != nil {
		// Start may fail after the processes are up (a CRD the API server refuses): end them.
		return nil, errors.Join(fmt.Errorf("starting etcd and kube-apiserver: %w", err), env.Stop())
	}
	cp := &ControlPlane{env: env, Config: cfg}
	if opts.ControllerManager {
		// Stopped by startControllerManager itself when it fails.
		cp.kcm, err = startControllerManager(context.Background(), filepath.Join(opts.AssetsDir, ControllerManagerBinary), env, cfg, opts.ControllerManagerLog)
		if err != nil {
			return nil, errors.Join(err, cp.Stop())
		}
	}
	return cp, nil
}

// Stop ends kube-controller-manager (when running), kube-apiserver and etcd and removes their
// temporary data.
func (c *ControlPlane) Stop() error {
	var errs []error
	if c.kcm != nil {
		if err := c.kcm.stop(); err != nil {
			errs = append(errs, fmt.Errorf("stopping kube-controller-manager: %w", err))
		}
		c.kcm = nil
	}
	if err := c.env.Stop(); err != nil {
		errs = append(errs, fmt.Errorf("stopping the control plane: %w", err))
	}
	return errors.Join(errs...)
}

// WriteKubeconfig writes a kubeconfig file for a cluster administrator to path (mode 0600).
func (c *ControlPlane) WriteKubeconfig(path string) error {
	user, err := c.env.AddUser(envtest.User{Name: "paygate-developer", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return fmt.Errorf("adding a kubeconfig user: %w", err)
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		return fmt.Errorf("rendering the kubeconfig: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", filepath.Dir(path), err)
	}
	if err := os.WriteFile(path, kubeconfig, 0o600); err != nil {
		return fmt.Errorf("writing the kubeconfig: %w", err)
	}
	return nil
}

// CRDs decodes the embedded CRD manifests.
func CRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	docs, err := config.CRDs()
	if err != nil {
		return nil, err
	}
	out := make([]*apiextensionsv1.CustomResourceDefinition, 0, len(docs))
	for _, d := range docs {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(d, crd); err != nil {
			return nil, fmt.Errorf("decoding a CRD: %w", err)
		}
		out = append(out, crd)
	}
	return out, nil
}

// Apply server-side applies every object of the YAML documents, as field manager fieldOwner.
func Apply(ctx context.Context, c client.Client, fieldOwner string, manifests ...[]byte) error {
	for _, m := range manifests {
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(m), 4096)
		for {
			u := &unstructured.Unstructured{}
			if err := dec.Decode(&u.Object); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				return fmt.Errorf("decoding a manifest: %w", err)
			}
			if len(u.Object) == 0 {
				continue
			}
			if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
				return fmt.Errorf("applying %s %s: %w", u.GetKind(), u.GetName(), err)
			}
		}
	}
	return nil
}
