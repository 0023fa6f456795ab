// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestProductionBuildHasNoControlPlane checks that the binary the Dockerfile builds (no build
// tags) links neither envtest nor the local control plane: only `-tags dev` builds add them.
func TestProductionBuildHasNoControlPlane(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	for _, tc := range []struct {
		tags string
		want bool
	}{{"", false}, {"dev", true}} {
		args := []string{"list", "-deps"}
		if tc.tags != "" {
			args = append(args, "-tags", tc.tags)
		}
		out, err := exec.Command("go", append(args, ".")...).CombinedOutput()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		deps := string(out)
		for _, pkg := range []string{"sigs.k8s.io/controller-runtime/pkg/envtest", "github.com/paygate/paygate/internal/controlplane"} {
			if got := strings.Contains(deps, pkg+"\n"); got != tc.want {
				t.Errorf("tags %q: links %s = %v, want %v", tc.tags, pkg, got, tc.want)
			}
		}
	}
}
