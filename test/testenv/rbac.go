// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ChartNamespace is where ChartIdentities installs the chart's service accounts.
const ChartNamespace = "paygate-system"

// Identities are the chart's service accounts, installed with their roles in a test API server:
// configs that act as them (impersonation), so a test runs the manager and the apiserver with
// exactly the permissions the chart grants.
type Identities struct {
	// Manager and APIServer act as the chart's service accounts.
	Manager, APIServer *rest.Config
	// ManagerUser and APIServerUser are their user names (system:serviceaccount:<ns>:<name>).
	ManagerUser, APIServerUser string
}

// ChartIdentities renders the Helm chart with its default values (bin/helm, or $HELM), applies its
// ServiceAccounts, ClusterRoles, ClusterRoleBindings, Roles and RoleBindings to the API server c
// reaches, and returns configs impersonating the manager's and the apiserver's service accounts.
func ChartIdentities(ctx context.Context, admin *rest.Config, c client.Client) (*Identities, error) {
	root, err := ModuleRoot()
	if err != nil {
		return nil, err
	}
	helm := os.Getenv("HELM")
	if helm == "" {
		assets, err := AssetsDir()
		if err != nil {
			return nil, err
		}
		helm = filepath.Join(assets, "helm")
	}
	cmd := exec.Command(helm, "template", "paygate", filepath.Join(root, "charts", "paygate"), "--namespace", ChartNamespace)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("helm template (make helm installs it into bin/): %w\n%s", err, stderr.String())
	}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ChartNamespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	ids := &Identities{}
	dec := utilyaml.NewYAMLOrJSONDecoder(&out, 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, err
		}
		switch u.GetKind() {
		case "ServiceAccount":
			user := "system:serviceaccount:" + ChartNamespace + ":" + u.GetName()
			if strings.HasSuffix(u.GetName(), "apiserver") {
				ids.APIServerUser = user
			} else {
				ids.ManagerUser = user
			}
		case "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
		default:
			continue
		}
		if u.GetNamespace() == "" && (u.GetKind() == "ServiceAccount" || u.GetKind() == "Role" || u.GetKind() == "RoleBinding") {
			u.SetNamespace(ChartNamespace)
		}
		if err := c.Create(ctx, u); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("applying %s %s: %w", u.GetKind(), u.GetName(), err)
		}
	}
	if ids.ManagerUser == "" || ids.APIServerUser == "" {
		return nil, fmt.Errorf("the chart rendered no manager or no apiserver service account")
	}
	as := func(user string) *rest.Config {
		cfg := rest.CopyConfig(admin)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: user,
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ChartNamespace, "system:authenticated"}}
		return cfg
	}
	ids.Manager, ids.APIServer = as(ids.ManagerUser), as(ids.APIServerUser)
	return ids, nil
}
