// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build !dev

package main

import (
	"fmt"
	"os"
)

// runDev is absent from production builds: the local control plane links envtest and starts etcd
// and kube-apiserver, which a cluster image never needs. `make run` and `make build-dev` build the
// binary with `-tags dev`.
func runDev(args []string) int {
	fmt.Fprintln(os.Stderr, "paygate dev: this binary was built without the local control plane; build it with `go build -tags dev ./cmd/paygate` (make build-dev)")
	return 2
}
